import type { Request, Response } from 'express';

import { DomainError } from '@svc/kit';

/**
 * Writes a JSON text as the answer, straight to node's response. Express's res.json/res.send
 * also work out the content type's charset, hash the body when ETags are on and check the
 * request's freshness on every call; an answer without an ETag needs none of that. Answers that
 * carry an ETag go through express, so that If-None-Match still gets its 304.
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
