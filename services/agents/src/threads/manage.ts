import { z } from 'zod';

import { actorOf, containsText, DomainError, newId, parseInput, type Principal, requireAuthority, type Sql, visibleName } from '@svc/kit';

import { ThreadOpsStore } from './manage-store.js';
import type { ContextMessage, EventRow, InboxRow, Producer, RunRow, ThreadRow } from './store.js';
import { checkMessage, producerOf, THREAD_ID_RE, type ThreadsDomain } from './threads.js';

/**
 * Operations on a thread beyond its conversation (docs/threads.md): its messages one by one (a
 * waiting message can be edited or retracted until a run takes it), its runs and tool calls, forks,
 * archive, tags, search, export, usage, waiting for the thread to be idle, retrying a failed run,
 * the restore of a deleted thread (within RESTORE_DAYS). Visibility is the thread's (ThreadsDomain.get).
 */

export const RESTORE_DAYS = 30;
const MAX_TAGS = 20;
const MAX_WAIT_MS = 30_000;
const RUN_ID_RE = /^run_[0-9a-z]{26}$/;
const MSG_ID_RE = /^msg_[0-9a-z]{26}$/;

const Tag = z.string().regex(/^[a-z0-9][a-z0-9_.:-]{0,39}$/, 'must be 1 to 40 characters: a-z, 0-9, _ . : - (starting with a letter or digit)');
const Query = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const Title = visibleName(z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'));

export interface MessageView {
  id: string;
  seq: number;
  role: 'user' | 'assistant';
  content: string;
  runId: string | null;
  status: string;
  producer: unknown;
  createdAt: Date;
  toolCalls: unknown[];
  editedAt: Date | null;
}

const NOT_FOUND = {
  message: ['message_not_found', 'Message not found.'],
  run: ['run_not_found', 'Run not found.'],
  event: ['event_not_found', 'Event not found.'],
} as const;
const notFound = (what: keyof typeof NOT_FOUND) => new DomainError('not_found', NOT_FOUND[what][0], NOT_FOUND[what][1]);

const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
function decodeAt(c: string | undefined): { at: string; id: string } | undefined {
  if (!c) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(c, 'base64url').toString()) as [string, string];
    if (typeof at === 'string' && !Number.isNaN(Date.parse(at)) && typeof id === 'string' && id.length < 40) return { at, id };
  } catch {
    // below
  }
  throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
}
function decodeSeq(c: string | undefined): number {
  if (!c) return 0;
  const n = /^\d{1,15}$/.test(c) ? Number(c) : NaN;
  if (!Number.isSafeInteger(n)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return n;
}
const pageSize = (n: number | undefined, max = 200) => Math.min(Math.max(n || 50, 1), max);
const forkTitle = (src: ThreadRow, title: string | undefined) =>
  title === undefined ? (src.title ? `${src.title} (fork)`.slice(0, 200) : null) : parseInput(Title, title, { where: 'title' });

export class ThreadOps {
  readonly store: ThreadOpsStore;

  constructor(
    private readonly threads: ThreadsDomain,
    private readonly sql: Sql,
  ) {
    this.store = new ThreadOpsStore(sql);
  }

  /** Message events as messages, with the waiting ones' current state from the inbox. */
  viewsOf(threadId: string, events: EventRow[]): Promise<MessageView[]> {
    return this.views(threadId, events);
  }

  /**
   * Message events as messages. A message of a rolled-back run (docs/threads.md, "Rollback") is
   * `rolled_back`: of the runs rolled back by the event `uptoSeq` at the latest, when given.
   */
  private async views(threadId: string, events: EventRow[], uptoSeq?: number): Promise<MessageView[]> {
    const ids = events.filter((e) => e.data.role === 'user').map((e) => String(e.data.messageId));
    const [rows, rolled] = await Promise.all([this.store.inboxRows(threadId, ids), this.threads.store.rolledBackRuns(threadId, uptoSeq)]);
    const inbox = new Map(rows.map((m) => [m.id, m]));
    return events.map((e) => {
      const m = inbox.get(String(e.data.messageId));
      const runId = m?.run_id ?? e.run_id ?? null;
      const status = e.data.role === 'assistant' ? '' : (m?.status ?? 'delivered');
      return {
        id: String(e.data.messageId),
        seq: Number(e.seq),
        role: e.data.role === 'assistant' ? 'assistant' : 'user',
        content: m ? m.content : String(e.data.content ?? ''),
        runId,
        status: runId && rolled.has(runId) ? 'rolled_back' : status === 'rolled_back' && uptoSeq !== undefined ? 'delivered' : status,
        producer: e.producer,
        createdAt: e.created_at,
        toolCalls: Array.isArray(e.data.toolCalls) ? e.data.toolCalls : [],
        editedAt: m?.edited_at ?? null,
      };
    });
  }

  async messages(p: Principal, threadId: string, input: { limit?: number; cursor?: string; role?: string }) {
    await this.threads.get(p, threadId);
    if (input.role !== undefined && input.role !== 'user' && input.role !== 'assistant') {
      throw new DomainError('invalid_argument', 'invalid_request', 'role: must be user or assistant.');
    }
    const n = pageSize(input.limit);
    const rows = await this.store.messageEvents(threadId, decodeSeq(input.cursor), n + 1, input.role);
    const page = rows.slice(0, n);
    return { messages: await this.views(threadId, page), nextCursor: rows.length > n ? String(page[page.length - 1]!.seq) : undefined };
  }

  async message(p: Principal, threadId: string, messageId: string): Promise<MessageView> {
    await this.threads.get(p, threadId);
    const e = MSG_ID_RE.test(messageId) ? await this.store.messageEvent(threadId, messageId) : null;
    if (!e) throw notFound('message');
    return (await this.views(threadId, [e]))[0]!;
  }

  /** A waiting message (pending or queued), locked, or the error saying why it cannot change. */
  private async waitingMessage(q: Parameters<Parameters<Sql['tx']>[0]>[0], threadId: string, messageId: string): Promise<InboxRow> {
    const m = MSG_ID_RE.test(messageId) ? await this.store.inbox(q, threadId, messageId, true) : null;
    if (!m) throw notFound('message');
    if (m.status !== 'pending' && m.status !== 'queued') {
      throw new DomainError('conflict', 'message_not_waiting', `The message is ${m.status}: only a message still waiting for a run can change.`);
    }
    return m;
  }

  async edit(p: Principal, threadId: string, messageId: string, content: string): Promise<MessageView> {
    checkMessage(content);
    await this.threads.get(p, threadId);
    const events = await this.sql.tx(async (q) => {
      if (!(await this.threads.store.lockThread(q, threadId))) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const m = await this.waitingMessage(q, threadId, messageId);
      await this.store.editInbox(q, m.id, content);
      return this.threads.append(q, threadId, [
        { type: 'message.edited', runId: m.run_id, producer: producerOf(p), data: { messageId: m.id, content } },
      ]);
    });
    await this.threads.after(threadId, events, null);
    return this.message(p, threadId, messageId);
  }

  /** Retracts a waiting message; retracting it again changes nothing. */
  async retract(p: Principal, threadId: string, messageId: string): Promise<void> {
    await this.threads.get(p, threadId);
    const events = await this.sql.tx(async (q) => {
      if (!(await this.threads.store.lockThread(q, threadId))) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const m = MSG_ID_RE.test(messageId) ? await this.store.inbox(q, threadId, messageId, true) : null;
      if (m?.status === 'retracted') return [];
      const w = await this.waitingMessage(q, threadId, messageId);
      await this.store.retractInbox(q, w.id);
      return this.threads.append(q, threadId, [{ type: 'message.retracted', runId: w.run_id, producer: producerOf(p), data: { messageId: w.id } }]);
    });
    await this.threads.after(threadId, events, null);
  }

  async pending(p: Principal, threadId: string): Promise<MessageView[]> {
    await this.threads.get(p, threadId);
    const rows = await this.store.waitingAll(threadId);
    const seqs = await this.threads.store.messageSeqs(
      this.sql,
      threadId,
      rows.map((m) => m.id),
    );
    return rows.map((m) => ({
      id: m.id,
      seq: seqs.get(m.id) ?? 0,
      role: 'user' as const,
      content: m.content,
      runId: m.run_id,
      status: m.status,
      producer: m.producer,
      createdAt: m.created_at,
      toolCalls: [],
      editedAt: m.edited_at ?? null,
    }));
  }

  async event(p: Principal, threadId: string, seq: number): Promise<EventRow> {
    await this.threads.get(p, threadId);
    if (!Number.isSafeInteger(seq) || seq < 1)
      throw new DomainError('invalid_argument', 'invalid_request', 'seq: must be a whole number, 1 or more.');
    const e = await this.store.event(threadId, seq);
    if (!e) throw notFound('event');
    return e;
  }

  async runs(p: Principal, threadId: string, input: { limit?: number; cursor?: string }) {
    await this.threads.get(p, threadId);
    const n = pageSize(input.limit);
    const rows = await this.store.runs(threadId, decodeAt(input.cursor), n + 1);
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { runs: page, nextCursor: rows.length > n && last ? encode([last.created_at.toISOString(), last.id]) : undefined };
  }

  async run(p: Principal, threadId: string, runId: string) {
    await this.threads.get(p, threadId);
    const r = RUN_ID_RE.test(runId) ? await this.store.run(threadId, runId) : null;
    if (!r) throw notFound('run');
    return r;
  }

  async toolCalls(p: Principal, threadId: string, runId: string) {
    await this.run(p, threadId, runId);
    return this.store.toolCalls(runId);
  }

  async toolSummary(p: Principal, threadId: string) {
    await this.threads.get(p, threadId);
    return this.store.toolStats(threadId);
  }

  async usage(p: Principal, threadId: string) {
    const t = await this.threads.get(p, threadId);
    const [byModel, runs] = await Promise.all([this.store.usageByModel(threadId), this.store.runs(threadId, undefined, 200)]);
    return { thread: t, byModel, runs };
  }

  /** A new thread holding the conversation up to `atSeq` (the last event when 0): its messages, and their context for its next run. */
  async fork(p: Principal, threadId: string, input: { atSeq?: number; title?: string }): Promise<ThreadRow> {
    const src = await this.threads.get(p, threadId);
    const title = forkTitle(src, input.title);
    const at = Number(input.atSeq || 0) || Number(src.last_seq);
    if (!Number.isSafeInteger(at) || at < 1 || at > Number(src.last_seq)) {
      throw new DomainError('invalid_argument', 'invalid_request', `atSeq: must be a seq of the thread (1 to ${src.last_seq}).`);
    }
    return (await this.forkAt(p, src, at, title)).thread;
  }

  /**
   * Editing a person's earlier message (docs/threads.md, "Editing an earlier message"): a fork
   * holding the conversation just before it, the edited text as the fork's next message (its event
   * names the thread and the message it replaces) and a run on it, in one transaction. The thread
   * itself is never changed. Only the person's own message: an agent's, or another person's, is
   * 422 message_not_editable.
   */
  async editEarlier(p: Principal, threadId: string, messageId: string, input: { content: string; title?: string }) {
    requireAuthority(p, 'Earlier messages are edited');
    checkMessage(input.content);
    const src = await this.threads.get(p, threadId);
    const title = forkTitle(src, input.title);
    const e = MSG_ID_RE.test(messageId) ? await this.store.messageEvent(threadId, messageId) : null;
    if (!e) throw notFound('message');
    const by = e.producer as Producer;
    if (e.data.role !== 'user' || by.kind !== 'human' || by.id !== actorOf(p).id) {
      const whose = e.data.role !== 'user' || by.kind !== 'human' ? 'the agent’s' : 'another person’s';
      throw new DomainError('unprocessable', 'message_not_editable', `The message is ${whose}: only your own messages can be edited.`, {
        role: e.data.role === 'assistant' ? 'assistant' : 'user',
        producer: by.kind,
      });
    }
    const replaced = { threadId, messageId, seq: Number(e.seq) };
    const { thread, started } = await this.forkAt(p, src, replaced.seq - 1, title, { content: input.content, replaced });
    return { thread, runId: started!.runId, messageId: started!.message.id, replacedMessageId: messageId };
  }

  /** The fork of `src` at `at`; with `edit`, its first run on the edited message. */
  private async forkAt(
    p: Principal,
    src: ThreadRow,
    at: number,
    title: string | null,
    edit?: { content: string; replaced: { threadId: string; messageId: string; seq: number } },
  ) {
    // The conversation as it stood at `at`: without the runs rolled back by then (a later rollback does not reach back).
    const history = await this.views(src.id, await this.store.eventsUpTo(src.id, at), at);
    const kept = history.filter((m) => m.status !== 'rolled_back' && (m.role === 'assistant' || m.status !== 'retracted'));
    const context: ContextMessage[] = kept.filter((m) => m.content).map((m) => ({ role: m.role, content: m.content }));
    const producer = producerOf(p);
    const id = newId('thr');
    const forkedFrom = { threadId: src.id, seq: at, ...(edit ? { editedMessageId: edit.replaced.messageId } : {}) };
    const { events, started } = await this.sql.tx(async (q) => {
      await this.store.insertFork(q, {
        id,
        account_id: src.account_id,
        project_id: src.project_id,
        agent_id: src.agent_id,
        title,
        metadata: src.metadata,
        created_by: actorOf(p),
        forked_from_thread_id: src.id,
        forked_at_seq: at,
        base_context: context,
      });
      const events = await this.threads.append(q, id, [
        { type: 'thread.created', producer, data: { agentId: src.agent_id, title, metadata: src.metadata, forkedFrom } },
        ...kept.map((m) => ({
          type: 'message.created',
          producer: m.producer as Producer,
          data: { messageId: newId('msg'), role: m.role, content: m.content, forkedFrom: m.id },
        })),
      ]);
      if (!edit) return { events, started: null };
      const t = (await this.threads.store.thread(id, q, true))!;
      const started = await this.threads.startRun(q, t, p, edit.content, null, context, { editedFrom: edit.replaced });
      return { events: [...events, ...started.events], started };
    });
    await this.threads.after(id, events, started?.runId ?? null);
    return { thread: (await this.threads.store.thread(id))!, started };
  }

  async setArchived(p: Principal, threadId: string, archived: boolean): Promise<ThreadRow> {
    await this.threads.get(p, threadId);
    const { thread, events } = await this.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      if ((t.archived_at !== null) === archived) return { thread: t, events: [] };
      const next = await this.store.setArchived(q, threadId, archived);
      const events = await this.threads.append(q, threadId, [
        { type: archived ? 'thread.archived' : 'thread.unarchived', producer: producerOf(p), data: {} },
      ]);
      return { thread: next, events };
    });
    await this.threads.after(threadId, events, null);
    return events.length ? ((await this.threads.store.thread(threadId)) ?? thread) : thread;
  }

  async tag(p: Principal, threadId: string, rawTag: string, add: boolean): Promise<ThreadRow> {
    const tag = parseInput(Tag, rawTag, { where: 'tag' });
    await this.threads.get(p, threadId);
    return this.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const has = t.tags.includes(tag);
      if (has === add) return t;
      if (add && t.tags.length >= MAX_TAGS) throw new DomainError('unprocessable', 'too_many_tags', `A thread carries at most ${MAX_TAGS} tags.`);
      return this.store.setTags(q, threadId, add ? [...t.tags, tag] : t.tags.filter((x) => x !== tag));
    });
  }

  async tags(p: Principal) {
    return this.store.tagCounts(p.accountId, p.projectId);
  }

  async search(p: Principal, input: { query: string; limit?: number; cursor?: string }) {
    const text = parseInput(Query, input.query ?? '', { where: 'query' });
    const n = pageSize(input.limit, 100);
    const rows = await this.store.search({
      accountId: p.accountId,
      projectId: p.projectId,
      pattern: containsText(text),
      after: decodeAt(input.cursor),
      limit: n + 1,
    });
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { matches: page, nextCursor: rows.length > n && last ? encode([last.last_activity_at.toISOString(), last.id]) : undefined };
  }

  async export(p: Principal, threadId: string, format: string): Promise<{ format: string; content: string; messages: number }> {
    const f = format || 'markdown';
    if (f !== 'markdown' && f !== 'json') throw new DomainError('invalid_argument', 'invalid_request', 'format: must be markdown or json.');
    const t = await this.threads.get(p, threadId);
    const all: MessageView[] = [];
    for (let after = 0; all.length < 5000;) {
      const rows = await this.store.messageEvents(threadId, after, 500);
      all.push(...(await this.views(threadId, rows)));
      if (rows.length < 500) break;
      after = Number(rows[rows.length - 1]!.seq);
    }
    const msgs = all.filter((m) => m.status !== 'retracted' && m.status !== 'rolled_back');
    if (f === 'json') {
      const body = {
        thread: { id: t.id, title: t.title, agentId: t.agent_id, createdAt: t.created_at.toISOString(), metadata: t.metadata, tags: t.tags },
        messages: msgs.map((m) => ({ id: m.id, role: m.role, content: m.content, createdAt: m.createdAt.toISOString(), toolCalls: m.toolCalls })),
      };
      return { format: f, content: JSON.stringify(body, null, 2), messages: msgs.length };
    }
    const lines = [`# ${t.title ?? 'Thread'}`, '', `Thread ${t.id}, agent ${t.agent_id}, started ${t.created_at.toISOString()}.`, ''];
    for (const m of msgs) {
      lines.push(`## ${m.role === 'user' ? 'User' : 'Agent'} (${m.createdAt.toISOString()})`, '', m.content || '_(no text)_', '');
      for (const c of m.toolCalls as { name?: string; arguments?: unknown }[])
        lines.push(`- called \`${c.name}\` with \`${JSON.stringify(c.arguments)}\``);
      if (m.toolCalls.length) lines.push('');
    }
    return { format: f, content: lines.join('\n'), messages: msgs.length };
  }

  async lastReply(p: Principal, threadId: string): Promise<MessageView | null> {
    await this.threads.get(p, threadId);
    const e = await this.store.lastReply(threadId);
    return e ? (await this.views(threadId, [e]))[0]! : null;
  }

  /** Answers once the thread is idle, or when timeoutMs pass (checked every 200 ms). */
  async wait(p: Principal, threadId: string, timeoutMs: number) {
    const ms = timeoutMs || 10_000;
    if (!Number.isInteger(ms) || ms < 0 || ms > MAX_WAIT_MS) {
      throw new DomainError('invalid_argument', 'invalid_request', `timeoutMs: must be 0 to ${MAX_WAIT_MS}.`);
    }
    const end = Date.now() + ms;
    for (;;) {
      const t = await this.threads.get(p, threadId);
      if (t.status === 'idle' || Date.now() >= end) {
        return { thread: t, timedOut: t.status !== 'idle', lastReply: await this.lastReply(p, threadId) };
      }
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(end - Date.now(), 0))));
    }
  }

  /** Runs again the message of the thread's last run when that run failed or was cancelled. */
  async retry(p: Principal, threadId: string): Promise<{ runId: string; retriedRunId: string; messageId: string }> {
    await this.threads.get(p, threadId);
    const r = await this.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      if (t.status !== 'idle') throw new DomainError('conflict', 'thread_busy', 'The thread has a run working: wait for it, or cancel it.');
      const last = await this.store.lastRun(q, threadId);
      if (!last || (last.status !== 'failed' && last.status !== 'cancelled')) {
        throw new DomainError('conflict', 'nothing_to_retry', 'The thread’s last run did not fail and was not cancelled.');
      }
      const msg = await this.store.startingMessage(q, last.id);
      if (!msg) throw new DomainError('conflict', 'nothing_to_retry', 'The last run has no message to run again.');
      const before = await this.store.contextBefore(q, threadId, last.created_at);
      const started = await this.threads.startRun(q, t, p, msg.content, null, before);
      return { started, retried: last.id };
    });
    await this.threads.after(threadId, r.started.events, r.started.runId);
    return { runId: r.started.runId, retriedRunId: r.retried, messageId: r.started.message.id };
  }

  async deleted(p: Principal, input: { limit?: number; cursor?: string }) {
    const n = pageSize(input.limit);
    const rows = await this.store.listDeleted({
      accountId: p.accountId,
      projectId: p.projectId,
      since: new Date(Date.now() - RESTORE_DAYS * 86_400_000),
      after: decodeAt(input.cursor),
      limit: n + 1,
    });
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { threads: page, nextCursor: rows.length > n && last ? encode([last.deleted_at!.toISOString(), last.id]) : undefined };
  }

  async restore(p: Principal, threadId: string): Promise<ThreadRow> {
    const live = THREAD_ID_RE.test(threadId) ? await this.threads.store.thread(threadId) : null;
    if (live && this.threads.sees(p, live)) return live;
    const t = THREAD_ID_RE.test(threadId) ? await this.store.deletedThread(threadId) : null;
    if (!t || !this.threads.sees(p, t) || t.deleted_at!.getTime() < Date.now() - RESTORE_DAYS * 86_400_000) {
      throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
    }
    const events = await this.sql.tx(async (q) => {
      const restored = await this.store.restore(q, threadId);
      if (!restored) return [];
      return this.threads.append(q, threadId, [{ type: 'thread.restored', producer: producerOf(p), data: {} }]);
    });
    await this.threads.after(threadId, events, null);
    return (await this.threads.store.thread(threadId))!;
  }

  async setAgent(p: Principal, threadId: string, agentId: string): Promise<ThreadRow> {
    await this.threads.get(p, threadId);
    const agent = await this.threads.agentFor(p, agentId || '-');
    const events = await this.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      if (t.agent_id === agent.id) return [];
      if (t.status !== 'idle') throw new DomainError('conflict', 'thread_busy', 'The thread has a run working: its agent changes once it is idle.');
      await this.store.setAgent(q, threadId, agent.id);
      return this.threads.append(q, threadId, [{ type: 'thread.updated', producer: producerOf(p), data: { agentId: agent.id } }]);
    });
    await this.threads.after(threadId, events, null);
    return (await this.threads.store.thread(threadId))!;
  }

  async summary(p: Principal, threadId: string) {
    const t = await this.threads.get(p, threadId);
    const [counts, first, reply, failure] = await Promise.all([
      this.store.counts(threadId),
      this.store.firstMessage(threadId),
      this.store.lastReply(threadId),
      this.store.lastFailure(threadId),
    ]);
    const [firstView, replyView] = await this.views(
      threadId,
      [first, reply].filter((e): e is EventRow => !!e),
    );
    return {
      thread: t,
      counts,
      first: first ? firstView! : null,
      lastReply: reply ? (first ? replyView! : firstView!) : null,
      lastError: (failure as RunRow | null)?.error ?? null,
    };
  }
}
