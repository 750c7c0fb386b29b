/**
 * The MCP endpoint (docs/mcp.md): Streamable HTTP, stateless, JSON answers, served with the
 * official MCP TypeScript SDK. One endpoint serves both protocol generations, told apart by the
 * SDK's classification of each message: 2025-era clients (`initialize`, then each request on its
 * own) on a transport of one exchange, and 2026-07-28 clients (`server/discover`, the per-request
 * `_meta` envelope and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers) on the SDK's
 * per-request transport, or, for what that short path does not take (refusals among them), the
 * SDK's createMcpHandler (exchange.ts). Each exchange gets a fresh low-level Server bound to its
 * caller; the tool catalogue and its pages are built once per process.
 */
import type * as McpSdk from '@modelcontextprotocol/server';
import type { AuthInfo, CallToolResult, McpHttpHandler, McpRequestContext, Server, Tool } from '@modelcontextprotocol/server';

import type { Dispatcher } from '@svc/dispatch';
import { lazy, type Logger, type Principal, setting } from '@svc/kit';

import { callTool } from './call.js';
import { InvalidCursorError, type ToolCatalogue, type ToolDef } from './catalogue.js';
import { jsonRpcError, type McpAnswer, MODERN_REVISION, serveExchange, serveModernExchange, servesModern } from './exchange.js';
import { resultText } from './result-text.js';
import { DEFAULT_TOOLSET, DEFAULT_VIEW, lists, type ToolView, viewPage } from './views.js';

// The SDK is loaded at the first MCP request, not at start (~100 ms of module loading).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const mcp = lazy(() => require('@modelcontextprotocol/server') as typeof McpSdk);

/**
 * The endpoint's settings, the gateway's (which serves it):
 * - SVC_MCP_TOOLS_PAGE_SIZE: tools per tools/list page (default 50); search_tools and call_tool
 *   are on the first page and reach every tool.
 */
export const mcpEndpointSettings = {
  SVC_MCP_TOOLS_PAGE_SIZE: setting.int(1, 50, 1000),
};

/** The caller of one exchange, as the front authenticated it (channel mcp). */
/**
 * Where a tools/call carries the client's idempotency key (docs/mcp.md, "Idempotency keys"): the
 * request's `_meta`, so the key costs the catalogue nothing (no tool grows an argument).
 */
export const IDEMPOTENCY_META = 'io.svc/idempotency-key';

export interface McpCaller {
  principal: Principal;
  /** The signed principal token: tool calls go to the services with it. */
  token: string;
  requestId: string;
  /** What this caller lists and may call (views.ts); absent: the default set. */
  view?: ToolView;
  /**
   * The front metered each message already (the MCP front: by its tool's rate-limit class), so a
   * tool call draws no second token; the calls its scripts make are metered one by one.
   */
  metered?: boolean;
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
  'tools/list answers the everyday tools; search_tools finds any other (with its input schema) and call_tool calls it by name. ' +
  'More tools can be listed with ?toolsets=<areas>|all on the URL (or X-MCP-Toolsets).';

/**
 * The largest output schema tools/list carries (JSON bytes), and only for the default set's tools:
 * output schemas were 62% of the whole catalogue's bytes. A tool listed without one answers the
 * same structuredContent.
 */
export const LISTED_OUTPUT_SCHEMA_MAX = 1536;

/**
 * Whether tools/list carries a tool's output schema: in the default view only (no toolsets
 * chosen), for its own tools. A view of more areas is the catalogue as an index, where every
 * byte is paid once per tool (the whole of it is held to 250 KB).
 */
export const listsOutputSchema = (t: ToolDef, view: ToolView = DEFAULT_VIEW): boolean =>
  t.outputSchema !== undefined &&
  view.toolsets.length === 1 &&
  view.toolsets[0] === 'default' &&
  DEFAULT_TOOLSET.includes(t.name) &&
  JSON.stringify(t.outputSchema).length <= LISTED_OUTPUT_SCHEMA_MAX;

/**
 * An MCP Tool as tools/list lists it in a view. A title that is only the name in words (the tools
 * without a written one) is left out: clients show the name.
 */
export const toMcpTool = (t: ToolDef, view: ToolView = DEFAULT_VIEW): Tool =>
  ({
    name: t.name,
    ...(t.title.toLowerCase() !== t.name.replace(/_/g, ' ') ? { title: t.title } : {}),
    description: t.description,
    inputSchema: t.inputSchema,
    ...(listsOutputSchema(t, view) ? { outputSchema: t.outputSchema } : {}),
    annotations: listedAnnotations(t.annotations),
  }) as Tool;

/**
 * The hints as tools/list carries them: a read-only tool's `destructiveHint` and `idempotentHint`
 * are left out, as MCP says they are meaningful only when `readOnlyHint` is false (8 KB of the
 * whole catalogue). Every other tool carries all four.
 */
const listedAnnotations = (a: ToolDef['annotations']): Tool['annotations'] =>
  a.readOnlyHint ? { readOnlyHint: true, openWorldHint: a.openWorldHint } : a;

/** Views kept with their lists and pages (an agent's allow-list makes a view of its own). */
const MAX_CACHED_VIEWS = 256;

export type { McpAnswer } from './exchange.js';

/** A JSON-RPC message as read from a POST body: an object (batches are refused). */
export type McpMessage = { method?: unknown; id?: unknown; params?: unknown } & Record<string, unknown>;

/**
 * Reads the JSON-RPC message of a POST body (parsed once, here): the message, or the JSON-RPC
 * error that answers the request (415 not JSON by its type, -32700 not JSON, -32600 a batch or
 * not an object).
 */
export function readMcpMessage(contentType: string | null | undefined, body: Uint8Array | string): { message: McpMessage } | { refused: McpAnswer } {
  if (!mcp.isJsonContentType(contentType ?? null)) {
    return { refused: jsonRpcError(415, mcp.ProtocolErrorCode.InvalidRequest, 'Unsupported media type: the body must be application/json.') };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    return { refused: jsonRpcError(400, mcp.ProtocolErrorCode.ParseError, 'Parse error: the body is not JSON.') };
  }
  if (Array.isArray(parsed)) {
    return { refused: jsonRpcError(400, mcp.ProtocolErrorCode.InvalidRequest, 'Invalid request: JSON-RPC batches are not supported.') };
  }
  if (typeof parsed !== 'object' || parsed === null) {
    return { refused: jsonRpcError(400, mcp.ProtocolErrorCode.InvalidRequest, 'Invalid request: not a JSON-RPC message.') };
  }
  return { message: parsed as McpMessage };
}

/** The SDK's Response as an answer. */
async function answerOf(res: Response): Promise<McpAnswer> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  return { status: res.status, headers, body: new Uint8Array(await res.arrayBuffer()) };
}

