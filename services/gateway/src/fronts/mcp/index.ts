/**
 * The MCP endpoint's front door (docs/mcp.md): POST /mcp (and /v1/mcp). In order: an Origin that
 * is not allowed is refused (403) before anything else, a method other than POST is 405, the
 * caller is authenticated with the API's bearer key (401 before any MCP processing), and the
 * exchange goes to the mcp service's ServeHttp as it came, with the caller's principal on channel
 * `mcp`. The protocol itself is the mcp service's.
 */
import express, { type Request, type Response } from 'express';

import { routes } from '@svc/api';
import { mcpClient } from '@svc/clients';
import { DomainError, type Logger, type Registry, setHttpRoute } from '@svc/kit';
import { CALL_TOOL, isToolOperation, toolName } from '@svc/tools';

import { type Authenticator, presentedSecret } from '../../auth.js';
import { admitFront, classOf, type OperationClass, type RateLimiter } from '../../rate-limit.js';
import { sendDomainError, sendError } from '../../replies.js';

export interface McpFrontDeps {
  auth: Authenticator;
  registry: Registry;
  log: Logger;
  /** Browser origins allowed to call the endpoint (SVC_MCP_ALLOWED_ORIGINS); none by default. */
  allowedOrigins: string[];
  /** The API's token buckets (absent: no limits). */
  limiter?: RateLimiter;
}

/** The largest MCP message taken (a tool call may carry a file's content in base64). */
const MCP_BODY_LIMIT = '8mb';
/** Request headers the MCP exchange needs: the rest (the key, cookies) stays at the gateway. */
const FORWARDED = /^(accept|content-type|mcp-.*)$/;
/** Response headers node writes itself. */
const HOP_BY_HOP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const CORS_HEADERS = 'authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, x-svc-account, x-request-id';

/** The operation class of each tool of the catalogue (its route's), by tool name. */
let toolClasses: Map<string, OperationClass> | undefined;

/** The class of an MCP message: a `tools/call` (directly or through call_tool) is its operation's. */
export function mcpClass(body: unknown): OperationClass {
  if (!Buffer.isBuffer(body) || body.length === 0) return 'read';
  let msg: { method?: unknown; params?: { name?: unknown; arguments?: { name?: unknown } } };
  try {
    msg = JSON.parse(body.toString('utf8')) as typeof msg;
  } catch {
    return 'read';
  }
  if (msg?.method !== 'tools/call') return 'read';
  let name = msg.params?.name;
  if (name === CALL_TOOL) name = msg.params?.arguments?.name;
  toolClasses ??= new Map(routes.filter(isToolOperation).map((r) => [toolName(r), classOf(r)]));
  return (typeof name === 'string' && toolClasses.get(name)) || 'read';
}

/** An Origin as compared: lowercase, no trailing slash. */
const normalOrigin = (o: string) => o.trim().toLowerCase().replace(/\/+$/, '');

export function mountMcp(app: express.Express, deps: McpFrontDeps): void {
  const allowed = new Set(deps.allowedOrigins.map(normalOrigin));
  const readBody = express.raw({ type: () => true, limit: MCP_BODY_LIMIT });

  const handle = async (req: Request, res: Response) => {
    setHttpRoute('/mcp');
    const origin = req.headers.origin;
    if (origin !== undefined) {
      // A page of another site must not drive a user's tools (DNS rebinding, cross-site requests).
      if (!allowed.has(normalOrigin(origin))) return sendError(req, res, 403, 'origin_not_allowed', 'Requests from this Origin are not allowed.');
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', 'mcp-protocol-version, x-request-id');
    }
    if (req.method === 'OPTIONS') {
      res.setHeader('Allow', 'POST, OPTIONS');
      if (origin !== undefined) {
        res.setHeader('Access-Control-Allow-Methods', 'POST');
        res.setHeader('Access-Control-Allow-Headers', CORS_HEADERS);
        res.setHeader('Access-Control-Max-Age', '600');
      }
      return void res.status(204).end();
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return sendError(req, res, 405, 'method_not_allowed', `${req.method} is not allowed on /mcp: the endpoint is stateless (POST only).`);
    }
    const account = req.headers['x-svc-account'];
    const verified = await deps.auth.authenticate(
      presentedSecret(req.headers.authorization, { basic: false }),
      typeof account === 'string' && account ? account : undefined,
      req.ip ?? req.socket.remoteAddress ?? 'unknown',
    );
    const caller = await deps.auth.onChannel(verified, 'mcp');
    await new Promise<void>((resolve, reject) => readBody(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
    // A tool call draws on the buckets of its operation's class, as the same call over the API
    // would; listing, searching and the protocol's own messages are reads.
    if (deps.limiter) await admitFront(deps.limiter, mcpClass(req.body), verified.principal, res);
    const headers = Object.entries(req.headers)
      .filter(([name, value]) => FORWARDED.test(name) && typeof value === 'string')
      .map(([name, value]) => ({ name, value: value as string }));
    const answer = await mcpClient(deps.registry).serveHttp(
      {
        method: 'POST',
        url: `http://${req.headers.host ?? 'localhost'}/mcp`,
        headers,
        body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      },
      { principalToken: caller.token, requestId: req.requestId },
    );
    res.statusCode = answer.status;
    for (const h of answer.headers) if (!HOP_BY_HOP.has(h.name.toLowerCase())) res.setHeader(h.name, h.value);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Length', answer.body.length);
    res.end(answer.body);
  };

  app.all('/mcp', (req, res, next) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof DomainError) {
        if (err.httpStatus >= 500) deps.log.warn({ err: err.cause ?? err, requestId: req.requestId }, 'the MCP endpoint failed');
        return sendDomainError(req, res, err);
      }
      next(err);
    });
  });
}
