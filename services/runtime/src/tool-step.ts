import type { AgentRow, ContextMessage, NewEvent, RunRow, ThreadStore } from '@svc/agents';
import type { Principal } from '@svc/kit';

import { abortedResult, type AbortMode, type RunControl, type StopReason } from './control.js';
import type { AgentTools } from './tools.js';

/**
 * One tool call of a run's step (docs/threads.md, "Tool calls once", "Aborting a tool"): executed
 * at most once (recorded before it runs), stopped as its abort mode allows when the run is told to
 * stop, never begun once it was told. The caller (RunExecutor) records the outcome.
 */

export interface ModelToolCall {
  id: string;
  name: string;
  argumentsJson: string;
}

export interface ToolOutcome {
  call: ModelToolCall;
  result: unknown;
  isError: boolean;
  /** What stopped it (or kept it from beginning), or null. */
  aborted: StopReason | null;
  /** Its result was recorded before (a call a worker that stopped had completed): reused, not written again. */
  recorded: boolean;
  /** It has no row yet (a call never begun, recorded together with the run's end). */
  unrecorded?: boolean;
}

export function parseArgs(json: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(json || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Executes a call once: its row is written first; an earlier row is the answer (or `tool_interrupted`). */
export async function execTool(
  deps: { threads: ThreadStore; tools: AgentTools },
  run: RunRow,
  step: number,
  principal: Principal,
  agent: AgentRow,
  call: ModelToolCall,
  state: RunControl,
): Promise<ToolOutcome> {
  const args = parseArgs(call.argumentsJson);
  const requestId = `${run.id}:${call.id}`;
  const mode: AbortMode = deps.tools.abortMode(call.name, args);
  const fresh = await deps.threads.startToolCall({ run_id: run.id, call_id: call.id, step, name: call.name, arguments: args });
  const earlier = fresh ? null : await deps.threads.toolCall(run.id, call.id);
  const out = (result: unknown, isError: boolean, aborted: StopReason | null = null): ToolOutcome => ({
    call,
    result,
    isError,
    aborted,
    recorded: false,
  });
  if (earlier?.status === 'done') {
    const reason = (earlier.result as { error?: { details?: { reason?: StopReason } } } | null)?.error?.details?.reason;
    return { ...out(earlier.result, earlier.is_error, earlier.aborted ? (reason ?? 'cancel') : null), recorded: true };
  }
  if (earlier) {
    const message = 'The worker running this call stopped before it answered; it may or may not have taken effect.';
    return out({ error: { code: 'tool_interrupted', message, requestId } }, true);
  }
  // Told to stop before this call began (a stop during an earlier call of the step).
  const stopping = state.stopping;
  if (stopping) return out(abortedResult(stopping, false, mode, requestId), true, stopping);
  if (args === undefined) return out({ error: { code: 'invalid_request', message: 'arguments: must be a JSON object.', requestId } }, true);
  const abort = mode === 'finish' ? undefined : state.startTool();
  let r: Awaited<ReturnType<AgentTools['call']>>;
  try {
    r = await deps.tools.call(principal, agent.tools, call.name, args, requestId, abort?.signal);
  } finally {
    state.endTool();
  }
  // A call that answered before it saw the abort keeps its answer; one the abort stopped is `tool_aborted`.
  const why = abort?.signal.aborted ? state.stopping : null;
  if (why && r.isError) return out(abortedResult(why, true, mode, requestId), true, why);
  return out(r.structuredContent, r.isError);
}

/** A call of the step the run will not begin: it is cancelled (recorded with the run's end). */
export function notBegun(tools: AgentTools, run: RunRow, call: ModelToolCall, reason: StopReason): ToolOutcome {
  const result = abortedResult(reason, false, tools.abortMode(call.name, parseArgs(call.argumentsJson)), `${run.id}:${call.id}`);
  return { call, result, isError: true, aborted: reason, recorded: false, unrecorded: true };
}

/** The call's result as the model sees it next. */
export const toolMessage = (o: ToolOutcome): ContextMessage => ({
  role: 'tool',
  content: JSON.stringify(o.result),
  toolCallId: o.call.id,
  name: o.call.name,
});

export const toolResultEvent = (run: RunRow, step: number, o: ToolOutcome): NewEvent => ({
  type: 'tool.result',
  runId: run.id,
  producer: { kind: 'tool', id: o.call.name, keyId: null },
  data: {
    runId: run.id,
    step,
    callId: o.call.id,
    name: o.call.name,
    isError: o.isError,
    result: o.result,
    ...(o.aborted ? { aborted: true, abortedBy: o.aborted } : {}),
  },
});
