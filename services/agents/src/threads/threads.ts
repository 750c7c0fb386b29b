import { z } from 'zod';

import { ClientMessageId, ThreadMessageMode } from '@svc/contract';
import { type Actor, actorOf, type Bus, DomainError, newId, parseInput, type Principal, type Queryable, type Sql, visibleName } from '@svc/kit';

import type { AgentRow, AgentStore } from '../agents/store.js';
import type { LiveEvents } from './live.js';
import {
  type ContextMessage,
  type EventRow,
  type InboxRow,
  type InjectMode,
  type NewEvent,
  type Producer,
  type RunRow,
  type ThreadRow,
  ThreadStore,
} from './store.js';

/**
 * Threads: conversations with an agent of the acting account (docs/threads.md). People and agents
 * of the account see its threads (a project-scoped key, its project's); any other thread is not
 * found. Events are appended in the transaction of the change they record, then signalled live.
 * A message starts a run when the thread is idle; while a run works it waits in the inbox for the
 * run's next step boundary (or as the caller's `mode` says).
 */

export const THREAD_ID_RE = /^thr_[0-9a-z]{26}$/;
export const RUN_QUEUE = 'agents.runs';
export const MAX_MESSAGE_CHARS = 32_000;
const MAX_METADATA_BYTES = 16_384;

const threadNotFound = () => new DomainError('not_found', 'thread_not_found', 'Thread not found.');

const Title = visibleName(z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'));
const Metadata = z
  .string()
  .transform((s, ctx) => {
    try {
      const v = JSON.parse(s) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // below
    }
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
    return z.NEVER;
  })
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= MAX_METADATA_BYTES, `must be at most ${MAX_METADATA_BYTES} bytes of JSON`);

export function producerOf(p: Principal): Producer {
  const a: Actor = actorOf(p);
  return { kind: a.kind === 'host' ? 'system' : a.kind, id: a.id, keyId: a.keyId };
}

const encodeCursor = (t: ThreadRow) => Buffer.from(JSON.stringify([t.last_activity_at.toISOString(), t.id])).toString('base64url');
function decodeCursor(c: string | undefined): { at: string; id: string } | undefined {
  if (!c) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(c, 'base64url').toString()) as [string, string];
    if (typeof at === 'string' && !Number.isNaN(Date.parse(at)) && THREAD_ID_RE.test(id)) return { at, id };
  } catch {
    // below
  }
  throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
}

export interface ThreadsDeps {
  sql: Sql;
  agents: AgentStore;
  live: LiveEvents;
  bus: () => Promise<Bus>;
}

/**
 * What a paused run waits for (docs/threads.md, "Approvals"), answered by ApprovalsDomain: a
 * message answers the agent's question; a run that ends otherwise closes its pending requests.
 */
export interface RunWaits {
  answer(q: Queryable, t: ThreadRow, run: RunRow, message: InboxRow): Promise<NewEvent[] | null>;
  close(q: Queryable, runId: string, producer: Producer): Promise<NewEvent[]>;
  withdraw(q: Queryable, runId: string, by: Actor, producer: Producer): Promise<NewEvent[]>;
  wake(runId: string): Promise<void>;
}

export interface InjectResult {
  message: InboxRow;
  status: 'started' | 'pending' | 'queued' | 'answered';
  runId: string | null;
  seq: number;
  /** Mode rollback: the run it rolled back. */
  rolledBackRunId?: string;
}

export class ThreadsDomain {
  readonly store: ThreadStore;
  /** Set by the service once its approvals exist (they build on this domain). */
  waits?: RunWaits;

  constructor(private readonly deps: ThreadsDeps) {
    this.store = new ThreadStore(deps.sql);
  }

  sees(p: Principal, t: ThreadRow): boolean {
    if (p.kind === 'system') return true;
    if (t.account_id !== p.accountId) return false;
    return !p.projectId || t.project_id === p.projectId;
  }

