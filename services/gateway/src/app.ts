import { randomBytes } from 'node:crypto';

import express, { type NextFunction, type Request, type Response } from 'express';

import type { Dispatcher } from '@svc/dispatch';
import { DomainError, type Logger } from '@svc/kit';

import type { Authenticator } from './auth.js';
import { mountApi } from './fronts/api/index.js';
import { sendDomainError, sendError } from './replies.js';

export interface GatewayDeps {
  log: Logger;
  /** The process's one dispatcher (createDispatcher), shared by every front. */
  dispatcher: Dispatcher;
  auth: Authenticator;
  bodyLimit: string;
  /** Express's `trust proxy`: whose X-Forwarded-For decides `req.ip` (SVC_TRUST_PROXY). */
  trustProxy?: boolean | number;
  /** Protocol fronts outside the route table (WebDAV at /dav; Git, SSE to come), each on its own path. */
  mount?: (app: express.Express) => void;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const V1_PREFIX_RE = /^\/v1(?:$|[/?])/i;
// Request ids: a random per-process prefix and a counter (unique across replicas, no entropy
// drawn per request).
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;
export const nextRequestId = () => `${REQUEST_ID_PREFIX}${(++requestCounter).toString(16).padStart(8, '0')}`;

/** Builds the express app from the dispatcher's route table. */
export function createApp(deps: GatewayDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.trustProxy ?? false);

  // Request id (echoed when the client sent a sane one) and the optional /v1 prefix.
  app.use((req, res, next) => {
    const given = req.headers['x-request-id'];
    req.requestId = typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : nextRequestId();
    res.setHeader('x-request-id', req.requestId);
    // Case-insensitive, as the routes themselves are (`/V1/ME` is `/me`).
    if (V1_PREFIX_RE.test(req.url)) {
      req.url = req.url.slice(3) || '/';
      if (req.url.startsWith('?')) req.url = '/' + req.url;
    }
    next();
  });
  deps.mount?.(app);

  mountApi(app, {
    dispatcher: deps.dispatcher,
    auth: deps.auth,
    bodyLimit: deps.bodyLimit,
  });

  app.use((req, res) => sendError(req, res, 404, 'not_found', `No route for ${req.method} ${req.originalUrl.split('?')[0]}.`));

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number };
    if (err instanceof DomainError) {
      if (err.httpStatus >= 500 && err.httpStatus !== 501) deps.log.warn({ err: err.cause ?? err, requestId: req.requestId }, 'upstream failure');
      return sendDomainError(req, res, err);
    }
    switch (e.type) {
      case 'entity.parse.failed':
        return sendError(req, res, 400, 'invalid_json', 'The request body is not valid JSON.');
      case 'entity.too.large':
        return sendError(
          req,
          res,
          413,
          'payload_too_large',
          `The request body is larger than ${(err as { limit?: number }).limit ?? deps.bodyLimit} bytes.`,
        );
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return sendError(req, res, 415, 'unsupported_media_type', 'Unsupported content encoding or charset.');
      case 'request.aborted':
        return sendError(req, res, 400, 'request_aborted', 'The request was aborted.');
    }
    if (e.status && e.status >= 400 && e.status < 500) {
      return sendError(req, res, e.status, 'bad_request', 'The request could not be read.');
    }
    deps.log.error({ err, requestId: req.requestId }, 'unhandled error');
    sendError(req, res, 500, 'internal_error', 'Internal error.');
  });
  return app;
}
