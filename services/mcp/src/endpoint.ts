/**
 * The MCP endpoint (docs/mcp.md): Streamable HTTP, stateless, JSON answers, served with the
 * official MCP TypeScript SDK. One endpoint serves both protocol generations: 2025-era clients
 * (`initialize`, then each request on its own) through a stateless SDK transport in JSON mode, and
 * 2026-07-28 clients (`server/discover`, the per-request `_meta` envelope and the
 * MCP-Protocol-Version / Mcp-Method / Mcp-Name headers, which the SDK checks against the body)
 * through the SDK's createMcpHandler. Each exchange gets a fresh low-level Server bound to its
 * caller; the tool catalogue and its pages are built once per process.
 */
import {
  type AuthInfo,
  type CallToolResult,
  createMcpHandler,
  isJsonContentType,
  isLegacyRequest,
  type McpHttpHandler,
  type McpRequestContext,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type Tool,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';

import type { Dispatcher } from '@svc/dispatch';
import type { Logger, Principal } from '@svc/kit';
import { callTool, InvalidCursorError, type ToolCatalogue, type ToolDef } from '@svc/tools';

/** The caller of one exchange, as the gateway authenticated it (channel mcp). */
export interface McpCaller {
  principal: Principal;
  /** The signed principal token: tool calls go to the services with it. */
  token: string;
  requestId: string;
}

/** One HTTP exchange as it reached the endpoint. */
export interface McpExchange {
  method: string;
  url: string;
  headers: Headers;
  body: Uint8Array | string;
}

export interface McpEndpointDeps {
  catalogue: ToolCatalogue;
  dispatcher: Dispatcher;
  /** Tools per tools/list page (SVC_MCP_TOOLS_PAGE_SIZE). */
  pageSize: number;
  log: Logger;
  version: string;
}

const INSTRUCTIONS =
  'The svc platform as tools: each tool is one operation of the svc API, called as you with your API key. ' +
  'tools/list is paginated; search_tools finds any tool (with its input schema) and call_tool calls it by name.';

/** An MCP Tool as tools/list lists it. */
const toMcpTool = (t: ToolDef): Tool =>
  ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    annotations: t.annotations,
  }) as Tool;

const jsonRpcError = (status: number, code: number, message: string, id: unknown = null) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }), { status, headers: { 'content-type': 'application/json' } });

const callerOf = (authInfo: AuthInfo | undefined): McpCaller => {
  const caller = authInfo?.extra?.caller as McpCaller | undefined;
  if (!caller) throw new Error('an MCP exchange without its caller');
  return caller;
};

export class McpEndpoint {
  /** The SDK's handler of 2026-07-28 requests (made on the first one: it warns on the console that JSON mode drops notifications). */
  private modernHandler?: McpHttpHandler;
  /** tools/list pages, by cursor ('' for the first): built on first ask, then kept. */
  private readonly pages = new Map<string, { tools: Tool[]; nextCursor?: string }>();

  constructor(private readonly deps: McpEndpointDeps) {}

  private get modern(): McpHttpHandler {
    this.modernHandler ??= createMcpHandler((ctx: McpRequestContext) => this.server(callerOf(ctx.authInfo)), {
      legacy: 'reject',
      responseMode: 'json',
      onerror: (err) => this.deps.log.debug({ err: err.message }, 'an MCP request was refused'),
    });
    return this.modernHandler;
  }

  /** A Server for one exchange, its handlers bound to the caller. */
  private server(caller: McpCaller): Server {
    const server = new Server({ name: 'svc', title: 'svc', version: this.deps.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    server.setRequestHandler('tools/list', async (req) => this.page(req.params?.cursor));
    server.setRequestHandler('tools/call', async (req) => this.call(caller, req.params.name, req.params.arguments));
    return server;
  }

  private page(cursor: string | undefined): { tools: Tool[]; nextCursor?: string } {
    const key = cursor ?? '';
    let page = this.pages.get(key);
    if (!page) {
      try {
        const p = this.deps.catalogue.page(cursor, this.deps.pageSize);
        page = { tools: p.tools.map(toMcpTool), ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
      } catch (err) {
        if (err instanceof InvalidCursorError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
        throw err;
      }
      this.pages.set(key, page);
    }
    return page;
  }

  private async call(caller: McpCaller, name: string, args: unknown): Promise<CallToolResult> {
    const r = await callTool(this.deps.dispatcher, this.deps.catalogue, name, args, {
      auth: { principal: caller.principal, token: caller.token },
      requestId: caller.requestId,
      onInternalError: (err) => this.deps.log.error({ err, tool: name, requestId: caller.requestId }, 'a tool call failed'),
    });
    const text = JSON.stringify(r.structuredContent);
    // An error carries its body as text only: a client checks structured content against the tool's output schema.
    if (r.isError) return { content: [{ type: 'text', text }], isError: true };
    return { content: [{ type: 'text', text }], structuredContent: r.structuredContent };
  }

  /**
   * Answers one HTTP exchange of the endpoint for an authenticated caller. The body is parsed
   * here, once: the SDK is handed the parsed message and a Request without the bytes.
   */
  async fetch(exchange: McpExchange, caller: McpCaller): Promise<Response> {
    if (exchange.method !== 'POST') {
      const res = jsonRpcError(405, -32000, 'Method not allowed: this endpoint is stateless and answers POST only.');
      res.headers.set('allow', 'POST');
      return res;
    }
    if (!isJsonContentType(exchange.headers.get('content-type'))) {
      return jsonRpcError(415, ProtocolErrorCode.InvalidRequest, 'Unsupported media type: the body must be application/json.');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof exchange.body === 'string' ? exchange.body : Buffer.from(exchange.body).toString('utf8'));
    } catch {
      return jsonRpcError(400, ProtocolErrorCode.ParseError, 'Parse error: the body is not JSON.');
    }
    if (Array.isArray(parsed)) return jsonRpcError(400, ProtocolErrorCode.InvalidRequest, 'Invalid request: JSON-RPC batches are not supported.');
    if (typeof parsed !== 'object' || parsed === null)
      return jsonRpcError(400, ProtocolErrorCode.InvalidRequest, 'Invalid request: not a JSON-RPC message.');
    const message = parsed as { method?: unknown; id?: unknown };
    if (message.method === 'subscriptions/listen') {
      // A listen stream needs a connection that stays open; this endpoint answers each request and is done.
      return jsonRpcError(
        200,
        ProtocolErrorCode.MethodNotFound,
        'Method not found: subscriptions/listen is not served (stateless endpoint).',
        message.id ?? null,
      );
    }
    const request = new Request(exchange.url, { method: 'POST', headers: exchange.headers });
    const authInfo: AuthInfo = { token: caller.token, clientId: caller.principal.keyId ?? '', scopes: [], extra: { caller } };
    if (await isLegacyRequest(request, parsed)) return this.legacy(request, parsed, caller, authInfo);
    return this.modern.fetch(request, { authInfo, parsedBody: parsed });
  }

  /** A 2025-era request: a stateless transport in JSON mode, for this request alone. */
  private async legacy(request: Request, parsed: unknown, caller: McpCaller, authInfo: AuthInfo): Promise<Response> {
    const server = this.server(caller);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: parsed, authInfo });
    } finally {
      await transport.close().catch(() => {});
      await server.close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    await this.modernHandler?.close();
  }
}
