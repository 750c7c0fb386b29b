import type Anthropic from '@anthropic-ai/sdk';

import { invalid, lazy } from '@svc/kit';

import { providerError } from './errors.js';
import type { Adapter, ChatMessage, Conversation, FinishReason, ToolDefinition, Upstream, UpstreamEvent } from './types.js';

type MessageParam = Anthropic.Messages.MessageParam;
type ContentBlock = Anthropic.Messages.ContentBlockParam;

/**
 * The Anthropic adapter, on the official `@anthropic-ai/sdk` (Messages API, streamed). The
 * platform's conversation becomes Anthropic's: system messages join the `system` parameter, an
 * assistant's tool calls become `tool_use` blocks, tool results `tool_result` blocks in a user turn
 * (consecutive ones in one turn), and adjacent turns of one role merge (the API wants them
 * alternating). `max_tokens` is required by the API: the request's, else the model's limit.
 */

const DEFAULT_MAX_TOKENS = 4096;

// The SDK is loaded at the first call (~90 ms of module loading that a start never needs).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = lazy(() => require('@anthropic-ai/sdk') as { default: typeof Anthropic });

function clientFor(u: Upstream): Anthropic {
  return new sdk.default({ apiKey: u.apiKey, baseURL: u.baseUrl, fetch: u.fetch, maxRetries: 0, timeout: 10 * 60_000 });
}

const parseArgs = (json: string): Record<string, unknown> => JSON.parse(json || '{}') as Record<string, unknown>;

export function toAnthropic(messages: ChatMessage[]): { system?: string; messages: MessageParam[] } {
  const system: string[] = [];
  const out: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlock[]) => {
    if (!blocks.length) return;
    const last = out[out.length - 1];
    if (last && last.role === role) (last.content as ContentBlock[]).push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        system.push(m.content);
        break;
      case 'user':
        push('user', m.content ? [{ type: 'text', text: m.content }] : []);
        break;
      case 'assistant':
        push('assistant', [
          ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
          ...m.toolCalls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: parseArgs(c.argumentsJson) })),
        ]);
        break;
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }]);
        break;
      default:
        throw invalid(`messages: role must be system, user, assistant or tool, not "${m.role}".`);
    }
  }
  return { ...(system.length ? { system: system.join('\n\n') } : {}), messages: out };
}

export const toAnthropicTools = (tools: ToolDefinition[]): Anthropic.Messages.Tool[] =>
  tools.map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    input_schema: JSON.parse(t.inputSchemaJson || '{"type":"object"}') as Anthropic.Messages.Tool.InputSchema,
  }));

const FINISH: Record<string, FinishReason> = { end_turn: 'stop', stop_sequence: 'stop', tool_use: 'tool_calls', max_tokens: 'length' };

export const anthropicAdapter: Adapter = async function* (
  upstream: Upstream,
  conv: Conversation,
  signal: AbortSignal,
): AsyncGenerator<UpstreamEvent> {
  const client = clientFor(upstream);
  const { system, messages } = toAnthropic(conv.messages);
  const blocks = new Map<number, { id: string; name: string; json: string }>();
  let inputTokens = 0;
  let outputTokens = 0;
  let stop: string | null = null;
  const calls: UpstreamEvent[] = [];
  try {
    const events = await client.messages.create(
      {
        model: conv.model,
        max_tokens: conv.maxOutputTokens ?? DEFAULT_MAX_TOKENS,
        ...(system !== undefined ? { system } : {}),
        messages,
        ...(conv.tools.length ? { tools: toAnthropicTools(conv.tools) } : {}),
        ...(conv.temperature !== undefined ? { temperature: Math.min(conv.temperature, 1) } : {}),
        stream: true,
      },
      { signal },
    );
    for await (const e of events) {
      switch (e.type) {
        case 'message_start':
          inputTokens =
            e.message.usage.input_tokens + (e.message.usage.cache_read_input_tokens ?? 0) + (e.message.usage.cache_creation_input_tokens ?? 0);
          outputTokens = e.message.usage.output_tokens;
          break;
        case 'content_block_start':
          if (e.content_block.type === 'tool_use') blocks.set(e.index, { id: e.content_block.id, name: e.content_block.name, json: '' });
          else if (e.content_block.type === 'text' && e.content_block.text) yield { delta: e.content_block.text };
          break;
        case 'content_block_delta':
          if (e.delta.type === 'text_delta') yield { delta: e.delta.text };
          else if (e.delta.type === 'input_json_delta') {
            const b = blocks.get(e.index);
            if (b) b.json += e.delta.partial_json;
          }
          break;
        case 'content_block_stop': {
          const b = blocks.get(e.index);
          if (b) {
            // Normalised: the arguments as compact JSON, `{}` when the model sent none.
            const args = b.json.trim() ? JSON.stringify(JSON.parse(b.json)) : '{}';
            const call: UpstreamEvent = { toolCall: { id: b.id, name: b.name, argumentsJson: args } };
            calls.push(call);
            yield call;
          }
          break;
        }
        case 'message_delta':
          if (e.delta.stop_reason) stop = e.delta.stop_reason;
          if (e.usage?.output_tokens !== undefined && e.usage.output_tokens !== null) outputTokens = e.usage.output_tokens;
          if (e.usage?.input_tokens) inputTokens = e.usage.input_tokens;
          break;
        default:
          break;
      }
    }
  } catch (err) {
    throw providerError(err, upstream, conv.model);
  }
  const finishReason: FinishReason = calls.length ? 'tool_calls' : (FINISH[stop ?? 'end_turn'] ?? 'stop');
  yield { end: { inputTokens, outputTokens, finishReason } };
};
