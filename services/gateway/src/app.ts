import { randomBytes } from 'node:crypto';

import express, { type NextFunction, type Request, type Response } from 'express';
import type { z } from 'zod';

import { buildOpenApi, isReply, type Route, type RouteInput, routes as allRoutes } from '@svc/api';
import { type Backends, DomainError, type Logger, parseInput, type Registry, type ServiceName, setHttpRoute } from '@svc/kit';
import * as proto from '@svc/proto';

import { type AuthContext, type Authenticator, presentedSecret } from './auth.js';
import { checkHealth } from './health-client.js';
import { sendDomainError, sendError, sendJson, sendReply, writeJson } from './replies.js';
import { compileRoutes } from './routing.js';

/** The proto definition of each service the route table can name. */
export const DEFINITIONS: Partial<Record<ServiceName, [Record<string, any>, string]>> = {
  keys: [proto.keys.KeysServiceService, 'svc.keys.v1.KeysService'],
  accounts: [proto.accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService'],
  drive: [proto.drive.DriveServiceService, 'svc.drive.v1.DriveService'],
  agents: [proto.agents.AgentsServiceService, 'svc.agents.v1.AgentsService'],
  models: [proto.models.ModelsServiceService, 'svc.models.v1.ModelsService'],
  trading: [proto.trading.TradingServiceService, 'svc.trading.v1.TradingService'],
  profiles: [proto.profiles.ProfilesServiceService, 'svc.profiles.v1.ProfilesService'],
  mcp: [proto.mcp.McpServiceService, 'svc.mcp.v1.McpService'],
};

export interface GatewayDeps {
  log: Logger;
  registry: Registry;
  backends: Backends;
  auth: Authenticator;
  bodyLimit: string;
  /** Express's `trust proxy`: whose X-Forwarded-For decides `req.ip` (SVC_TRUST_PROXY). */
  trustProxy?: boolean | number;
  /** Services whose health decides readiness. */
  services: ServiceName[];
  version: string;
  /** Local handlers contributed by gateway modules (see fronts/), by name. */
  locals?: Record<string, LocalHandler>;
  /**
   * Protocol fronts outside the route table (WebDAV at /dav, Git), mounted before the JSON body
   * parser so that they read raw request bodies. They authenticate with `auth` themselves.
   */
  mount?: (app: express.Express) => void;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const V1_PREFIX_RE = /^\/v1(?:$|[/?])/i;
// Request ids: a random per-process prefix and a counter (unique across replicas, no entropy
// drawn per request).
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;
export const nextRequestId = () => `${REQUEST_ID_PREFIX}${(++requestCounter).toString(16).padStart(8, '0')}`;
/** How long GET /me answers from its per-principal cache. */
const ME_CACHE_MS = 5000;

/**
 * A route answered by the gateway itself (`handler: {kind: 'local'}`): auth, authority and input
 * validation have run; the body of a non-JSON request is still unread (a stream to pipe on).
 */
export type LocalHandler = (req: Request, res: Response, input: RouteInput, auth: AuthContext | undefined) => Promise<void>;


/** The path of the first string in a JSON value that holds U+0000, if any. */
function nulPath(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const found = nulPath(v, `${path}.${k}`);
    if (found) return found;
  }
  return undefined;
}

const hasBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

function parseOr400(schema: z.ZodType | undefined, value: unknown, where: string) {
  if (!schema) return where === 'body' ? undefined : {};
  // No text column or JSON document in PostgreSQL can hold U+0000: refused here, as bad input,
  // rather than failing in a service's SQL.
  const nul = nulPath(value, where);
  if (nul) throw new DomainError('invalid_argument', 'invalid_request', `${nul}: must not contain the NUL character (U+0000).`);
  return parseInput(schema, value ?? (where === 'body' ? undefined : {}), { where });
}

/** Builds the express app from the route table. */
export function createApp(deps: GatewayDeps, routes: Route[] = allRoutes): express.Express {
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
  // JSON bodies are parsed per route, with the route's own limit where it declares one.
  const parsers = new Map<string, express.RequestHandler>();
  const jsonParser = (limit: string) => {
    let p = parsers.get(limit);
    if (!p) parsers.set(limit, (p = express.json({ limit, strict: false, type: ['application/json', 'application/*+json'] })));
    return p;
  };

  const openapi = buildOpenApi(routes, { version: deps.version });
  const meCache = new Map<string, { json: string; until: number }>();
  const locals: Record<string, LocalHandler> = {
    ...deps.locals,
    async health(_req, res) {
      res.json({ status: 'ok' });
    },
    async ready(_req, res) {
      const backends = await deps.backends.check(['cache', 'bus']);
      const services: Record<string, { ok: boolean; address: string; error?: string }> = {};
      await Promise.all(
        deps.services.map(async (name) => {
          const address = deps.registry.address(name) ?? `${name}:50051`;
          services[name] = { address, ...(await checkHealth(address)) };
        }),
      );
      const ok = Object.values(backends).every((b) => b.ok) && Object.values(services).every((s) => s.ok);
      res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'unavailable', backends, services });
    },
    async openapi(_req, res) {
      res.json(openapi);
    },
    async me(req, res, _input, auth) {
      res.setHeader('Cache-Control', 'no-store');
      // The identity changes rarely: answered from a short per-principal cache, so a client that
      // polls /me (or a load balancer check with a key) costs no service call.
      const hit = meCache.get(auth!.token);
      if (hit && hit.until > Date.now()) return writeJson(res, 200, hit.json);
      const client = deps.registry.client('accounts', proto.accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService');
      const me = await client.getMe({}, { principalToken: auth!.token, requestId: req.requestId });
      const p = auth!.principal;
      const ref = (a: proto.accounts.Account) => ({ id: a.id, kind: a.kind, name: a.name, createdAt: a.createdAt });
      const body = {
        kind: p.kind,
        userId: p.userId ?? null,
        agentId: p.agentId ?? null,
        accountId: p.accountId,
        keyId: p.keyId,
        projectId: p.projectId ?? null,
        account: me.account ? ref(me.account) : null,
        organizations: me.organizations.map((m) => ({ ...ref(m.account!), role: m.role })),
      };
      if (meCache.size > 10_000) meCache.clear();
      const json = JSON.stringify(body);
      meCache.set(auth!.token, { json, until: Date.now() + ME_CACHE_MS });
      writeJson(res, 200, json);
    },
  };

  const entries: Array<{ method: string; path: string; dispatch: express.RequestHandler }> = [];
  for (const route of routes) {
    const handle = async (req: Request, res: Response) => {
      let auth: AuthContext | undefined;
      if (route.auth === 'key') {
        const account = req.headers['x-svc-account'];
        auth = await deps.auth.authenticate(
          presentedSecret(req.headers.authorization, { basic: false }),
          typeof account === 'string' && account ? account : undefined,
          req.ip ?? req.socket.remoteAddress ?? 'unknown',
        );
        const kind = auth.principal.kind;
        if (route.authority && kind !== 'human') {
          throw new DomainError(
            'forbidden',
            'human_principal_required',
            'This operation changes authority and must be made by a person, not an agent or host key.',
          );
        }
        if (kind !== 'system' && !route.principals.includes(kind)) {
          throw new DomainError('forbidden', 'principal_not_allowed', `A ${kind} key cannot call this operation.`);
        }
      }
      const h = route.handler;
      if (h.kind === 'unimplemented') {
        throw new DomainError('not_implemented', 'not_implemented', `${route.method.toUpperCase()} ${route.path} is not implemented yet.`);
      }
      // A body that is there but not JSON is 415; no body at all is for the schema to judge (400).
      if (route.body && req.body === undefined && hasBody(req) && !req.is('application/json')) {
        throw new DomainError('unsupported_media_type', 'unsupported_media_type', 'The request body must be JSON (Content-Type: application/json).');
      }
      const input: RouteInput = {
        params: parseOr400(route.params, req.params, 'path') as Record<string, unknown>,
        query: parseOr400(route.query, req.query, 'query') as Record<string, unknown>,
        body: parseOr400(route.body, req.body, 'body'),
        headers: parseOr400(route.headers, req.headers, 'header') as Record<string, unknown>,
      };
      if (h.kind === 'local') {
        const local = locals[h.name];
        if (!local) throw new DomainError('not_implemented', 'not_implemented', 'This operation is not implemented yet.');
        return local(req, res, input, auth);
      }
      const def = DEFINITIONS[h.service];
      if (!def) throw new DomainError('not_implemented', 'not_implemented', 'This operation is not implemented yet.');
      // Answers are per principal, and a key's creation carries the key itself: no cache keeps them.
      res.setHeader('Cache-Control', 'no-store');
      const client = deps.registry.client(h.service, def[0], def[1]) as Record<string, (r: unknown, o: unknown) => Promise<unknown>>;
      const request = h.request ? h.request(input) : { ...input.params, ...input.query, ...(input.body ?? {}) };
      const result = await client[h.method]!(request, { principalToken: auth!.token, requestId: req.requestId });
      // This replica forgets a revoked key before answering; other replicas hear the NATS event.
      if (h.revokesKey) deps.auth.evict(h.revokesKey(input));
      const out = h.response ? h.response(result, input) : result;
      if (isReply(out)) sendReply(res, out.status ?? route.status ?? 200, out.headers ?? {}, out.body);
      else sendJson(res, route.status ?? 200, out);
    };
    const parse = route.body ? jsonParser(route.bodyLimit ?? deps.bodyLimit) : undefined;
    const dispatch: express.RequestHandler = parse
      ? (req, res, next) => parse(req, res, (err) => (err ? next(err) : handle(req, res).catch(next)))
      : (req, res, next) => handle(req, res).catch(next);
    entries.push({ method: route.method, path: route.path, dispatch });
  }

  // One middleware finds the route (see routing.ts) instead of an express route per entry.
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

  // The slot where the hosted MCP server is mounted when its service lands.
  app.all('/mcp', (req, res) => sendError(req, res, 501, 'not_implemented', 'The MCP endpoint is not implemented yet.'));

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
        return sendError(req, res, 413, 'payload_too_large', `The request body is larger than ${(err as { limit?: number }).limit ?? deps.bodyLimit} bytes.`);
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
