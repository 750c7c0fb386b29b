/**
 * The HTTP JSON API: the route table over HTTP. This front reads a request the way its operation
 * declares (JSON, raw bytes, a multipart form), authenticates it, hands it to the dispatcher and
 * writes the answer; the rules themselves are the dispatcher's, rate limits and Idempotency-Key
 * included (its policies set the headers they decide on the response: Invocation.headers).
 */
import type { IncomingMessage } from 'node:http';

import express, { type Request, type Response } from 'express';

import type { Route } from '@svc/api';
import { type Answer, type Dispatcher, type Invocation, type RawInput, takesIdempotencyKey } from '@svc/dispatch';
import { DomainError, HOST_CREDENTIAL_RE, setHttpRoute } from '@svc/kit';

import type { Authenticator } from '../../auth.js';
import { actingAccount, type AuthContext, clientAddress, presentedSecret } from '../../credentials.js';
import { finishUnreadBody, hasBody, sendContent } from '../../http/content.js';
import { sendEvents, wantsEventStream } from '../../http/events.js';
import { readContent } from '../../http/multipart.js';
import { checkQueryUtf8, verifyJsonUtf8 } from '../../http/utf8.js';
import { sendDomainError, sendError, sendReply, writeJson } from '../../replies.js';
import { compileRoutes } from '../../routing.js';

export interface ApiDeps {
  dispatcher: Dispatcher;
  auth: Authenticator;
  /** JSON body limit (SVC_BODY_LIMIT) for operations that declare none of their own. */
  bodyLimit: string;
}

/** Stripe's header: the dispatcher records a POST's answer under it and replays it (docs/reliability.md). */
const IDEMPOTENCY_HEADER = 'idempotency-key';

/** Writes an operation's answer; a live stream ends when its key is revoked or expires. */
function write(req: Request, res: Response, answer: Answer, auth: Authenticator, ctx: AuthContext | undefined): Promise<void> | void {
  if (answer.kind === 'content') return sendContent(req, res, answer.download, { head: req.method === 'HEAD' });
  if (answer.kind === 'events') return sendEvents(req, res, answer.events, ctx && ((end) => auth.hold(ctx, end, true)));
  if (answer.text === undefined) return sendReply(res, answer.status, answer.headers, answer.body);
  for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
  writeJson(res, answer.status, answer.text);
}

/**
 * An error of an operation that takes content: the current ETag travels as a header on a 412, and
 * the unread rest of the body is dropped so that the client sees the answer, not a reset.
 */
function sendContentError(req: Request, res: Response, err: DomainError): void {
  const etag = err.details?.etag;
  if (err.httpStatus === 412 && typeof etag === 'string') res.setHeader('ETag', etag);
  finishUnreadBody(req, res);
  sendDomainError(req, res, err);
}

/** Mounts every operation of the dispatcher's route table but the internal ones. */
export function mountApi(app: express.Express, deps: ApiDeps): void {
  // JSON bodies are parsed per operation, with the operation's own limit where it declares one.
  const parsers = new Map<string, express.RequestHandler>();
  // An empty body (`Content-Length: 0`) is no body: express's parser would make it `{}`, which
  // would pass for a body the operation requires.
  const empty = new WeakSet<IncomingMessage>();
  const verify = (req: IncomingMessage, res: unknown, buf: Buffer, encoding: string) => {
    if (buf.length === 0) empty.add(req);
    verifyJsonUtf8(req, res, buf, encoding);
  };
  const jsonParser = (limit: string) => {
    let p = parsers.get(limit);
    if (!p) parsers.set(limit, (p = express.json({ limit, strict: false, type: ['application/json', 'application/*+json'], verify })));
    return p;
  };

  // The protocol fronts' own calls (Route.internal) are no part of the HTTP API.
  const entries = deps.dispatcher.routes
    .filter((r) => !r.internal)
    .map((route: Route) => {
      const hostCalls = route.principals.includes('host');
      // Content in or out can take long: it is cut if its key is revoked or expires mid-way.
      const transfers = route.content !== undefined || route.answer === 'bytes';
      const takesKey = takesIdempotencyKey(route);
      const handle = async (req: Request, res: Response) => {
        let auth;
        if (route.auth === 'key') {
          const secret = presentedSecret(req.headers.authorization, { basic: false });
          // A host credential works only on the operations a host calls (its principals include `host`).
          auth =
            hostCalls && secret && HOST_CREDENTIAL_RE.test(secret)
              ? await deps.auth.authenticateHost(secret, clientAddress(req))
              : await deps.auth.authenticate(secret, actingAccount(req.headers), clientAddress(req), 'api');
        }
        if (transfers && auth) deps.auth.holdResponse(auth, res);
        // req.query parses the query string on each read: only for operations that take a query.
        if (route.query) checkQueryUtf8(req.url);
        const idempotencyKey = takesKey ? req.headers[IDEMPOTENCY_HEADER] : undefined;
        const raw: RawInput = {
          params: req.params,
          // A keyed request's query is part of what the key names, declared or not.
          query: route.query || (idempotencyKey !== undefined && req.url.includes('?')) ? (req.query as Record<string, unknown>) : undefined,
          headers: req.headers,
          body: empty.has(req) ? undefined : req.body,
        };
        // A body that is there but not JSON is 415; no body at all is for the schema to judge (400).
        if (route.body && req.body === undefined && hasBody(req) && !req.is('application/json')) {
          raw.unreadableBody = new DomainError(
            'unsupported_media_type',
            'unsupported_media_type',
            'The request body must be JSON (Content-Type: application/json).',
          );
        }
        if (route.content) raw.content = () => readContent(req, route.content!);
        const inv: Invocation = {
          requestId: req.requestId,
          auth,
          head: req.method === 'HEAD',
          stream: route.events !== undefined && wantsEventStream(req),
          headers: res,
        };
        if (idempotencyKey !== undefined) inv.idempotency = { key: Array.isArray(idempotencyKey) ? idempotencyKey.join(',') : idempotencyKey };
        let answer: Answer;
        try {
          answer = await deps.dispatcher.invoke(route, raw, inv);
        } catch (err) {
          if (route.content && err instanceof DomainError) return sendContentError(req, res, err);
          throw err;
        }
        const writing = write(req, res, answer, deps.auth, auth);
        if (writing) await writing;
      };
      const parse = route.body ? jsonParser(route.bodyLimit ?? deps.bodyLimit) : undefined;
      const dispatch: express.RequestHandler = parse
        ? (req, res, next) => parse(req, res, (err) => (err ? next(err) : handle(req, res).catch(next)))
        : (req, res, next) => handle(req, res).catch(next);
      return { method: route.method, path: route.path, dispatch };
    });

  // One middleware finds the operation (see routing.ts) instead of an express route per entry.
  const lookup = compileRoutes(entries);
  app.use((req, res, next) => {
    const found = lookup(req.method, req.path);
    if (!found) return next();
    if ('allowed' in found) {
      const allowed = found.allowed.includes('GET') ? [...found.allowed, 'HEAD'] : found.allowed;
      res.setHeader('Allow', allowed.join(', '));
      if (req.method === 'OPTIONS') return void res.status(204).end();
      return sendError(req, res, 405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}.`);
    }
    req.params = found.params;
    setHttpRoute(found.route.path);
    found.route.dispatch(req, res, next);
  });
}
