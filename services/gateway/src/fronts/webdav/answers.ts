/** How the WebDAV front answers: multistatus XML, RFC 4918 error bodies, and plain text. */
import type { Request, Response } from 'express';

import type { DomainError } from '@svc/kit';

import { finishUnreadBody } from '../../http/content.js';
import { sendError } from '../../replies.js';
import { hrefOf } from './paths.js';
import { escapeXml } from './xml.js';

export const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  424: 'Failed Dependency',
  423: 'Locked',
};

export function sendXml(res: Response, status: number, body: string): void {
  const xml = `<?xml version="1.0" encoding="utf-8"?>\n${body}`;
  res.status(status);
  res.setHeader('Content-Type', 'application/xml; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(xml));
  res.end(xml);
}

export function sendText(res: Response, status: number, message: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) return;
  for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  const body = `${message}\n`;
  res.status(status);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** An RFC 4918 error body with a precondition element (e.g. lock-token-submitted). */
export function sendDavError(res: Response, status: number, condition: string, hrefs: string[] = []): void {
  const inner = hrefs.length ? hrefs.map((h) => `<D:href>${escapeXml(h)}</D:href>`).join('') : '';
  sendXml(res, status, `<D:error xmlns:D="DAV:"><D:${condition}>${inner}</D:${condition}></D:error>`);
}

/** A DomainError as a WebDAV answer. */
export function sendDavDomainError(req: Request, res: Response, err: DomainError, prefix: string, segments: string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  finishUnreadBody(req, res);
  if (err.code === 'locked') return sendDavError(res, 423, 'lock-token-submitted', [hrefOf(prefix, segments, false)]);
  if (err.kind === 'unauthenticated') {
    return sendText(res, 401, err.message, { 'WWW-Authenticate': 'Basic realm="svc", charset="UTF-8"' });
  }
  // A request the front cannot take (a NUL in the path, a bad header) answers as the API does: the
  // contract's error body, {"error": {"code", "message", "requestId"}}.
  if (err.kind === 'invalid_argument') return sendError(req, res, 400, err.code, err.message);
  const status = err.kind === 'conflict' ? 409 : err.httpStatus;
  const extra: Record<string, string> = {};
  if (err.kind === 'rate_limited' && err.details?.retryAfterSeconds) extra['Retry-After'] = String(err.details.retryAfterSeconds);
  if (status === 412 && typeof err.details?.etag === 'string') extra.ETag = err.details.etag;
  sendText(res, status, err.message, extra);
}
