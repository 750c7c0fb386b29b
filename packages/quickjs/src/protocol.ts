import type { RunErrorCode } from './contract.js';
import type { RunLimits } from './limits.js';
import type { ToolAnswer, ToolCallOut, ToolLimits } from './tool-calls.js';

/** A console call the script made. */
export interface LogEntry {
  level: LogLevel;
  /** The arguments, formatted and joined by spaces (strings as they are, other values as readable text). */
  message: string;
}

export const LOG_LEVELS = ['log', 'info', 'warn', 'error', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export { RUN_ERROR_CODES, type RunErrorCode } from './contract.js';

export interface RunError {
  code: RunErrorCode;
  message: string;
  /** The error's name inside the script (`TypeError`, `SyntaxError`, ...), when it threw one. */
  name?: string;
  /** Where in the code (1-based), when known. */
  line?: number;
  column?: number;
  /** The script's stack trace (its own frames only), when it threw an error. */
  stack?: string;
}

/**
 * How the code was run, chosen from what it parses as: `script` (the value of the last
 * expression statement), `module` (`export default`, top-level `await`), `function` (a top-level
 * `return`, the body of an async function).
 */
export type RunMode = 'script' | 'module' | 'function';

/** What a run gave back. */
export interface RunOutcome {
  /** The result as JSON text (`null` when the run failed). */
  resultJson: string | null;
  logs: LogEntry[];
  /** Some console output was left out: it went past the output limit. */
  logsTruncated: boolean;
  error?: RunError;
  mode: RunMode;
  /** Time the script ran, from its start to its answer (or its kill), in milliseconds. */
  durationMs: number;
  /** Tool calls the script made (code mode); absent for a run without tools. */
  toolCalls?: number;
}

// Parent <-> child messages over the IPC channel ------------------------------------------------

export interface RunMessage {
  type: 'run';
  id: number;
  code: string;
  limits: RunLimits;
  /** A JSON object whose members become globals; and whether to compile only (engine.ts RunExtras). */
  globalsJson?: string;
  checkOnly?: boolean;
  /** Code mode: the script gets `svc` and may call tools within these bounds (tool-calls.ts). */
  tools?: ToolLimits;
}

/** The answer to one of a run's tool calls. */
export interface AnswerMessage extends ToolAnswer {
  type: 'answer';
  id: number;
}

export type ParentMessage = RunMessage | AnswerMessage;

export type ChildMessage =
  /** The child has a fresh interpreter ready (first when it starts, then after each run); `rss` its resident bytes. */
  | { type: 'ready'; rss: number }
  | { type: 'done'; id: number; outcome: RunOutcome; rss: number }
  /** A tool call of run `id` (code mode). */
  | ({ type: 'call'; id: number } & ToolCallOut);
