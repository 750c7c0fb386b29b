import type { Request, Response } from 'express';

import type { DomainError, ErrorCode } from '@svc/kit';

/**
 * Writes a JSON text as the answer, straight to node's response. Express's res.json/res.send
 * also work out the content type's charset, hash the body when ETags are on and check the
 * request's freshness on every call; the API needs none of that (see sendReply on 304s).
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
 * Sends an operation's answer with its headers (ETag, Location) and status. A JSON answer is
 * always sent whole, never 304: its ETag is the version token for If-Match on the next write,
 * and it does not always validate the JSON (a drive file's ETag is its content's hash, which a
 * rename leaves as it was). Express's res.json would answer 304 to an If-None-Match naming it
 * (unless the request said `Cache-Control: no-cache`), handing a client stale metadata.
 */
export function sendReply(res: Response, status: number, headers: Record<string, string>, body: unknown): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body !== undefined) return sendJson(res, status, body);
  res.statusCode = status;
  res.end();
}

/** The contract's error body: {"error": {"code", "message", "requestId"}}. */
export function sendError(
  req: Request,
  res: Response,
  status: number,
  code: ErrorCode,
  message: string,
  extra?: object,
  requestId: string = req.requestId,
): void {
  if (res.headersSent) return;
  sendJson(res, status, { error: { code, message, requestId, ...extra } });
}

/**
 * A DomainError as the error body, with the headers its kind calls for: a 401 names the scheme
 * (`WWW-Authenticate`), and the wait before a retry travels in `Retry-After`, not in the body.
 */
export function sendDomainError(req: Request, res: Response, err: DomainError): void {
  const { retryAfterSeconds, ...details } = err.details ?? {};
  if (err.kind === 'unauthenticated' || err.code === 'insufficient_scope') {
    // With the authorization server on, the challenge names the resource's metadata (RFC 9728).
    const challenge = (req.app?.locals as { challenge?: ChallengeOf } | undefined)?.challenge;
    res.setHeader('WWW-Authenticate', challenge?.(req, err) ?? 'Bearer realm="svc"');
  }
  if (retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(retryAfterSeconds));
  const extra = Object.keys(details).length ? { details } : undefined;
  // A refusal replayed under an idempotency key names the request that first answered it.
  sendError(req, res, err.httpStatus, err.code, err.message, extra, err.requestId);
}

/** The WWW-Authenticate of a refusal (fronts/oauth sets it on the app's locals). */
export type ChallengeOf = (req: Request, err: DomainError) => string | undefined;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}
