import type { models_infer } from '@svc/proto';

export type ChatMessage = models_infer.ChatMessage;
export type ToolCall = models_infer.ToolCall;
export type ToolDefinition = models_infer.ToolDefinition;

export type FinishReason = 'stop' | 'tool_calls' | 'length';

/** What an adapter sends: the conversation, in the platform's shape, for one upstream model. */
export interface Conversation {
  /** The model's name at the upstream (`gpt-4o`, `claude-sonnet-4-0`, `svc/dev`). */
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  temperature?: number;
  maxOutputTokens?: number;
}

/** Where an adapter sends it, with which key. */
export interface Upstream {
  /** The provider as errors name it (`openai`, `anthropic`, `svc`, `openai-compatible`). */
  provider: string;
  /** The SDK's base URL; undefined: the SDK's default (the provider's public API). */
  baseUrl?: string;
  apiKey: string;
  /** The account's own provider key: a refusal of it is the account's `provider_key_invalid`. */
  ownKey: boolean;
  /** How to make HTTP requests (pinned to checked addresses for a custom baseUrl); default global fetch. */
  fetch?: typeof fetch;
  /** OpenAI wire: send `max_completion_tokens` (OpenAI's own API) rather than `max_tokens` (compatible servers). */
  maxCompletionTokens?: boolean;
}

/** What an adapter yields: text as it comes, each tool call whole, then how it ended. */
export type UpstreamEvent =
  { delta: string } | { toolCall: ToolCall } | { end: { inputTokens: number; outputTokens: number; finishReason: FinishReason } };

export type Adapter = (upstream: Upstream, conversation: Conversation, signal: AbortSignal) => AsyncIterable<UpstreamEvent>;

/** A token count when an upstream gives none: one per 4 characters, rounded up. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);