/** A request header by lowercase name, from Headers or a record of lowercase names. */
const headerOf =
  (headers: Headers | Record<string, string>) =>
  (name: string): string | undefined =>
    headers instanceof Headers ? (headers.get(name) ?? undefined) : headers[name];

const callerOf = (authInfo: AuthInfo | undefined): McpCaller => {
  const caller = authInfo?.extra?.caller as McpCaller | undefined;
  if (!caller) throw new Error('an MCP exchange without its caller');
  return caller;
};

export class McpEndpoint {
  /** The SDK's handler of 2026-07-28 requests (made on the first one: it warns on the console that JSON mode drops notifications). */
  private modernHandler?: McpHttpHandler;
  /** tools/list pages, by view and cursor: built on first ask, then kept. */
  private readonly pages = new Map<string, { tools: Tool[]; nextCursor?: string }>();
  /** The tools each view lists, by its key. */
  private readonly viewTools = new Map<string, ToolDef[]>();

  constructor(private readonly deps: McpEndpointDeps) {}

  /** The catalogue's areas: the toolsets a client may choose (with `default` and `all`). */
  get areas(): readonly string[] {
    return this.deps.catalogue.areas;
  }

  private get modern(): McpHttpHandler {
    this.modernHandler ??= mcp.createMcpHandler((ctx: McpRequestContext) => this.server(callerOf(ctx.authInfo)), {
      legacy: 'reject',
      responseMode: 'json',
      onerror: (err) => this.deps.log.debug({ err: err.message }, 'an MCP request was refused'),
    });
    return this.modernHandler;
  }

  /** The versions a 2026-07-28 exchange's Server lists: the SDK's and that revision (made once). */
  private modernVersions?: string[];

  /**
   * A Server for one exchange, its handlers bound to the caller; with `modern`, MODERN_REVISION is
   * among its versions (it answers server/discover and binds to the revision of the exchange).
   */
  private server(caller: McpCaller, modern = false): Server {
    const server = new mcp.Server(
      { name: 'svc', title: 'svc', version: this.deps.version },
      {
        capabilities: { tools: {} },
        instructions: INSTRUCTIONS,
        ...(modern ? { supportedProtocolVersions: (this.modernVersions ??= [...mcp.SUPPORTED_PROTOCOL_VERSIONS, MODERN_REVISION]) } : {}),
      },
    );
    server.setRequestHandler('tools/list', async (req) => this.page(caller.view ?? DEFAULT_VIEW, req.params?.cursor));
    server.setRequestHandler('tools/call', async (req) => this.call(caller, req.params.name, req.params.arguments, req.params._meta));
    return server;
  }

  /** The tools a view lists (kept per view). */
  listed(view: ToolView): ToolDef[] {
    let tools = this.viewTools.get(view.key);
    if (!tools) {
      if (this.viewTools.size >= MAX_CACHED_VIEWS) {
        this.viewTools.clear();
        this.pages.clear();
      }
      tools = this.deps.catalogue.list().filter((t) => lists(view, t));
      this.viewTools.set(view.key, tools);
    }
    return tools;
  }

