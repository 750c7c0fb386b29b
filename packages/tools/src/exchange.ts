/**
 * One MCP exchange (a POST of one JSON-RPC message, answered with JSON) on the SDK's Server.
 *
 * A 2025-era exchange runs on a transport of its own (OneExchange): the Server runs the protocol
 * on it (its request handlers, the validation of params and results, initialize); the transport
 * carries the one message in and its answer out. It replaces the SDK's
 * WebStandardStreamableHTTPServerTransport, which serves sessions, SSE streams, resumption and
 * batches, and for a stateless JSON exchange wraps the request in a Web Request and the answer in a
 * Web Response that the front then reads back, and parses the answer with zod three times: about a
 * tenth of a tool call's CPU (docs/mcp.md#measurements). The checks that transport makes of such an
 * exchange are made here, with its codes and messages: Accept (406), a JSON-RPC message (-32700),
 * the MCP-Protocol-Version header of a request after initialize (400); a notification or response
 * is accepted with 202.
 *
 * A well-formed 2026-07-28 request runs on the SDK's own per-request transport, as the SDK's
 * createMcpHandler runs it, with its result taken as the message (serveModernExchange); the rest of
 * that revision's traffic stays with createMcpHandler (endpoint.ts).
 */
import type * as McpSdk from '@modelcontextprotocol/server';
import type { AuthInfo, JSONRPCMessage, Server, Transport } from '@modelcontextprotocol/server';

/** An answer of the endpoint, as a front writes it. */
export interface McpAnswer {
  status: number;
  /** Lowercase names. */
  headers: Record<string, string>;
  body: Uint8Array;
}

const NO_BODY = new Uint8Array(0);

const answer = (status: number, body: unknown): McpAnswer => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify(body)),
});

/** A JSON-RPC error as the answer (id null when the request's could not be read, as the SDK's transports answer). */
export const jsonRpcError = (status: number, code: number, message: string, id: unknown = null): McpAnswer =>
  answer(status, { jsonrpc: '2.0', id, error: { code, message } });

class OneExchange implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private settle!: (message: JSONRPCMessage) => void;
  /** The answer to the exchange's request (an answer of the Server's, result or error). */
  readonly answered = new Promise<JSONRPCMessage>((resolve) => (this.settle = resolve));

  constructor(private readonly requestId: string | number) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    // In JSON mode what the Server sends before its answer (progress, logging) has no stream to go on.
    if (('result' in message || 'error' in message) && message.id === this.requestId) this.settle(message);
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
}

/**
 * Answers one 2025-era exchange: `message` (read and parsed by readMcpMessage), the request's
 * headers by lowercase name, a Server made for this exchange.
 */
export async function serveExchange(
  sdk: typeof McpSdk,
  server: Server,
  message: unknown,
  header: (name: string) => string | undefined,
  authInfo: AuthInfo,
): Promise<McpAnswer> {
  const accept = header('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
    return jsonRpcError(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  }
  let parsed: JSONRPCMessage;
  try {
    parsed = sdk.parseJSONRPCMessage(message);
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: Invalid JSON-RPC message');
  }
  const request = 'method' in parsed && 'id' in parsed ? parsed : undefined;
  if (request?.method !== 'initialize') {
    const version = header('mcp-protocol-version');
    if (version !== undefined && !sdk.SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return jsonRpcError(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ${sdk.SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      );
    }
  }
  const transport = new OneExchange(request?.id ?? '');
  await server.connect(transport);
  transport.onmessage?.(parsed, { authInfo });
  if (!request) return { status: 202, headers: {}, body: NO_BODY };
  return answer(200, await transport.answered);
}

/** The 2026-07-28 revision: the one the modern exchanges of this file serve (others go to the SDK's handler). */
export const MODERN_REVISION = '2026-07-28';

/** The parts of a 2026-07-28 route this file reads (the SDK's InboundModernRoute). */
type ModernRoute = Extract<ReturnType<typeof McpSdk.classifyInboundRequest>, { kind: 'modern' }>;

/**
 * Whether a classified 2026-07-28 request is one this file serves: a request (not a notification)
 * of the revision, with the standard headers it must carry present (MCP-Protocol-Version,
 * Mcp-Method; the classifier already checked that they agree with the body) and, for a method whose
 * `Mcp-Name` mirrors the body, that header equal to the body's name as sent (no Base64 sentinel). The
 * rest (a missing or encoded header, another revision, another method with a name) goes to the
 * SDK's handler, which answers it with the revision's own errors.
 */
export function servesModern(route: ModernRoute, header: (name: string) => string | undefined): boolean {
  if (route.messageKind !== 'request' || route.classification.revision !== MODERN_REVISION) return false;
  if (header('mcp-protocol-version') === undefined || header('mcp-method') === undefined) return false;
  const method = route.message.method;
  if (method === 'tools/list' || method === 'server/discover') return true;
  if (method !== 'tools/call') return false;
  const name = (route.message.params as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && header('mcp-name')?.trim() === name && !name.startsWith('=?');
}

type PerRequestTransport = InstanceType<typeof McpSdk.PerRequestHTTPServerTransport>;

/** The SDK's per-request transport, answering a result as the message itself (no Web Response). */
let modernExchangeClass:
  (new (route: ModernRoute, requestId: string | number) => PerRequestTransport & { answered: Promise<JSONRPCMessage> }) | undefined;

function modernExchange(sdk: typeof McpSdk, route: ModernRoute) {
  modernExchangeClass ??= class ModernExchange extends sdk.PerRequestHTTPServerTransport {
    private settle!: (message: JSONRPCMessage) => void;
    /** The result of the exchange's request, when it succeeds. */
    readonly answered = new Promise<JSONRPCMessage>((resolve) => (this.settle = resolve));

    constructor(
      route: ModernRoute,
      private readonly requestId: string | number,
    ) {
      super({ classification: route.classification, responseMode: 'json' });
    }

    override async send(message: JSONRPCMessage, options?: Parameters<PerRequestTransport['send']>[1]): Promise<void> {
      // A result: the answer as it is. An error (of the revision's ladder, with its HTTP status, or
      // a handler's) and anything else: the SDK's transport, as createMcpHandler serves it.
      if ('result' in message && message.id === this.requestId) return this.settle(message);
      return super.send(message, options);
    }
  };
  return new modernExchangeClass(route, (route.message as { id: string | number }).id);
}

/**
 * Answers one 2026-07-28 request that servesModern accepted, on the Server made for it (listing the
 * revision among its versions, so that it answers server/discover and binds to the revision): the
 * SDK's per-request transport with the route's classification, as createMcpHandler serves it, but
 * with the request's headers read once and a result answered without a Web Response.
 */
export async function serveModernExchange(sdk: typeof McpSdk, server: Server, route: ModernRoute, authInfo: AuthInfo): Promise<McpAnswer> {
  const transport = modernExchange(sdk, route);
  await server.connect(transport);
  const done = transport.handleMessage(route.message, { authInfo });
  const out = await Promise.race([transport.answered, done]);
  if (!(out instanceof Response)) return answer(200, out);
  const headers: Record<string, string> = {};
  out.headers.forEach((value, name) => (headers[name] = value));
  return { status: out.status, headers, body: new Uint8Array(await out.arrayBuffer()) };
}
