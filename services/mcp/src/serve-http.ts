import { type Route, routes } from '@svc/api';
import { Dispatcher, type OperationContext, type OperationHandler } from '@svc/dispatch';
import { type CallContext, createHashPool, DomainError, type ServiceContext, setting } from '@svc/kit';
import type { mcp, mcp_serve_http } from '@svc/proto';
import { ToolCatalogue, toolOperations } from '@svc/tools';

import { McpEndpoint } from './endpoint.js';

/**
 * The MCP endpoint's settings (docs/mcp.md):
 * - SVC_MCP_TOOLS_PAGE_SIZE: tools per tools/list page (default 50); search_tools and call_tool
 *   are on the first page and reach every tool.
 */
export const mcpSettings = {
  SVC_MCP_TOOLS_PAGE_SIZE: setting.int(1, 50, 1000),
};

type ServeHttpHandler = (req: mcp_serve_http.ServeHttpRequest, ctx: CallContext) => Promise<mcp_serve_http.ServeHttpResponse>;

/** Where an exchange is said to have been sent when the gateway gave no URL. */
const DEFAULT_URL = 'http://mcp.svc.internal/mcp';

/** This service's own gRPC handlers (RunCode), which its tools call in process rather than over gRPC to itself. */
export type OwnHandlers = Partial<Record<string, (req: any, ctx: CallContext) => Promise<unknown>>>;

/** By route: several operations may call the same method with their own mappings (code.run, code.check). */
const ownName = (routeId: string) => `mcp.${routeId}`;

/** An operation this service serves itself (rpc to mcp) as a local one: the catalogue declares no call to oneself. */
function servedHere(r: Route): Route {
  const h = r.handler;
  return h.kind === 'rpc' && h.service === 'mcp' ? { ...r, handler: { kind: 'local', name: ownName(r.id) } } : r;
}

/** The local operations of servedHere: the route's request and response mappings around the service's own handler. */
function ownOperations(all: Route[], own: OwnHandlers, ctx: ServiceContext<unknown>): Record<string, OperationHandler> {
  const out: Record<string, OperationHandler> = {};
  for (const r of all) {
    const h = r.handler;
    if (h.kind !== 'rpc' || h.service !== 'mcp') continue;
    const handler = own[h.method];
    if (!handler) continue;
    out[ownName(r.id)] = async (input, op) => {
      const request = h.request ? h.request(input) : { ...input.params, ...input.query, ...(input.body ?? {}) };
      const call: CallContext = { principal: op.auth!.principal, principalToken: op.auth!.token, requestId: op.requestId, log: ctx.log };
      const res = await handler(request, call);
      return h.response ? h.response(res, input) : res;
    };
  }
  return out;
}

/**
 * ServeHttp: the MCP endpoint behind POST /mcp. The tool catalogue is built here once (from the
 * route table); tool calls run through this service's own dispatcher as the caller, so they meet
 * the same rules as the HTTP API in the services that decide.
 */
export function serveHttp(ctx: ServiceContext<{ SVC_MCP_TOOLS_PAGE_SIZE: number }>, version: string, own: OwnHandlers) {
  const hashes = createHashPool({ name: 'mcp-sha256' });
  const served = routes.map(servedHere);
  const dispatcher = new Dispatcher({ registry: ctx.registry, routes: served });
  // The drive's code operations (code.runFile, code.runWithData) run code here, in process.
  const runCode = async (req: unknown, op: OperationContext) =>
    own.runCode!(req, { principal: op.auth!.principal, principalToken: op.auth!.token, requestId: op.requestId, log: ctx.log }) as never;
  const contentDeps = { log: ctx.log, registry: ctx.registry, backends: ctx.backends, hashes, runCode };
  dispatcher.register(toolOperations(contentDeps));
  dispatcher.register(ownOperations(routes, own, ctx));
  const endpoint = new McpEndpoint({
    catalogue: ToolCatalogue.fromRoutes(served),
    dispatcher,
    pageSize: ctx.settings.SVC_MCP_TOOLS_PAGE_SIZE,
    log: ctx.log,
    version,
  });

  const handler: ServeHttpHandler = async (req, call) => {
    // The gateway sends MCP exchanges on channel mcp (the services refuse authority changes on it).
    if (call.principal.channel !== 'mcp' || call.principal.kind === 'system') {
      throw new DomainError('forbidden', 'mcp_channel_required', 'MCP exchanges are made on the mcp channel.');
    }
    const headers = new Headers();
    for (const h of req.headers) headers.append(h.name, h.value);
    const exchange = { method: req.method.toUpperCase(), url: req.url || DEFAULT_URL, headers, body: req.body };
    const res = await endpoint.fetch(exchange, { principal: call.principal, token: call.principalToken, requestId: call.requestId });
    const out: mcp_serve_http.HttpHeader[] = [];
    res.headers.forEach((value, name) => out.push({ name, value }));
    return { status: res.status, headers: out, body: Buffer.from(await res.arrayBuffer()) };
  };

  return {
    handlers: { serveHttp: handler } satisfies Partial<Record<keyof typeof mcp.McpServiceService, ServeHttpHandler>>,
    async stop() {
      await endpoint.close();
      await hashes.close();
    },
  };
}
