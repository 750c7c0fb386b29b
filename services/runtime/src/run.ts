import {
  type AgentRow,
  type AgentStore,
  type ApprovalsDomain,
  type ContextMessage,
  type EventRow,
  type LiveEvents,
  type NewEvent,
  type Producer,
  RUN_QUEUE,
  type RunRow,
  type ThreadStore,
} from '@svc/agents';
import { type Bus, DomainError, newId, type Principal, type Queryable, type Sql, type Subscription } from '@svc/kit';

import { type Gate, gate } from './approval-step.js';
import { RunControl, RunEnded } from './control.js';
import { type Infer, modelTurn } from './model-step.js';
import type { RuntimeSettings } from './settings.js';
import { execTool, type ModelToolCall, notBegun, parseArgs, toolMessage, type ToolOutcome, toolResultEvent } from './tool-step.js';
import type { AgentTools } from './tools.js';

/**
 * Executes one run (docs/threads.md, "Runs"): steps of one model turn and then its tool calls,
 * each step checkpointed in PostgreSQL before the next begins. Messages injected while it works
 * are delivered at the next step boundary. A worker that takes over a run continues from its last
 * checkpoint; a tool call is recorded before it is executed, so one that completed is never
 * executed again. A cancel, an interrupt or a rollback aborts the model turn or the tool call in
 * progress at once (RunControl), as the tool's abort mode allows.
 */

export type { Infer } from './model-step.js';

export interface RunDeps {
  sql: Sql;
  threads: ThreadStore;
  agents: AgentStore;
  approvals: ApprovalsDomain;
  live: LiveEvents;
  bus: Bus;
  infer: Infer;
  tools: AgentTools;
  settings: RuntimeSettings;
  worker: string;
  log: { warn(obj: unknown, msg: string): void; error(obj: unknown, msg: string): void };
}

const SYSTEM: Producer = { kind: 'system', id: 'runtime', keyId: null };

/** Tool calls of the last assistant message that have no result in the context yet. */
export function unanswered(context: ContextMessage[]): NonNullable<ContextMessage['toolCalls']> {
  for (let i = context.length - 1; i >= 0; i--) {
    const m = context[i]!;
    if (m.role === 'assistant') {
      const answered = new Set(context.slice(i + 1).map((x) => x.toolCallId));
      return (m.toolCalls ?? []).filter((c) => !answered.has(c.id));
    }
  }
  return [];
}

/** The context with a call's arguments as a person edited them: what the model sees it called. */
function withArguments(context: ContextMessage[], call: ModelToolCall): ContextMessage[] {
  return context.map((m) =>
    m.role === 'assistant' && m.toolCalls?.some((c) => c.id === call.id)
      ? { ...m, toolCalls: m.toolCalls.map((c) => (c.id === call.id ? { ...c, argumentsJson: call.argumentsJson } : c)) }
      : m,
  );
}

export class RunExecutor {
  /** Runs this worker executes now: a second job for one of them (a redelivery, a sweep) is dropped. */
  private readonly inHand = new Set<string>();

  constructor(private readonly deps: RunDeps) {}

  /** Executes the run if this worker can take it; returns when it ended or was left to another worker. */
  async execute(runId: string, working: () => void): Promise<void> {
    if (this.inHand.has(runId)) return;
    this.inHand.add(runId);
    try {
      await this.take(runId, working);
    } finally {
      this.inHand.delete(runId);
    }
  }

