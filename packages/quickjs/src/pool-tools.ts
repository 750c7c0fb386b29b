import { setMaxListeners } from 'node:events';

import type { ToolCallOut } from './tool-calls.js';

/**
 * Code mode (docs/run-code.md, "Calling tools"): the tools a run's script may call and how. `call`
 * runs one call (outside the sandbox, as the caller) and answers the tool's result as JSON, or the
 * contract's error body with `isError`; `signal` aborts when the run ends (its answer, a kill, an
 * abort), so a call still in flight is given up. The pool holds `maxCalls` and `maxConcurrent`
 * itself (the child does too), and answers past `maxAnswerChars` with an error.
 */
export interface RunTools {
  names: string[];
  maxCalls: number;
  maxConcurrent: number;
  call(name: string, argsJson: string, signal: AbortSignal): Promise<{ json: string; isError: boolean }>;
}

/** The most characters of JSON one tool call may answer into a script (it must also fit the script's memory). */
export const MAX_TOOL_ANSWER_CHARS = 8 * 1024 * 1024;

/** A run's tool calls as the pool counts them: made, in flight, and what aborts them when the run ends. */
export interface ToolCalls {
  made: number;
  inFlight: number;
  abort: AbortController;
}

/**
 * A tool call of a running script: run through the run's tools within its bounds (held here again,
 * whatever the child claims), its answer given to `answer` (which sends it while the same run is
 * in progress). `job.toolCalls` is made on the first call.
 */
export function takeToolCall(
  job: { tools?: RunTools; toolCalls?: ToolCalls },
  call: ToolCallOut,
  answer: (json: string, isError: boolean) => void,
): void {
  const tools = job.tools;
  const refuse = (code: string, message: string) => answer(JSON.stringify({ error: { code, message } }), true);
  if (!tools) return refuse('tool_not_allowed', 'This run has no tools.');
  if (!job.toolCalls) {
    job.toolCalls = { made: 0, inFlight: 0, abort: new AbortController() };
    // Each call in flight may listen for the run's end.
    setMaxListeners(tools.maxCalls + 10, job.toolCalls.abort.signal);
  }
  const state = job.toolCalls;
  if (state.made >= tools.maxCalls) return refuse('tool_call_limit', `A script may make at most ${tools.maxCalls} tool calls.`);
  if (state.inFlight >= tools.maxConcurrent) {
    return refuse('tool_concurrency_limit', `A script may have at most ${tools.maxConcurrent} tool calls in flight.`);
  }
  state.made++;
  state.inFlight++;
  tools.call(call.name, call.argsJson, state.abort.signal).then(
    (r) => {
      state.inFlight--;
      if (r.json.length > MAX_TOOL_ANSWER_CHARS) {
        return refuse(
          'tool_result_too_large',
          `The tool's result is more than ${MAX_TOOL_ANSWER_CHARS} characters of JSON; ask for less (a page, a range).`,
        );
      }
      answer(r.json, r.isError);
    },
    () => {
      state.inFlight--;
      refuse('internal_error', 'The tool call failed.');
    },
  );
}

/** The tool calls a run made, as the pool counted them (not as its child says). */
export const toolCount = (job: { tools?: RunTools; toolCalls?: ToolCalls }): { toolCalls?: number } =>
  job.tools ? { toolCalls: job.toolCalls?.made ?? 0 } : {};