  /** A thread the principal may see, or thread_not_found. */
  async get(p: Principal, id: string): Promise<ThreadRow> {
    const t = THREAD_ID_RE.test(id) ? await this.store.thread(id) : null;
    if (!t || !this.sees(p, t)) throw threadNotFound();
    return t;
  }

  async agentFor(p: Principal, agentId: string | undefined): Promise<AgentRow> {
    if (agentId) {
      const a = await this.deps.agents.byId(agentId);
      const visible = a && (p.kind === 'system' || a.owner_account_id === p.accountId) && (!p.projectId || a.project_id === p.projectId);
      if (!a || !visible) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
      return a;
    }
    if (p.kind === 'agent' && p.agentId) {
      const self = await this.deps.agents.byId(p.agentId);
      if (self) return self;
    }
    const defaults = await this.deps.agents.defaults(p.accountId);
    const first = defaults.find((a) => !p.projectId || a.project_id === p.projectId);
    if (!first) {
      throw new DomainError(
        'unprocessable',
        'no_default_agent',
        'No agentId was given and the account has no default agent: pass agentId, or set one with PUT /default-agents.',
      );
    }
    return first;
  }

  async create(
    p: Principal,
    input: { agentId?: string; title?: string; metadataJson?: string; message?: string },
  ): Promise<{ thread: ThreadRow; runId: string | null }> {
    const title = input.title === undefined ? null : parseInput(Title, input.title, { where: 'title' });
    const metadata = input.metadataJson === undefined ? {} : parseInput(Metadata, input.metadataJson, { where: 'metadata' });
    if (input.message !== undefined) checkMessage(input.message);
    const agent = await this.agentFor(p, input.agentId);
    const producer = producerOf(p);
    const { thread, events, runId } = await this.deps.sql.tx(async (q) => {
      const t = await this.store.insertThread(q, {
        id: newId('thr'),
        account_id: p.accountId,
        project_id: p.projectId ?? agent.project_id ?? null,
        agent_id: agent.id,
        title,
        metadata,
        created_by: actorOf(p),
      });
      const events = await this.append(q, t.id, [{ type: 'thread.created', producer, data: { agentId: agent.id, title, metadata } }]);
      let runId: string | null = null;
      if (input.message !== undefined) {
        const started = await this.startRun(q, t, p, input.message, null);
        runId = started.runId;
        events.push(...started.events);
      }
      return { thread: (await this.store.thread(t.id, q))!, events, runId };
    });
    await this.after(thread.id, events, runId);
    return { thread, runId };
  }