  private async take(runId: string, working: () => void): Promise<void> {
    const d = this.deps;
    // Listening before the claim: a cancel sent between the two is not missed (the claim reads it too).
    let state: RunControl | undefined;
    const early: unknown[] = [];
    const control: Subscription = await d.bus.listen(`agents.run.${runId}`, (data) => (state ? state.heard(data) : early.push(data)));
    let lease: NodeJS.Timeout | undefined;
    try {
      const run = await d.threads.claimRun(runId, d.worker, d.settings.SVC_RUN_LEASE_MS);
      // Finished, or another worker holds it (if that one dies, the sweep puts the run back on the queue).
      if (!run) return;
      const thread = await d.threads.thread(run.thread_id);
      if (!thread) {
        await d.threads.finishRun(d.sql, run.id, 'cancelled', { code: 'thread_deleted', message: 'The thread was deleted.' });
        return;
      }
      const agent = await d.agents.byId(run.agent_id);
      const st = (state = new RunControl(run.cancel_requested));
      for (const data of early) st.heard(data);
      lease = setInterval(
        () => {
          working();
          d.threads.renewLease(d.sql, run.id, d.worker, d.settings.SVC_RUN_LEASE_MS).then(
            (held) => st.renewed(held),
            () => {},
          );
        },
        Math.floor(d.settings.SVC_RUN_LEASE_MS / 3),
      );
      await this.work(run, agent, thread.project_id, st);
    } finally {
      clearInterval(lease);
      await control.unsubscribe();
    }
  }

  private async work(run: RunRow, agent: AgentRow | null, projectId: string | null, state: RunControl): Promise<void> {
    const d = this.deps;
    try {
      if (!agent) return await this.fail(run, { code: 'agent_not_found', message: 'The thread’s agent was deleted.' });
      await this.append(run, [
        run.step === 0
          ? { type: 'run.started', runId: run.id, producer: SYSTEM, data: { runId: run.id, agentId: agent.id, worker: d.worker } }
          : { type: 'run.resumed', runId: run.id, producer: SYSTEM, data: { runId: run.id, fromStep: run.step, worker: d.worker } },
      ]);
      await this.loop(run, agent, projectId, state);
    } catch (err) {
      if (err instanceof RunEnded || state.ended) return;
      const e = err instanceof DomainError ? err : undefined;
      if (!e) d.log.error({ err, runId: run.id }, 'run failed');
      await this.fail(run, { code: e?.code ?? 'internal_error', message: e?.message ?? 'The run failed on an internal error.' }).catch(() => {});
    }
  }

