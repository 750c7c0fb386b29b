import {
  type ApprovalRow,
  type ApprovalStore,
  ASK_PERSON,
  type EventRow,
  needsApproval,
  newApprovalId,
  type NewEvent,
  requestEvent,
  type RunRow,
  type ThreadStore,
  WITHDRAWN_BY_INTERRUPT,
} from '@svc/agents';
import type { Queryable } from '@svc/kit';

import { type ModelToolCall, parseArgs, type ToolOutcome } from './tool-step.js';

/**
 * Before a tool call (docs/threads.md, "Approvals", "Questions to a person"): a call of a tool the
 * thread's approval policy names, and the agent's `ask_person`, wait for a person. The first time,
 * the request is recorded and the run paused in one transaction (`approval.requested` or
 * `question.asked`; the worker lets the run go). Once the person answered and a worker resumed the
 * run from its checkpoint: an approved call runs (with the person's arguments when edited), a
 * rejected or expired one is answered with a tool error the model sees, a question with its answer;
 * one an interrupting message withdrew is not begun, as a call after an interrupt.
 */

export type Gate =
  /** Execute the call (its arguments as approved). */
  | { kind: 'go'; call: ModelToolCall }
  /** Its result without executing it (rejected, expired, answered). */
  | { kind: 'answer'; outcome: ToolOutcome }
  /** The run waits for a person: this worker stops working it. */
  | { kind: 'pause' }
  /** A cancel was asked for before the run could pause: the call is not begun. */
  | { kind: 'cancelled' }
  /** An interrupting message withdrew the request: the call and the step's next ones are not begun, then the message is delivered. */
  | { kind: 'interrupted' };

type Tx = <T>(fn: (q: Queryable, emit: (events: NewEvent[]) => Promise<EventRow[]>) => Promise<T>) => Promise<T>;

export interface GateDeps {
  threads: ThreadStore;
  approvals: ApprovalStore;
  worker: string;
  ttlSeconds: number;
}

export async function gate(
  d: GateDeps,
  run: RunRow,
  step: number,
  call: ModelToolCall,
  patterns: string[],
  allowed: (name: string) => boolean,
  tx: Tx,
): Promise<Gate> {
  const asking = call.name === ASK_PERSON && allowed(ASK_PERSON);
  if (!asking && !needsApproval(patterns, call.name)) return { kind: 'go', call };
  const args = parseArgs(call.argumentsJson);
  const requestId = `${run.id}:${call.id}`;
  if (asking && typeof args?.question !== 'string') {
    return answer(d, run, step, call, { error: { code: 'invalid_request', message: 'question: must be a string.', requestId } }, true);
  }
  const earlier = await d.approvals.forCall(d.approvals.sql, run.id, call.id);
  if (!earlier || earlier.status === 'pending') return pause(d, run, step, call, asking, args, tx);
  return decided(d, run, step, call, earlier, requestId);
}

/** Records the request (once) and lets the run wait; the answer wakes it. */
async function pause(d: GateDeps, run: RunRow, step: number, call: ModelToolCall, asking: boolean, args: unknown, tx: Tx): Promise<Gate> {
  const paused = await tx(async (q, emit) => {
    const { row, fresh } = await d.approvals.insert(q, {
      id: newApprovalId(),
      kind: asking ? 'question' : 'approval',
      thread_id: run.thread_id,
      run_id: run.id,
      account_id: run.account_id,
      agent_id: run.agent_id,
      call_id: call.id,
      step,
      tool: call.name,
      arguments: args ?? null,
      ttlSeconds: d.ttlSeconds,
    });
    if (row.status !== 'pending') return row;
    if (!(await d.approvals.pauseRun(q, run.id, d.worker, asking ? 'answer' : 'approval'))) return null;
    if (fresh) await emit([requestEvent(row, { kind: 'agent', id: run.agent_id, keyId: null })]);
    return 'paused' as const;
  });
  if (paused === 'paused') return { kind: 'pause' };
  // Decided meanwhile (a person was quick): go on with the decision. Else a cancel came first.
  if (paused) return decided(d, run, step, call, paused, `${run.id}:${call.id}`);
  return { kind: 'cancelled' };
}

function decided(d: GateDeps, run: RunRow, step: number, call: ModelToolCall, a: ApprovalRow, requestId: string): Promise<Gate> | Gate {
  if (a.status === 'approved') {
    const edited = a.edited_arguments;
    return { kind: 'go', call: edited === null || edited === undefined ? call : { ...call, argumentsJson: JSON.stringify(edited) } };
  }
  if (a.status === 'cancelled' && a.reason === WITHDRAWN_BY_INTERRUPT) return { kind: 'interrupted' };
  if (a.status === 'answered') return answer(d, run, step, call, { answer: a.answer, messageId: a.answer_message_id }, false);
  const details = { approvalId: a.id, reason: a.reason };
  const error =
    a.status === 'rejected'
      ? { code: 'tool_rejected', message: `A person rejected this call${a.reason ? `: ${a.reason}` : '.'}`, requestId, details }
      : a.status === 'expired'
        ? {
            code: a.kind === 'question' ? 'question_expired' : 'approval_expired',
            message:
              a.kind === 'question'
                ? 'No person answered the question before it expired.'
                : 'No person approved this call before the approval expired; it was not run.',
            requestId,
            details,
          }
        : { code: 'approval_cancelled', message: 'The request was closed before a person answered it; the call was not run.', requestId, details };
  return answer(d, run, step, call, { error }, true);
}

/** A result recorded without executing the call (its row first, as for any call; an earlier result wins). */
async function answer(d: GateDeps, run: RunRow, step: number, call: ModelToolCall, result: unknown, isError: boolean): Promise<Gate> {
  const fresh = await d.threads.startToolCall({ run_id: run.id, call_id: call.id, step, name: call.name, arguments: parseArgs(call.argumentsJson) });
  const earlier = fresh ? null : await d.threads.toolCall(run.id, call.id);
  if (earlier?.status === 'done') {
    return { kind: 'answer', outcome: { call, result: earlier.result, isError: earlier.is_error, aborted: null, recorded: true } };
  }
  return { kind: 'answer', outcome: { call, result, isError, aborted: null, recorded: false } };
}
