import type { Request, Response } from 'express';

import { DomainError } from '@svc/kit';

/** The contract's error body: {"error": {"code", "message", "requestId"}}. */
export function sendError(req: Request, res: Response, status: number, code: string, message: string, extra?: object): void {
  if (res.headersSent) return;
  res.status(status).json({ error: { code, message, requestId: req.requestId, ...extra } });
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
