import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** What the tests need of either generation's client. */
export interface McpTestClient {
  listTools(params?: { cursor?: string }): Promise<{ tools: Array<Record<string, any>>; nextCursor?: string }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<Record<string, any>>;
  close(): Promise<void>;
}

const headersOf = (key: string | undefined, extra: Record<string, string> = {}) => ({
  ...(key ? { authorization: `Bearer ${key}` } : {}),
  ...extra,
});

/** A 2025-11-25 client: the v1 SDK (@modelcontextprotocol/sdk), `initialize` over Streamable HTTP. */
export async function legacyClient(url: string, key: string, headers: Record<string, string> = {}): Promise<McpTestClient> {
  const client = new LegacyClient({ name: 'svc-test-2025', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(`${url}/mcp`), { requestInit: { headers: headersOf(key, headers) } });
  await client.connect(transport);
  return client as unknown as McpTestClient;
}

/** A 2026-07-28 client: the v2 SDK (@modelcontextprotocol/client), pinned to the modern revision (server/discover, no initialize). */
export async function modernClient(url: string, key: string, headers: Record<string, string> = {}): Promise<McpTestClient> {
  const client = new ModernClient({ name: 'svc-test-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const transport = new ModernTransport(new URL(`${url}/mcp`), { requestInit: { headers: headersOf(key, headers) } });
  await client.connect(transport);
  return client as unknown as McpTestClient;
}

/** Every tool, page by page. */
export async function listAll(client: McpTestClient): Promise<{ tools: Array<Record<string, any>>; pages: number }> {
  const tools: Array<Record<string, any>> = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  return { tools, pages };
}

/** A JSON-RPC POST to /mcp by hand (what a client library would not send). */
export async function rawPost(
  url: string,
  body: unknown,
  opts: { key?: string; headers?: Record<string, string>; method?: string; query?: string } = {},
): Promise<{ status: number; body: any; headers: Headers; bytes: number }> {
  const res = await fetch(`${url}/mcp${opts.query ? `?${opts.query}` : ''}`, {
    method: opts.method ?? 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headersOf(opts.key, opts.headers) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed, headers: res.headers, bytes: Buffer.byteLength(text) };
}

/** The structured result of a tool call, or its error body (a tool error carries it as text). */
export function outcome(result: Record<string, any>): { isError: boolean; body: any } {
  if (result.isError) return { isError: true, body: JSON.parse(result.content[0].text) };
  return { isError: false, body: result.structuredContent };
}
