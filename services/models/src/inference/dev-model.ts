import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The development model `svc/dev` (docs/models.md, "The development model"): a deterministic
 * stand-in for a language model, so that a thread runs with no provider and no network, and tests
 * repeat. It is served as an OpenAI-compatible HTTP server (POST /v1/chat/completions, JSON or SSE)
 * on loopback inside the models service, and reached through the same `openai` SDK adapter as any
 * OpenAI-compatible upstream: the adapter's request and parsing are exercised on every dev run.
 *
 * What it answers, from the conversation (OpenAI chat messages):
 * - after tool results (tool messages after the last user message): a summary of them;
 * - a last user message with `/tool <name> <json-args>` lines: those tool calls, one per line;
 * - otherwise `dev: <the last user message>`.
 * Token counts are a fixed rule (a token per 4 characters, rounded up), so usage is deterministic too.
 */

/** The slice of an OpenAI chat message the development model reads. */
export interface DevMessage {
  role: string;
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface DevAnswer {
  text: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

/** How the development model counts tokens: one per 4 characters, rounded up. */
export const devTokens = (text: string): number => Math.ceil(text.length / 4);

const TOOL_LINE = /^\/tool[ \t]+(\S+)[ \t]*(.*)$/;

function textOf(content: DevMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
  return '';
}

/** The development model's answer to a conversation. Pure: the same messages give the same answer. */
export function devAnswer(messages: DevMessage[]): DevAnswer {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') {
      lastUser = i;
      break;
    }
  }
  if (lastUser < 0) return { text: 'dev: (no user message)', toolCalls: [] };
  const after = messages.slice(lastUser + 1);
  const results = after.filter((m) => m.role === 'tool');
  if (results.length) {
    const names = new Map<string, string>();
    for (const m of after) for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name);
    const lines = results.map((r) => `- ${names.get(r.tool_call_id ?? '') ?? 'tool'}: ${textOf(r.content)}`);
    return { text: `dev: ${results.length} tool result${results.length === 1 ? '' : 's'}:\n${lines.join('\n')}`, toolCalls: [] };
  }
  const said = textOf(messages[lastUser]!.content);
  const prior = messages.reduce((n, m) => n + (m.tool_calls?.length ?? 0), 0);
  const toolCalls: DevAnswer['toolCalls'] = [];
  for (const line of said.split(/\r?\n/)) {
    const m = TOOL_LINE.exec(line.trim());
    if (!m) continue;
    const args = m[2]!.trim() || '{}';
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch (err) {
      return { text: `dev: the arguments of /tool ${m[1]} are not JSON (${(err as Error).message})`, toolCalls: [] };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return { text: `dev: the arguments of /tool ${m[1]} must be a JSON object`, toolCalls: [] };
    }
    toolCalls.push({ id: `call_dev_${prior + toolCalls.length + 1}`, name: m[1]!, arguments: JSON.stringify(parsed) });
  }
  if (toolCalls.length) return { text: '', toolCalls };
  return { text: `dev: ${said}`, toolCalls: [] };
}

interface ChatRequest {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
}

const BODY_MAX = 16 * 1024 * 1024;

/** An OpenAI-style error answer. */
function fail(res: http.ServerResponse, status: number, message: string, type = 'invalid_request_error'): void {
  const body = JSON.stringify({ error: { message, type, param: null, code: null } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > BODY_MAX) return undefined;
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Pieces of a text as a model would stream them: a word and the space after it. */
const pieces = (text: string): string[] => text.match(/\S+\s*|\s+/g) ?? [];

function answerOf(body: ChatRequest, messages: DevMessage[]) {
  const answer = devAnswer(messages);
  const limit = Number(body.max_completion_tokens ?? body.max_tokens) || undefined;
  let finish: 'stop' | 'tool_calls' | 'length' = answer.toolCalls.length ? 'tool_calls' : 'stop';
  let text = answer.text;
  if (limit !== undefined && !answer.toolCalls.length && devTokens(text) > limit) {
    text = text.slice(0, limit * 4);
    finish = 'length';
  }
  const input = devTokens(messages.map((m) => textOf(m.content) + (m.tool_calls ?? []).map((c) => c.function.arguments).join('')).join(''));
  const output = devTokens(text + answer.toolCalls.map((c) => c.name + c.arguments).join(''));
  return { text, toolCalls: answer.toolCalls, finish, usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } };
}

async function serve(req: http.IncomingMessage, res: http.ServerResponse, apiKey: string): Promise<void> {
  if (req.url?.split('?')[0] !== '/v1/chat/completions') return fail(res, 404, `Unknown path ${req.url}.`);
  if (req.method !== 'POST') return fail(res, 405, 'Use POST.');
  if (req.headers.authorization !== `Bearer ${apiKey}`) return fail(res, 401, 'Invalid API key.', 'authentication_error');
  const raw = await readBody(req);
  if (raw === undefined) return fail(res, 413, 'The request is too large.');
  let body: ChatRequest;
  try {
    body = JSON.parse(raw) as ChatRequest;
  } catch {
    return fail(res, 400, 'The body is not JSON.');
  }
  if (!Array.isArray(body.messages)) return fail(res, 400, 'messages: must be an array.');
  if (body.model !== 'svc/dev') return fail(res, 404, `The model ${String(body.model)} does not exist.`);
  const a = answerOf(body, body.messages as DevMessage[]);
  const id = 'chatcmpl-dev';
  const created = 0;
  const model = 'svc/dev';
  if (body.stream !== true) {
    const message = {
      role: 'assistant',
      content: a.toolCalls.length ? null : a.text,
      ...(a.toolCalls.length
        ? { tool_calls: a.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
        : {}),
    };
    const json = JSON.stringify({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, finish_reason: a.finish, logprobs: null }],
      usage: a.usage,
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const chunk = (delta: object, finish: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' });
  for (const p of pieces(a.text)) chunk({ content: p });
  a.toolCalls.forEach((c, index) => {
    // As providers do: the id and name first, the arguments in fragments after.
    chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
    const half = Math.ceil(c.arguments.length / 2);
    for (const part of [c.arguments.slice(0, half), c.arguments.slice(half)])
      if (part) chunk({ tool_calls: [{ index, function: { arguments: part } }] });
  });
  chunk({}, a.finish);
  if (body.stream_options?.include_usage === true) {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: a.usage })}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

export interface DevModelServer {
  /** The OpenAI base URL (`http://127.0.0.1:<port>/v1`). */
  url: string;
  /** The bearer token it takes (random per start): nothing else on the host can use it. */
  apiKey: string;
  close(): Promise<void>;
}

/** Starts the development model's server on loopback, on a free port. */
export async function startDevModelServer(): Promise<DevModelServer> {
  const apiKey = `dev-${randomBytes(24).toString('base64url')}`;
  const server = http.createServer((req, res) => {
    serve(req, res, apiKey).catch((err: Error) => {
      if (!res.headersSent) fail(res, 500, err.message, 'server_error');
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    apiKey,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
