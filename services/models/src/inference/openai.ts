import type OpenAI from 'openai';

import { invalid, lazy } from '@svc/kit';

import { providerError } from './errors.js';
import {
  type Adapter,
  type ChatMessage,
  type Conversation,
  estimateTokens,
  type FinishReason,
  type ToolDefinition,
  type Upstream,
  type UpstreamEvent,
} from './types.js';

type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ToolParam = OpenAI.Chat.Completions.ChatCompletionTool;

/**
 * The OpenAI-compatible adapter, on the official `openai` SDK (Chat Completions, streamed): OpenAI
 * itself, an account's OpenAI-compatible server, the first-party model's server, and the
 * development model. Tool calls arrive in fragments (an index, then the id and name, then pieces of
 * the arguments) and are yielded whole when the stream ends.
 */

/** Clients are reused per base URL and key (connections stay open); not those with a pinned fetch. */
const clients = new Map<string, OpenAI>();
const CLIENTS_MAX = 64;

// The SDK is loaded at the first call (~60 ms of module loading that a start never needs).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = lazy(() => require('openai') as { default: typeof OpenAI });

function clientFor(u: Upstream): OpenAI {
  const make = () => new sdk.default({ apiKey: u.apiKey, baseURL: u.baseUrl, fetch: u.fetch, maxRetries: 0, timeout: 10 * 60_000 });
  if (u.fetch) return make();
  const key = `${u.baseUrl ?? ''}\n${u.apiKey}`;
  let c = clients.get(key);
  if (!c) {
    if (clients.size >= CLIENTS_MAX) clients.delete(clients.keys().next().value!);
    c = make();
    clients.set(key, c);
  }
  return c;
}

export function toOpenAIMessages(messages: ChatMessage[]): MessageParam[] {
  return messages.map((m): MessageParam => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        return { role: 'user', content: m.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: m.content || (m.toolCalls.length ? null : ''),
          ...(m.toolCalls.length
            ? {
                tool_calls: m.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.argumentsJson || '{}' },
                })),
              }
            : {}),
        };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
      default:
        throw invalid(`messages: role must be system, user, assistant or tool, not "${m.role}".`);
    }
  });
}

export const toOpenAITools = (tools: ToolDefinition[]): ToolParam[] =>
  tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description || undefined, parameters: JSON.parse(t.inputSchemaJson || '{"type":"object"}') },
  }));

const FINISH: Record<string, FinishReason> = { stop: 'stop', tool_calls: 'tool_calls', function_call: 'tool_calls', length: 'length' };

export const openaiAdapter: Adapter = async function* (upstream: Upstream, conv: Conversation, signal: AbortSignal): AsyncGenerator<UpstreamEvent> {
  const client = clientFor(upstream);
  const messages = toOpenAIMessages(conv.messages);
  const limit =
    conv.maxOutputTokens === undefined
      ? {}
      : upstream.maxCompletionTokens
        ? { max_completion_tokens: conv.maxOutputTokens }
        : { max_tokens: conv.maxOutputTokens };
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let finish: string | null = null;
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  let text = '';
  try {
    const chunks = await client.chat.completions.create(
      {
        model: conv.model,
        messages,
        ...(conv.tools.length ? { tools: toOpenAITools(conv.tools) } : {}),
        ...(conv.temperature !== undefined ? { temperature: conv.temperature } : {}),
        ...limit,
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal },
    );
    for await (const chunk of chunks) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const d = choice.delta;
      if (d?.content) {
        text += d.content;
        yield { delta: d.content };
      }
      for (const tc of d?.tool_calls ?? []) {
        let c = calls.get(tc.index);
        if (!c) calls.set(tc.index, (c = { id: '', name: '', args: '' }));
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.name += tc.function.name;
        if (tc.function?.arguments) c.args += tc.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  } catch (err) {
    throw providerError(err, upstream, conv.model);
  }
  const ordered = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
  for (const [i, c] of ordered.entries()) {
    yield { toolCall: { id: c.id || `call_${i + 1}`, name: c.name, argumentsJson: c.args || '{}' } };
  }
  const finishReason = ordered.length ? 'tool_calls' : (FINISH[finish ?? 'stop'] ?? 'stop');
  yield {
    end: {
      inputTokens: usage?.prompt_tokens ?? estimateTokens(JSON.stringify(messages)),
      outputTokens: usage?.completion_tokens ?? estimateTokens(text + ordered.map((c) => c.name + c.args).join('')),
      finishReason,
    },
  };
};
