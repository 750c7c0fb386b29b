import { type Route, routes } from '@svc/api';
import { Dispatcher, type OperationContext, type OperationHandler } from '@svc/dispatch';
import { type CallContext, createHashPool, DomainError, type ServiceContext } from '@svc/kit';
import type { mcp, mcp_serve_http } from '@svc/proto';
import { McpEndpoint, mcpEndpointSettings, ToolCatalogue, toolOperations } from '@svc/tools';

/** The MCP endpoint's settings (also the gateway's, which serves POST /mcp itself). */
export const mcpSettings = mcpEndpointSettings;

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
 * ServeHttp: the MCP endpoint over gRPC, as gateways before this release reached it (the gateway
 * now serves POST /mcp itself, docs/mcp.md; the RPC answers a gateway of the previous release
 * during an upgrade). Built on the first call: the tool catalogue from the route table, and a
 * dispatcher whose tool calls run as the caller, so they meet the same rules as the HTTP API in
 * the services that decide; this service's own operations (code.run) run in process.
 */
export function serveHttp(ctx: ServiceContext<{ SVC_MCP_TOOLS_PAGE_SIZE: number }>, version: string, own: OwnHandlers) {
  let built: { endpoint: McpEndpoint; hashes: ReturnType<typeof createHashPool> } | undefined;
  const build = () => {
    const hashes = createHashPool({ name: 'mcp-sha256' });
    const served = routes.map(servedHere);
    const dispatcher = new Dispatcher({ registry: ctx.registry, routes: served });
    // The drive's code operations (code.runFile, code.runWithData) run code here, in process.
    const runCode = async (req: unknown, op: OperationContext) =>
      own.runCode!(req, { principal: op.auth!.principal, principalToken: op.auth!.token, requestId: op.requestId, log: ctx.log }) as never;
    dispatcher.register(toolOperations({ log: ctx.log, registry: ctx.registry, backends: ctx.backends, hashes, runCode }));
    dispatcher.register(ownOperations(routes, own, ctx));
    const catalogue = ToolCatalogue.fromRoutes(served);
    const endpoint = new McpEndpoint({ catalogue, dispatcher, pageSize: ctx.settings.SVC_MCP_TOOLS_PAGE_SIZE, log: ctx.log, version });
    return { endpoint, hashes };
  };

  const handler: ServeHttpHandler = async (req, call) => {
    // MCP exchanges are made on channel mcp (the services refuse authority changes on it).
    if (call.principal.channel !== 'mcp' || call.principal.kind === 'system') {
      throw new DomainError('forbidden', 'mcp_channel_required', 'MCP exchanges are made on the mcp channel.');
    }
    built ??= build();
    const headers = new Headers();
    for (const h of req.headers) headers.append(h.name, h.value);
    const exchange = { method: req.method.toUpperCase(), url: req.url || DEFAULT_URL, headers, body: req.body };
    const res = await built.endpoint.fetch(exchange, { principal: call.principal, token: call.principalToken, requestId: call.requestId });
    return { status: res.status, headers: Object.entries(res.headers).map(([name, value]) => ({ name, value })), body: Buffer.from(res.body) };
  };

  return {
    handlers: { serveHttp: handler } satisfies Partial<Record<keyof typeof mcp.McpServiceService, ServeHttpHandler>>,
    async stop() {
      await built?.endpoint.close();
      await built?.hashes.close();
    },
  };
}
