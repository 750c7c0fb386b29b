/**
 * The MCP endpoint (docs/mcp.md): POST /mcp (and /v1/mcp), served in the gateway. In order: an
 * Origin that is not allowed is refused (403) before anything else, a method other than POST is
 * 405, the caller is authenticated with the API's bearer key (401 before any MCP processing), the
 * body is read and parsed once (its tool's rate-limit class, then the protocol), and the message
 * goes to @svc/tools' McpEndpoint (the official SDK) with the caller's principal on channel `mcp`.
 * A tool call goes through the process's dispatcher (the API's) straight to the service that owns
 * the operation, as the same call over the API would (run_code and the code operations reach the mcp
 * service's sandbox over gRPC).
 */
import express, { type Request, type Response } from 'express';

import { routes } from '@svc/api';
import { classOf, type Dispatcher, type OperationClass } from '@svc/dispatch';
import { DomainError, type Logger, type Principal, setHttpRoute } from '@svc/kit';
import {
  CALL_TOOL,
  isToolOperation,
  McpEndpoint,
  type McpMessage,
  readMcpMessage,
  ToolCatalogue,
  toolName,
  type ToolView,
  viewOf,
  withAllowList,
} from '@svc/tools';

import type { Authenticator } from '../../auth.js';
import { actingAccount, clientAddress, type OauthAccess, presentedSecret } from '../../credentials.js';
import { sendDomainError, sendError } from '../../replies.js';
import { agentBoundView } from '../../script-tools.js';

export interface McpFrontDeps {
  log: Logger;
  /** The process's one dispatcher (the API's): the same rules, answers cache and operations. */
  dispatcher: Dispatcher;
  auth: Authenticator;
  /** Browser origins allowed to call the endpoint (SVC_MCP_ALLOWED_ORIGINS); none by default. */
  allowedOrigins: string[];
  /** Tools per tools/list page (SVC_MCP_TOOLS_PAGE_SIZE). */
  pageSize: number;
  /** The server's version, as the endpoint announces it. */
  version: string;
}

/** The largest MCP message taken (a tool call may carry a file's content in base64). */
const MCP_BODY_LIMIT = '8mb';
/** Request headers the MCP exchange needs: the rest (the key, cookies) stays at the gateway. */
const FORWARDED = /^(accept|content-type|mcp-.*)$/;
/** The URL the SDK's Request is given (it reads only the headers; the body goes to it parsed). */
const ENDPOINT_URL = 'http://gateway.svc.internal/mcp';
/** Response headers node writes itself. */
const HOP_BY_HOP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const CORS_HEADERS = 'authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, x-svc-account, x-request-id';

/** The operation class of each tool of the catalogue (its route's), by tool name. */
let toolClasses: Map<string, OperationClass> | undefined;

/** The class of an MCP message: a `tools/call` (directly or through call_tool) is its operation's. */
export function mcpClass(message: McpMessage | undefined): OperationClass {
  const msg = message as { method?: unknown; params?: { name?: unknown; arguments?: { name?: unknown } } } | undefined;
  if (msg?.method !== 'tools/call') return 'read';
  let name = msg.params?.name;
  if (name === CALL_TOOL) name = msg.params?.arguments?.name;
  toolClasses ??= new Map(routes.filter(isToolOperation).map((r) => [toolName(r), classOf(r)]));
  return (typeof name === 'string' && toolClasses.get(name)) || 'read';
}

/** An Origin as compared: lowercase, no trailing slash. */
const normalOrigin = (o: string) => o.trim().toLowerCase().replace(/\/+$/, '');

export function mountMcp(app: express.Router, deps: McpFrontDeps): void {
  const allowed = new Set(deps.allowedOrigins.map(normalOrigin));
  const readBody = express.raw({ type: () => true, limit: MCP_BODY_LIMIT });
  // The catalogue and its endpoint, made on the first exchange, then kept for the process.
  const dispatcher = deps.dispatcher;
  let endpoint: McpEndpoint | undefined;
  let catalogue: ToolCatalogue | undefined;
  /** A token's scope binds what its client sees and calls: read-only, and its toolsets only. */
  const tokenView = (view: ToolView, oauth: OauthAccess | undefined): ToolView => {
    if (!oauth) return view;
    let out = oauth.readOnly && !view.readOnly ? { ...view, readOnly: true, key: `${view.key}+ro` } : view;
    if (oauth.toolsets.length) {
      const areas = new Set(oauth.toolsets);
      out = withAllowList(
        out,
        (name) => areas.has(catalogue?.get(name)?.area ?? ''),
        `scope:${oauth.toolsets.join(',')}`,
        (name) => `This access token's toolset scopes (${oauth.toolsets.join(', ')}) do not include ${name}.`,
      );
    }
    return out;
  };
  const endpointOf = () => {
    if (endpoint) return endpoint;
    catalogue = ToolCatalogue.fromRoutes(routes);
    return (endpoint = new McpEndpoint({ catalogue, dispatcher, pageSize: deps.pageSize, log: deps.log, version: deps.version }));
  };

  /**
   * An agent's key sees and calls only the tools its agent's `tools` names (or, naming none, the
   * agent default set), as its runs do (script-tools.ts).
   */
  const boundByAgent = async (view: ToolView, auth: { principal: Principal; token: string }, requestId: string): Promise<ToolView> => {
    if (auth.principal.kind !== 'agent' || !auth.principal.agentId) return view;
    return agentBoundView(dispatcher, view, auth, requestId);
  };

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
    const verified = await deps.auth.authenticate(
      presentedSecret(req.headers.authorization, { basic: false }),
      actingAccount(req.headers),
      clientAddress(req),
      'mcp',
    );
    const caller = await deps.auth.onChannel(verified, 'mcp');
    // What the client chose to see: toolsets and read-only mode, on the URL or in headers (400 when
    // unknown), within what an OAuth token's scope allows (docs/oauth.md).
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    const view = await boundByAgent(
      tokenView(viewOf(endpointOf().areas, new URL(req.originalUrl, ENDPOINT_URL).searchParams, header), verified.oauth),
      caller,
      req.requestId,
    );
    await new Promise<void>((resolve, reject) => readBody(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
    const read = readMcpMessage(req.headers['content-type'], Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
    // The message is metered here, so that a refused one is the HTTP 429 the API answers: a tool call
    // draws on the buckets of its operation's class, as the same call over the API would (its
    // invocation then draws nothing more); listing, searching, the protocol's own messages and a
    // message refused as unreadable are reads.
    const metering = dispatcher.meter(mcpClass('message' in read ? read.message : undefined), verified.principal, res);
    if (metering) await metering;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string' && FORWARDED.test(name)) headers[name] = value;
    const answer =
      'refused' in read
        ? read.refused
        : await endpointOf().serve(
            read.message,
            { url: ENDPOINT_URL, headers },
            {
              principal: caller.principal,
              token: caller.token,
              requestId: req.requestId,
              view,
              metered: true,
            },
          );
    res.statusCode = answer.status;
    for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name)) res.setHeader(name, value);
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