  async list(p: Principal, input: { limit?: number; cursor?: string; agentId?: string; status?: string; tag?: string; archived?: boolean }) {
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    if (input.status !== undefined && input.status !== 'idle' && input.status !== 'running') {
      throw new DomainError('invalid_argument', 'invalid_request', 'status: must be idle or running.');
    }
    const rows = await this.store.listThreads({
      accountId: p.accountId,
      projectId: p.projectId,
      agentId: input.agentId,
      status: input.status,
      tag: input.tag,
      archived: input.archived,
      after: decodeCursor(input.cursor),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : undefined };
  }

  async update(p: Principal, id: string, input: { title?: string; metadataJson?: string; clearTitle?: boolean }): Promise<ThreadRow> {
    const title = input.title === undefined ? undefined : parseInput(Title, input.title, { where: 'title' });
    const metadata = input.metadataJson === undefined ? undefined : parseInput(Metadata, input.metadataJson, { where: 'metadata' });
    if (title === undefined && metadata === undefined && !input.clearTitle) {
      throw new DomainError('invalid_argument', 'invalid_request', 'body: must change at least one field.');
    }
    await this.get(p, id);
    const { thread, events } = await this.deps.sql.tx(async (q) => {
      const t = await this.store.thread(id, q, true);
      if (!t) throw threadNotFound();
      const next = await this.store.updateThread(q, id, {
        title: input.clearTitle ? null : (title ?? t.title),
        metadata: metadata ?? t.metadata,
      });
      const changed: Record<string, unknown> = {};
      if (title !== undefined || input.clearTitle) changed.title = next.title;
      if (metadata !== undefined) changed.metadata = next.metadata;
      const events = await this.append(q, id, [{ type: 'thread.updated', producer: producerOf(p), data: changed }]);
      return { thread: (await this.store.thread(id, q))!, events };
    });
    await this.after(id, events, null);
    return thread;
  }

  /** Deletes the thread: its run is cancelled, its live streams end. */
  async remove(p: Principal, id: string): Promise<string | null> {
    await this.get(p, id);
    const cancelled = await this.deps.sql.tx(async (q) => {
      const t = await this.store.thread(id, q, true);
      if (!t) throw threadNotFound();
      const run = await this.store.activeRun(id, q);
      if (run) await this.store.finishRun(q, run.id, 'cancelled', { code: 'thread_deleted', message: 'The thread was deleted.' });
      if (run) await this.waits?.close(q, run.id, producerOf(p));
      await this.store.markThreadDeleted(q, id);
      return run?.id ?? null;
    });
    await this.deps.live.signal(id, { kind: 'deleted' });
    // Its worker stops the tool or model turn in progress at once (docs/threads.md, "Aborting a tool").
    if (cancelled) (await this.deps.bus()).signal(`agents.run.${cancelled}`, { kind: 'deleted' });
    return cancelled;
  }

  async events(p: Principal, id: string, after: number, limit: number): Promise<{ rows: EventRow[]; nextAfter?: number }> {
    await this.get(p, id);
    if (!Number.isInteger(after) || after < 0)
      throw new DomainError('invalid_argument', 'invalid_request', 'after: must be a whole number, 0 or more.');
    const n = Math.min(Math.max(limit || 50, 1), 200);
    const rows = await this.store.events(id, after, n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextAfter: rows.length > n ? page[page.length - 1]!.seq : undefined };
  }

  async inject(p: Principal, id: string, input: { content: string; mode?: string; clientMessageId?: string }): Promise<InjectResult> {
    checkMessage(input.content);
    const mode = parseInput(ThreadMessageMode, input.mode || 'boundary', { where: 'mode' }) as InjectMode;
    const clientId = input.clientMessageId === undefined ? null : parseInput(ClientMessageId, input.clientMessageId, { where: 'clientMessageId' });
    await this.get(p, id);
    const producer = producerOf(p);
    const result = await this.deps.sql.tx(async (q) => {
      const t = await this.store.thread(id, q, true);
      if (!t) throw threadNotFound();
      if (clientId) {
        const earlier = await this.store.inboxByClientId(q, id, clientId);
        if (earlier && earlier.content !== input.content) {
          throw new DomainError(
            'conflict',
            'client_message_id_conflict',
            `clientMessageId "${clientId}" already names another message of this thread (other content); use a new one for a new message.`,
          );
        }
        if (earlier) return { replay: earlier, seq: (await this.store.messageSeqs(q, id, [earlier.id])).get(earlier.id) ?? 0 };
      }
      const run = await this.store.activeRun(id, q);
      if (!run) {
        const started = await this.startRun(q, t, p, input.content, clientId);
        return { started };
      }
      if (mode === 'rollback') {
        const rolled = await this.rollBack(q, t, run, producer);
        const started = await this.startRun(q, t, p, input.content, clientId, undefined, { mode, rolledBackRunId: run.id });
        return { started: { ...started, events: [...rolled, ...started.events] }, rolledBack: run.id };
      }
      if (run.waiting_for === 'answer') {
        const answered = await this.answerQuestion(q, t, run, input.content, clientId, producer);
        if (answered) return { answered };
      }
      if (mode === 'reject') {
        throw new DomainError('conflict', 'thread_busy', `The thread's run ${run.id} is still working; the message was not taken (mode reject).`);
      }
      const status = mode === 'enqueue' ? 'queued' : 'pending';
      const message = (await this.store.insertInbox(q, {
        id: newId('msg'),
        thread_id: id,
        client_message_id: clientId,
        content: input.content,
        mode,
        status,
        run_id: run.id,
        producer,
      }))!;
      // An interrupt does not wait for a decision: the run's pending approval is withdrawn and the run woken.
      const withdrawn =
        mode === 'interrupt' && run.waiting_for === 'approval' ? ((await this.waits?.withdraw(q, run.id, actorOf(p), producer)) ?? []) : [];
      const events = await this.append(q, id, [
        { type: 'message.injected', runId: run.id, producer, data: { messageId: message.id, role: 'user', content: input.content, mode, status } },
        ...withdrawn,
      ]);
      return { pending: { message, status, runId: run.id, events, woken: withdrawn.length > 0 } };
    });
    if ('replay' in result && result.replay) {
      const m = result.replay;
      const status = m.status === 'queued' ? 'queued' : m.status === 'started' ? 'started' : 'pending';
      // The same answer as the first: the seq of the event that took the message in.
      return { message: m, status, runId: m.run_id, seq: result.seq };
    }
    if ('started' in result && result.started) {
      const s = result.started;
      await this.after(id, s.events, s.runId);
      const rolledBack = 'rolledBack' in result ? result.rolledBack : undefined;
      // The rolled-back run's worker stops its tool or model turn at once, and writes nothing more of the run.
      if (rolledBack) (await this.deps.bus()).signal(`agents.run.${rolledBack}`, { kind: 'rollback' });
      const seq = s.events.find((e) => e.type === 'message.created')!.seq;
      return { message: s.message, status: 'started', runId: s.runId, seq, ...(rolledBack ? { rolledBackRunId: rolledBack } : {}) };
    }
    if ('answered' in result && result.answered) {
      const a = result.answered;
      await this.after(id, a.events, null);
      await this.enqueueAgain(a.runId, a.message.id);
      return { message: a.message, status: 'answered', runId: a.runId, seq: a.events[0]!.seq };
    }
    const pend = (result as { pending: { message: InboxRow; status: 'pending' | 'queued'; runId: string; events: EventRow[]; woken: boolean } })
      .pending;
    await this.after(id, pend.events, null);
    if (mode === 'interrupt') (await this.deps.bus()).signal(`agents.run.${pend.runId}`, { kind: 'interrupt' });
    if (pend.woken) await this.enqueueAgain(pend.runId, pend.message.id);
    return { message: pend.message, status: pend.status, runId: pend.runId, seq: pend.events[0]!.seq };
  }

  async cancel(p: Principal, id: string): Promise<{ runId: string | null; status: 'cancelling' | 'idle' }> {
    await this.get(p, id);
    const run = await this.store.activeRun(id);
    if (!run) return { runId: null, status: 'idle' };
    // The worker holding the run hears the signal at once and aborts the model turn or tool call in
    // progress (docs/threads.md, "Aborting a tool"); the flag written next is what a worker reads
    // that missed it (at its next step, or its lease renewal).
    (await this.deps.bus()).signal(`agents.run.${run.id}`, { kind: 'cancel' });
    await this.store.requestCancel(this.deps.sql, run.id);
    // A run paused for a person has no worker: it is woken, and the worker that takes it ends it.
    if (run.waiting_for) await this.waits?.wake(run.id);
    return { runId: run.id, status: 'cancelling' };
  }

  /**
   * Rolls the thread's working run back (docs/threads.md, "Rollback"), in the caller's transaction
   * that holds the thread's lock: the run ends cancelled with `run.cancelled` and `run.rolled_back`
   * (the seqs of its events, the messages discarded), its messages leave the conversation, and its
   * context is no longer the thread's (lastContext skips it). Nothing is deleted: the events stay.
   */
  private async rollBack(q: Parameters<Parameters<Sql['tx']>[0]>[0], t: ThreadRow, run: RunRow, producer: Producer): Promise<EventRow[]> {
    const span = await this.store.runSpan(q, t.id, run.id);
    const messageIds = await this.store.discardRunMessages(q, t.id, run.id);
    const closed = (await this.waits?.close(q, run.id, producer)) ?? [];
    if (closed.length) await this.append(q, t.id, closed);
    const events = await this.append(q, t.id, [
      { type: 'run.cancelled', runId: run.id, producer, data: { runId: run.id, step: run.step, reason: 'rollback' } },
      {
        type: 'run.rolled_back',
        runId: run.id,
        producer,
        data: { runId: run.id, fromSeq: span?.from ?? null, toSeq: span?.to ?? null, messageIds },
      },
    ]);
    await this.store.rollBackRun(q, run.id, events[1]!.seq);
    return events;
  }

  /**
   * A message to a run paused on its agent's question (ask_person) is the answer: delivered into
   * that run (its tool call's result) rather than waiting for a boundary; the run is woken.
   */
  private async answerQuestion(q: Queryable, t: ThreadRow, run: RunRow, content: string, clientId: string | null, producer: Producer) {
    const message = (await this.store.insertInbox(q, {
      id: newId('msg'),
      thread_id: t.id,
      client_message_id: clientId,
      content,
      mode: 'boundary',
      status: 'delivered',
      run_id: run.id,
      producer,
    }))!;
    const answered = await this.waits?.answer(q, t, run, message);
    if (!answered) return null;
    await this.store.markInbox(q, [message.id], 'delivered', run.id, run.step);
    const events = await this.append(q, t.id, [
      {
        type: 'message.injected',
        runId: run.id,
        producer,
        data: { messageId: message.id, role: 'user', content, mode: 'answer', status: 'delivered' },
      },
      ...answered,
    ]);
    return { message, runId: run.id, events };
  }

  /**
   * A new run of the thread with `content` as its user message: the conversation so far (the
   * context of the thread's last run) plus the message. Enqueued after the commit (after()).
   */
  async startRun(
    q: Parameters<Parameters<Sql['tx']>[0]>[0],
    t: ThreadRow,
    p: Principal,
    content: string,
    clientId: string | null,
    context?: ContextMessage[],
    note?: Record<string, unknown>,
  ) {
    const before = context ?? (await this.store.lastContext(q, t.id));
    const runId = newId('run');
    await this.store.insertRun(q, {
      id: runId,
      thread_id: t.id,
      account_id: t.account_id,
      agent_id: t.agent_id,
      context: [...before, { role: 'user', content }],
      started_by: actorOf(p),
    });
    const producer = producerOf(p);
    const message = (await this.store.insertInbox(q, {
      id: newId('msg'),
      thread_id: t.id,
      client_message_id: clientId,
      content,
      mode: 'boundary',
      status: 'started',
      run_id: runId,
      producer,
    }))!;
    await this.store.setThreadRun(q, t.id, runId);
    const events = await this.append(q, t.id, [
      { type: 'message.created', runId, producer, data: { messageId: message.id, role: 'user', content, ...note } },
      { type: 'run.queued', runId, producer, data: { runId } },
    ]);
    return { runId, message, events };
  }

  append(q: Parameters<Parameters<Sql['tx']>[0]>[0], threadId: string, events: NewEvent[]): Promise<EventRow[]> {
    return this.store.append(q, threadId, events, () => newId('evt'));
  }

  /**
   * A paused run woken (docs/threads.md, "Approvals") back on the work queue: a job of its own
   * (`tag`), since the queue drops a job id it saw in the last two minutes.
   */
  async enqueueAgain(runId: string, tag: string): Promise<void> {
    await (await this.deps.bus()).enqueue(RUN_QUEUE, `${runId}:${tag}`, { runId });
  }

  /** After a commit: the events signalled live, a new run put on the work queue. */
  async after(threadId: string, events: EventRow[], runId: string | null): Promise<void> {
    await this.deps.live.published(threadId, events);
    if (runId) await (await this.deps.bus()).enqueue(RUN_QUEUE, runId, { runId });
  }
}

export function checkMessage(content: string): void {
  if (typeof content !== 'string' || !content.trim()) throw new DomainError('invalid_argument', 'invalid_request', 'content: must not be empty.');
  if (content.length > MAX_MESSAGE_CHARS) {
    throw new DomainError('too_large', 'message_too_large', `content: a message holds at most ${MAX_MESSAGE_CHARS} characters.`);
  }
}
