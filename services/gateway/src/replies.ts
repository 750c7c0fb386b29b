import type { Request, Response } from 'express';

import { DomainError, ifNoneMatchPasses } from '@svc/kit';

/**
 * Writes a JSON text as the answer, straight to node's response. Express's res.json/res.send
 * also work out the content type's charset, hash the body when ETags are on and check the
 * request's freshness on every call; the API needs none of that (see sendReply for 304s).
 */
export function writeJson(res: Response, status: number, json: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  if (res.req.method === 'HEAD') res.end();
  else res.end(json);
}

export function sendJson(res: Response, status: number, body: unknown): void {
  writeJson(res, status, JSON.stringify(body) ?? '');
}

/**
 * Sends an operation's answer with its headers (ETag, Location) and status. A GET or HEAD whose
 * If-None-Match names the answer's ETag gets 304 and no body (RFC 9110 §13.1.2, weak
 * comparison). This is not left to express's `req.fresh`, which answers in full whenever the
 * request says `Cache-Control: no-cache`, and fetch() says that on every conditional request.
 */
export function sendReply(req: Request, res: Response, status: number, headers: Record<string, string>, body: unknown): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  const etag = res.getHeader('etag');
  const condition = req.headers['if-none-match'];
  const conditional = (req.method === 'GET' || req.method === 'HEAD') && status >= 200 && status < 300;
  if (conditional && typeof etag === 'string' && condition !== undefined && !ifNoneMatchPasses(condition, etag)) {
    res.statusCode = 304;
    res.end();
  } else if (body === undefined) {
    res.statusCode = status;
    res.end();
  } else {
    sendJson(res, status, body);
  }
}

/** The contract's error body: {"error": {"code", "message", "requestId"}}. */
export function sendError(req: Request, res: Response, status: number, code: string, message: string, extra?: object): void {
  if (res.headersSent) return;
  sendJson(res, status, { error: { code, message, requestId: req.requestId, ...extra } });
}

export function sendDomainError(req: Request, res: Response, err: DomainError): void {
  const extra = err.details ? { details: err.details } : undefined;
  sendError(req, res, err.httpStatus, err.code, err.message, extra);
}

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}