  private async loop(run: RunRow, agent: AgentRow, projectId: string | null, state: RunControl) {
    const d = this.deps;
    const principal: Principal = { kind: 'agent', agentId: agent.id, accountId: run.account_id, projectId: projectId ?? undefined, channel: 'mcp' };
    const maxSteps = agent.max_steps ?? d.settings.SVC_RUN_MAX_STEPS;
    const maxTokens = agent.max_tokens_per_run ?? d.settings.SVC_RUN_MAX_TOKENS;
    const model = agent.model || d.settings.SVC_DEFAULT_MODEL;
    let context = run.context;
    let step = run.step;
    let tokens = Number(run.input_tokens) + Number(run.output_tokens);
    for (;;) {
      // A step's tool calls (also those of a step a worker that stopped had begun).
      const calls = unanswered(context);
      if (calls.length) {
        const patterns = await d.approvals.patternsFor(agent.id, run.thread_id);
        for (const [i, asked] of calls.entries()) {
          if (!state.cancel) await this.renew(run);
          // A call that needs a person waits for one (approval-step.ts): the run pauses, and a worker resumes it.
          const g = state.stopping ? ({ kind: 'go', call: asked } as const) : await this.gate(run, step, asked, patterns, agent);
          if (g.kind === 'pause') return;
          if (g.kind === 'cancelled') state.cancel = true;
          // Withdrawn by an interrupting message: this call and the step's next ones are not begun (execTool), then it is delivered.
          if (g.kind === 'interrupted') state.interrupt = true;
          const call = g.kind === 'go' ? g.call : asked;
          if (call !== asked) context = withArguments(context, call);
          const o = g.kind === 'answer' ? g.outcome : await execTool(d, run, step, principal, agent, call, state);
          if (o.aborted === 'cancel' && !o.recorded) {
            // The cancel ends the run with this call and the ones after it, never begun, in one commit.
            return this.cancelAfter(run, step, context, [o, ...calls.slice(i + 1).map((c) => notBegun(d.tools, run, c, 'cancel'))]);
          }
          context = await this.recordTool(run, step, context, o);
          if (state.ended) throw new RunEnded();
        }
        continue;
      }
      if (state.ended) throw new RunEnded();
      // A cancel already heard ends the run at once (the ending transaction checks the run is still this worker's).
      if (!state.cancel) await this.renew(run);
      if (state.cancel || (await d.threads.run(run.id))?.cancel_requested) return this.cancelAfter(run, step, context, []);
      state.interrupt = false;
      context = await this.deliverInjections(run, step, context);
      const last = context[context.length - 1];
      if (step > 0 && last?.role === 'assistant') {
        // The model answered and nothing waits: the run is done, unless a message arrived meanwhile.
        if (await this.complete(run, step)) return;
        context = await this.deliverInjections(run, step, context);
        continue;
      }
      if (step >= maxSteps) throw new DomainError('unprocessable', 'max_steps', `The run reached its limit of ${maxSteps} steps.`);
      if (tokens >= maxTokens) throw new DomainError('unprocessable', 'max_tokens', `The run reached its limit of ${maxTokens} tokens.`);
      step++;
      const turn = await modelTurn(this.deps, run, step, model, agent, context, principal, state);
      if (turn.interrupted) {
        // Cut short by an injection or a cancel: the partial answer is dropped; the step is taken again.
        step--;
        await this.append(run, [{ type: 'run.step', runId: run.id, producer: SYSTEM, data: { runId: run.id, step: step + 1, interrupted: true } }]);
        continue;
      }
      const u = turn.usage;
      const usage = {
        model: u?.model || model,
        inputTokens: Number(u?.inputTokens ?? 0),
        outputTokens: Number(u?.outputTokens ?? 0),
        cost: u?.cost || '0',
        currency: u?.currency || 'credits',
      };
      tokens += usage.inputTokens + usage.outputTokens;
      const message: ContextMessage = { role: 'assistant', content: turn.text, ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}) };
      context = [...context, message];
      const producer: Producer = { kind: 'agent', id: agent.id, keyId: null };
      await this.tx(run, async (q, emit) => {
        await d.threads.checkpoint(q, run.id, { step, context, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cost: usage.cost });
        await d.threads.addUsage(q, run.thread_id, usage);
        await emit([
          {
            type: 'message.created',
            runId: run.id,
            producer,
            data: {
              messageId: newId('msg'),
              role: 'assistant',
              content: turn.text,
              step,
              toolCalls: turn.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: parseArgs(c.argumentsJson) })),
              finishReason: u?.finishReason || 'stop',
            },
            usage,
          },
          ...turn.toolCalls.map((c): NewEvent => ({
            type: 'tool.called',
            runId: run.id,
            producer,
            data: { runId: run.id, step, callId: c.id, name: c.name, arguments: parseArgs(c.argumentsJson) },
          })),
          { type: 'run.step', runId: run.id, producer: SYSTEM, data: { runId: run.id, step, toolCalls: turn.toolCalls.length, usage } },
        ]);
      });
    }
  }

  private gate(run: RunRow, step: number, call: ModelToolCall, patterns: string[], agent: AgentRow): Promise<Gate> {
    const d = this.deps;
    const deps = { threads: d.threads, approvals: d.approvals.store, worker: d.worker, ttlSeconds: d.settings.SVC_RUN_APPROVAL_TTL_SECONDS };
    return gate(
      deps,
      run,
      step,
      call,
      patterns,
      (name) => d.tools.allows(agent.tools, name),
      (fn) => this.tx(run, fn),
    );
  }

  /**
   * Records a call's outcome with its `tool.result` and the step's checkpoint. A run rolled back
   * while its tool ran still records what became of the call (this worker held it), without a
   * checkpoint. Written once: a result recorded before (or by a worker that took the run over) is not.
   */
  private async recordTool(run: RunRow, step: number, context: ContextMessage[], o: ToolOutcome): Promise<ContextMessage[]> {
    const d = this.deps;
    const next: ContextMessage[] = [...context, toolMessage(o)];
    await this.tx(
      run,
      async (q, emit, status) => {
        const recorded = o.recorded || (await d.threads.finishToolCall(q, run.id, o.call.id, o.result, o.isError, o.aborted !== null));
        if (!recorded) return;
        if (status === 'running') await d.threads.checkpoint(q, run.id, { step, context: next, inputTokens: 0, outputTokens: 0, cost: '0' });
        await emit([toolResultEvent(run, step, o)]);
      },
      'held',
    );
    return next;
  }

  /**
   * Ends the run cancelled in the transaction that records the step's calls the cancel stopped or
   * kept from beginning (one commit: the cancel is over as soon as the tool answers its abort).
   */
  private async cancelAfter(run: RunRow, step: number, context: ContextMessage[], outcomes: ToolOutcome[]): Promise<void> {
    const d = this.deps;
    await this.end(run, 'cancelled', null, async (q) => {
      let next = context;
      const events: NewEvent[] = [];
      for (const o of outcomes) {
        if (o.unrecorded) {
          const args = parseArgs(o.call.argumentsJson);
          await d.threads.startToolCall({ run_id: run.id, call_id: o.call.id, step, name: o.call.name, arguments: args }, q);
        }
        if (!o.recorded && !(await d.threads.finishToolCall(q, run.id, o.call.id, o.result, o.isError, o.aborted !== null))) continue;
        next = [...next, toolMessage(o)];
        if (!o.recorded) events.push(toolResultEvent(run, step, o));
      }
      await d.threads.checkpoint(q, run.id, { step, context: next, inputTokens: 0, outputTokens: 0, cost: '0' });
      return [...events, { type: 'run.cancelled', runId: run.id, producer: SYSTEM, data: { runId: run.id, step } }];
    });
  }

  /** Pending injected messages into the context, in their order, each with an injection.delivered event. */
  private async deliverInjections(run: RunRow, step: number, context: ContextMessage[]): Promise<ContextMessage[]> {
    const d = this.deps;
    return this.tx(run, async (q, emit) => {
      const pending = await d.threads.waiting(q, run.thread_id, 'pending');
      if (!pending.length) return context;
      await d.threads.markInbox(
        q,
        pending.map((m) => m.id),
        'delivered',
        run.id,
        step,
      );
      const next: ContextMessage[] = [...context, ...pending.map((m) => ({ role: 'user' as const, content: m.content }))];
      await d.threads.checkpoint(q, run.id, { step, context: next, inputTokens: 0, outputTokens: 0, cost: '0' });
      await emit(
        pending.map((m) => ({
          type: 'injection.delivered',
          runId: run.id,
          producer: SYSTEM,
          data: { messageId: m.id, runId: run.id, step, mode: m.mode },
        })),
      );
      return next;
    });
  }

  /**
   * Ends the run as completed unless a message is waiting for it (then false: deliver it and go on).
   * Messages queued for after the run start the next one.
   */
  private async complete(run: RunRow, step: number): Promise<boolean> {
    const d = this.deps;
    // The transaction holds the thread's lock (tx): no message can arrive between the look and the end.
    const done = await this.tx(run, async (q, emit) => {
      if ((await d.threads.waiting(q, run.thread_id, 'pending')).length) return null;
      const finished = await d.threads.finishRun(q, run.id, 'completed', null);
      if (!finished) throw new RunEnded();
      const events: NewEvent[] = [
        {
          type: 'run.completed',
          runId: run.id,
          producer: SYSTEM,
          data: {
            runId: run.id,
            steps: step,
            usage: { inputTokens: Number(finished.input_tokens), outputTokens: Number(finished.output_tokens), cost: String(finished.cost) },
          },
        },
      ];
      const next = await this.nextRun(q, finished);
      if (next) events.push({ type: 'run.queued', runId: next, producer: SYSTEM, data: { runId: next, after: run.id } });
      else await d.threads.setThreadRun(q, run.thread_id, null);
      await emit(events);
      return { next };
    });
    if (!done) return false;
    if (done.next) await d.bus.enqueue(RUN_QUEUE, done.next, { runId: done.next });
    return true;
  }

  /** A run of the messages queued (mode enqueue) while `after` worked, if any. */
  private async nextRun(q: Queryable, after: RunRow): Promise<string | null> {
    const d = this.deps;
    const queued = await d.threads.waiting(q, after.thread_id, 'queued');
    if (!queued.length) return null;
    const id = newId('run');
    await d.threads.insertRun(q, {
      id,
      thread_id: after.thread_id,
      account_id: after.account_id,
      agent_id: after.agent_id,
      context: [...after.context, ...queued.map((m) => ({ role: 'user' as const, content: m.content }))],
      started_by: after.started_by,
    });
    await d.threads.markInbox(
      q,
      queued.map((m) => m.id),
      'started',
      id,
      0,
    );
    await d.threads.setThreadRun(q, after.thread_id, id);
    return id;
  }

  private async fail(run: RunRow, error: { code: string; message: string }): Promise<void> {
    await this.end(run, 'failed', error, async () => [{ type: 'run.failed', runId: run.id, producer: SYSTEM, data: { runId: run.id, error } }]);
  }

  /** Ends the run failed or cancelled with the events `before` writes first in the same transaction. */
  private async end(
    run: RunRow,
    status: 'failed' | 'cancelled',
    error: { code: string; message: string } | null,
    before: (q: Queryable) => Promise<NewEvent[]>,
  ) {
    const d = this.deps;
    const out = await this.tx(run, async (q, emit) => {
      const events = await before(q);
      const finished = await d.threads.finishRun(q, run.id, status, error);
      if (!finished) return null;
      events.unshift(...(await d.approvals.close(q, run.id, SYSTEM)));
      const next = await this.nextRun(q, finished);
      if (!next) await d.threads.setThreadRun(q, run.thread_id, null);
      const all = [...events, ...(next ? [{ type: 'run.queued', runId: next, producer: SYSTEM, data: { runId: next, after: run.id } }] : [])];
      await emit(all);
      return { next };
    });
    if (!out) return;
    if (out.next) await d.bus.enqueue(RUN_QUEUE, out.next, { runId: out.next });
  }

  private async renew(run: RunRow): Promise<void> {
    if (!(await this.deps.threads.renewLease(this.deps.sql, run.id, this.deps.worker, this.deps.settings.SVC_RUN_LEASE_MS))) throw new RunEnded();
  }

  /**
   * Whether this worker may still write for the run, in a transaction that holds the thread's row
   * lock (taken first, as every writer of the thread takes it, so the run's status cannot change
   * under it): `running` while it works the run; `held` once it was ended from outside while this
   * worker held it (a rollback: what became of its tool call is still recorded).
   */
  private async mayWrite(q: Queryable, run: RunRow, guard: 'running' | 'held'): Promise<RunRow['status'] | null> {
    const r = await this.deps.threads.lockForRun(q, run.thread_id, run.id);
    if (!r || r.worker !== this.deps.worker) return null;
    return guard === 'held' || r.status === 'running' ? r.status : null;
  }

  private async append(run: RunRow, events: NewEvent[]): Promise<void> {
    await this.tx(run, (_q, emit) => emit(events));
  }

  /**
   * A transaction of the run's worker, whose appended events (`emit`) are signalled live once it
   * commits. A worker that may no longer write for the run (mayWrite) writes nothing: RunEnded.
   */
  private async tx<T>(
    run: RunRow,
    fn: (q: Queryable, emit: (events: NewEvent[]) => Promise<EventRow[]>, status: RunRow['status']) => Promise<T>,
    guard: 'running' | 'held' = 'running',
  ): Promise<T> {
    const rows: EventRow[] = [];
    const out = await this.deps.sql.tx(async (q) => {
      const status = await this.mayWrite(q, run, guard);
      if (!status) throw new RunEnded();
      return fn(
        q,
        async (events) => {
          const r = await this.deps.threads.append(q, run.thread_id, events, () => newId('evt'));
          rows.push(...r);
          return r;
        },
        status,
      );
    });
    await this.deps.live.published(run.thread_id, rows);
    return out;
  }
}