  private page(view: ToolView, cursor: string | undefined): { tools: Tool[]; nextCursor?: string } {
    const key = `${view.key}\n${cursor ?? ''}`;
    let page = this.pages.get(key);
    if (!page) {
      try {
        const p = viewPage(this.listed(view), view, cursor, this.deps.pageSize);
        page = { tools: p.tools.map((t) => toMcpTool(t, view)), ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
      } catch (err) {
        if (err instanceof InvalidCursorError) throw new mcp.ProtocolError(mcp.ProtocolErrorCode.InvalidParams, err.message);
        throw err;
      }
      this.pages.set(key, page);
    }
    return page;
  }

  private async call(caller: McpCaller, name: string, args: unknown, meta?: Record<string, unknown>): Promise<CallToolResult> {
    // A tool that does not exist is the protocol's error (invalid params), not a tool's result.
    if (!this.deps.catalogue.get(name)) {
      throw new mcp.ProtocolError(
        mcp.ProtocolErrorCode.InvalidParams,
        `Unknown tool: ${JSON.stringify(String(name).slice(0, 200))} (search_tools finds tools).`,
      );
    }
    const key = meta?.[IDEMPOTENCY_META];
    if (key !== undefined && typeof key !== 'string') {
      throw new mcp.ProtocolError(mcp.ProtocolErrorCode.InvalidParams, `params._meta["${IDEMPOTENCY_META}"] must be a string.`);
    }
    const r = await callTool(this.deps.dispatcher, this.deps.catalogue, name, args, {
      idempotencyKey: key,
      auth: { principal: caller.principal, token: caller.token },
      requestId: caller.requestId,
      view: caller.view,
      metered: caller.metered,
      onInternalError: (err) => this.deps.log.error({ err, tool: name, requestId: caller.requestId }, 'a tool call failed'),
    });
    // An error carries its body as text only: a client checks structured content against the tool's output schema.
    if (r.isError) return { content: [{ type: 'text', text: JSON.stringify(r.structuredContent) }], isError: true };
    // The result once, as structuredContent; the text is the same JSON when short, else a summary of it.
    return { content: [{ type: 'text', text: resultText(r.structuredContent) }], structuredContent: r.structuredContent };
  }

  /**
   * Answers one HTTP exchange (a front that reads the body itself calls readMcpMessage and serve,
   * so the body is parsed once).
   */
  async fetch(exchange: McpExchange, caller: McpCaller): Promise<McpAnswer> {
    if (exchange.method !== 'POST') {
      const res = jsonRpcError(405, -32000, 'Method not allowed: this endpoint is stateless and answers POST only.');
      res.headers.allow = 'POST';
      return res;
    }
    const read = readMcpMessage(exchange.headers.get('content-type'), exchange.body);
    if ('refused' in read) return read.refused;
    return this.serve(read.message, exchange, caller);
  }

  /** Answers one message (readMcpMessage's) of an authenticated caller. */
  async serve(message: McpMessage, exchange: { url: string; headers: Headers | Record<string, string> }, caller: McpCaller): Promise<McpAnswer> {
    if (message.method === 'subscriptions/listen') {
      // A listen stream needs a connection that stays open; this endpoint answers each request and is done.
      return jsonRpcError(
        200,
        mcp.ProtocolErrorCode.MethodNotFound,
        'Method not found: subscriptions/listen is not served (stateless endpoint).',
        message.id ?? null,
      );
    }
    const authInfo: AuthInfo = { token: caller.token, clientId: caller.principal.keyId ?? '', scopes: [], extra: { caller } };
    const header = headerOf(exchange.headers);
    // The SDK's classification, made once here as its handler makes it (body first, the standard
    // headers as cross-checks): a 2025-era exchange, a 2026-07-28 one, or a refusal.
    const route = mcp.classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: header('mcp-protocol-version'),
      mcpMethodHeader: header('mcp-method'),
      mcpNameHeader: header('mcp-name'),
      body: message,
    });
    if (route.kind === 'legacy') {
      // A 2025-era exchange: the SDK's Server for this request, on a transport of one exchange.
      return serveExchange(mcp, this.server(caller), message, header, authInfo);
    }
    if (route.kind === 'modern' && servesModern(route, header)) {
      return serveModernExchange(mcp, this.server(caller, true), route, authInfo);
    }
    // The rest of the modern path (its refusals included): the SDK's handler, which reads the
    // headers from a Request (the body is handed over parsed; the Request has none).
    const request = new Request(exchange.url, { method: 'POST', headers: exchange.headers });
    return answerOf(await this.modern.fetch(request, { authInfo, parsedBody: message }));
  }

  async close(): Promise<void> {
    await this.modernHandler?.close();
  }
}
