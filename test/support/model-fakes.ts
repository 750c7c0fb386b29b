import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local fakes of the model providers, speaking their real wire protocols over plain HTTP: OpenAI's
 * Chat Completions (JSON, and SSE `data:` chunks ending `[DONE]`) and Anthropic's Messages API
 * (named SSE events: message_start, content_block_*, message_delta, message_stop; `event: error`
 * inside a stream). Each records what it was sent, so tests assert our request shape, and answers
 * per a queue of plans (default: a short text), so tests choose text, tool calls or an error.
 */

export interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export type Plan =
  | { text: string; usage?: { input: number; output: number } }
  | { toolCalls: Array<{ id: string; name: string; arguments: string }>; text?: string; usage?: { input: number; output: number } }
  | { status: number; body: unknown; headers?: Record<string, string> }
  /** Some text, then a failure inside the stream. */
  | { text: string; failMidStream: true };

export interface FakeProvider {
  /** The base URL to give the SDK (`…/v1` for OpenAI, the origin for Anthropic). */
  baseUrl: string;
  port: number;
  requests: Recorded[];
  /** Plans for the next requests, in order; once used up, a default text answer. */
  next(...plans: Plan[]): void;
  close(): Promise<void>;
}

async function start(handle: (req: Recorded, res: http.ServerResponse, plan: Plan) => void, base: (port: number) => string): Promise<FakeProvider> {
  const requests: Recorded[] = [];
  const queue: Plan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : null };
      requests.push(rec);
      handle(rec, res, queue.shift() ?? { text: 'Hello from the fake.' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: base(port),
    port,
    requests,
    next: (...plans) => queue.push(...plans),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const words = (text: string) => text.match(/\S+\s*|\s+/g) ?? [];

/** A fake OpenAI (Chat Completions): POST /v1/chat/completions. */
export function fakeOpenAI(): Promise<FakeProvider> {
  return start(
    (req, res, plan) => {
      if (req.path !== '/v1/chat/completions' || req.method !== 'POST') {
        return json(res, 404, { error: { message: `Unknown path ${req.path}`, type: 'invalid_request_error', param: null, code: null } });
      }
      if ('status' in plan) return json(res, plan.status, plan.body, plan.headers);
      const model = req.body.model;
      const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model, system_fingerprint: 'fp_fake' };
      const calls = 'toolCalls' in plan ? plan.toolCalls : [];
      const text = plan.text ?? '';
      const usage = 'usage' in plan && plan.usage ? plan.usage : { input: 11, output: 7 };
      const finish = calls.length ? 'tool_calls' : 'stop';
      if (!req.body.stream) {
        return json(res, 200, {
          ...base,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: text || null,
                ...(calls.length
                  ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
                  : {}),
              },
              finish_reason: finish,
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
        });
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (choices: unknown[], extra: object = {}) => res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
      send([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]);
      for (const w of words(text)) send([{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }]);
      if ('failMidStream' in plan) {
        // What OpenAI sends when a stream fails after it started: an error object as a data line.
        res.end(
          `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } })}\n\n`,
        );
        return;
      }
      calls.forEach((c, index) => {
        send([
          {
            index: 0,
            delta: { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] },
            finish_reason: null,
          },
        ]);
        for (let i = 0; i < c.arguments.length; i += 5) {
          send([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: c.arguments.slice(i, i + 5) } }] }, finish_reason: null }]);
        }
      });
      send([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]);
      if (req.body.stream_options?.include_usage) {
        send([], { usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } });
      }
      res.end('data: [DONE]\n\n');
    },
    (port) => `http://127.0.0.1:${port}/v1`,
  );
}

/** A fake Anthropic (Messages API): POST /v1/messages. */
export function fakeAnthropic(): Promise<FakeProvider> {
  return start(
    (req, res, plan) => {
      if (req.path !== '/v1/messages' || req.method !== 'POST') {
        return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `Unknown path ${req.path}` } });
      }
      if ('status' in plan) return json(res, plan.status, plan.body, { 'request-id': 'req_fake', ...plan.headers });
      const calls = 'toolCalls' in plan ? plan.toolCalls : [];
      const text = plan.text ?? '';
      const usage = 'usage' in plan && plan.usage ? plan.usage : { input: 13, output: 9 };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_fake' });
      const send = (event: string, data: object) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
      send('message_start', {
        message: {
          id: 'msg_fake',
          type: 'message',
          role: 'assistant',
          content: [],
          model: req.body.model,
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage.input, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      });
      let index = 0;
      if (text) {
        send('content_block_start', { index, content_block: { type: 'text', text: '' } });
        send('ping', {});
        for (const w of words(text)) send('content_block_delta', { index, delta: { type: 'text_delta', text: w } });
        if ('failMidStream' in plan) {
          res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
          return;
        }
        send('content_block_stop', { index });
        index++;
      }
      for (const c of calls) {
        send('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
        for (let i = 0; i < c.arguments.length; i += 4) {
          send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: c.arguments.slice(i, i + 4) } });
        }
        send('content_block_stop', { index });
        index++;
      }
      send('message_delta', {
        delta: { stop_reason: calls.length ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      });
      send('message_stop', {});
      res.end();
    },
    (port) => `http://127.0.0.1:${port}`,
  );
}
