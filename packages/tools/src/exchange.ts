/**
 * One 2025-era MCP exchange (a POST of one JSON-RPC message, answered with JSON) as an SDK
 * transport: the SDK's Server runs the protocol on it (its request handlers, the validation of
 * params and results, initialize); this carries the one message in and its answer out.
 *
 * It replaces the SDK's WebStandardStreamableHTTPServerTransport for these exchanges, which serves
 * sessions, SSE streams, resumption and batches, and for a stateless JSON exchange wraps the
 * request in a Web Request and the answer in a Web Response that the front then reads back, and
 * parses the answer with zod three times to find that it is one: about a tenth of a tool call's CPU
 * (docs/mcp.md#measured). The checks that transport makes of such an exchange are made here, with
 * its codes and messages: Accept (406), a JSON-RPC message (-32700), the MCP-Protocol-Version
 * header of a request after initialize (400); a notification or response is accepted with 202.
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
