import { z } from 'zod';

import { containsText, DomainError, parseInput, type Principal, type Sql } from '@svc/kit';

import { ThreadExtrasStore } from './activity-store.js';
import type { MessageView, ThreadOps } from './manage.js';
import type { EventRow, ThreadRow } from './store.js';
import { producerOf, type ThreadsDomain } from './threads.js';

/**
 * Account-wide and housekeeping thread operations (docs/threads.md): searching one thread's
 * messages, merging into its metadata, clearing its waiting messages, asking and waiting, the
 * account's runs and usage per agent, a thread's participants, archiving idle threads.
 */

const MAX_METADATA_BYTES = 16_384;
const RUN_STATUS = ['queued', 'running', 'completed', 'failed', 'cancelled'];
const AGENT_ID_RE = /^agt_[0-9a-z]{26}$/;
const EVENT_TYPE_RE = /^[a-z_]+\.[a-z_]+$/;
const Query = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** RFC 7396: null removes a member, an object merges into an object, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function parseSince(since: string | undefined): Date | null {
  if (since === undefined || since === '') return null;
  const d = new Date(since);
  if (Number.isNaN(d.getTime())) throw new DomainError('invalid_argument', 'invalid_request', 'since: must be an ISO 8601 date-time.');
  return d;
}

const encode = (at: Date, id: string) => Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
function decode(c: string | undefined): { at: string; id: string } | undefined {
  if (!c) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(c, 'base64url').toString()) as [string, string];
    if (typeof at === 'string' && !Number.isNaN(Date.parse(at)) && typeof id === 'string' && id.length < 40) return { at, id };
  } catch {
    // below
  }
  throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
}

export class ThreadExtras {
  readonly store: ThreadExtrasStore;

  constructor(
    private readonly threads: ThreadsDomain,
    private readonly ops: ThreadOps,
    private readonly sql: Sql,
  ) {
    this.store = new ThreadExtrasStore(sql);
  }

  async searchMessages(p: Principal, threadId: string, query: string, limit: number): Promise<MessageView[]> {
    const text = parseInput(Query, query ?? '', { where: 'query' });
    await this.threads.get(p, threadId);
    const rows = await this.store.searchMessages(threadId, containsText(text), Math.min(Math.max(limit || 20, 1), 100));
    return this.ops.viewsOf(threadId, rows);
  }

  async patchMetadata(p: Principal, threadId: string, patchJson: string): Promise<ThreadRow> {
    let patch: unknown;
    try {
      patch = JSON.parse(patchJson);
    } catch {
      patch = undefined;
    }
    if (!isObject(patch)) throw new DomainError('invalid_argument', 'invalid_request', 'body: must be a JSON object (a merge patch).');
    await this.threads.get(p, threadId);
    const { events } = await this.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const metadata = mergePatch(t.metadata, patch) as Record<string, unknown>;
      if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
        throw new DomainError('invalid_argument', 'invalid_request', `metadata: must be at most ${MAX_METADATA_BYTES} bytes of JSON.`);
      }
      if (JSON.stringify(metadata) === JSON.stringify(t.metadata)) return { events: [] as EventRow[] };
      await this.threads.store.updateThread(q, threadId, { title: t.title, metadata });
      const events = await this.threads.append(q, threadId, [{ type: 'thread.updated', producer: producerOf(p), data: { metadata } }]);
      return { events };
    });
    await this.threads.after(threadId, events, null);
    return (await this.threads.store.thread(threadId))!;
  }

  /** Retracts every message still waiting for a run. */
  async clearPending(p: Principal, threadId: string): Promise<string[]> {
    await this.threads.get(p, threadId);
    const { ids, events } = await this.sql.tx(async (q) => {
      if (!(await this.threads.store.lockThread(q, threadId))) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const waiting = [...(await this.threads.store.waiting(q, threadId, 'pending')), ...(await this.threads.store.waiting(q, threadId, 'queued'))];
      for (const m of waiting) await this.ops.store.retractInbox(q, m.id);
      const events = await this.threads.append(
        q,
        threadId,
        waiting.map((m) => ({ type: 'message.retracted', runId: m.run_id, producer: producerOf(p), data: { messageId: m.id } })),
      );
      return { ids: waiting.map((m) => m.id), events };
    });
    await this.threads.after(threadId, events, null);
    return ids;
  }

  /** Sends a message (enqueued after a working run) and waits, at most timeoutMs, for the thread to be idle. */
  async ask(p: Principal, threadId: string, content: string, timeoutMs: number) {
    const ms = timeoutMs || 20_000;
    if (!Number.isInteger(ms) || ms < 100 || ms > 30_000)
      throw new DomainError('invalid_argument', 'invalid_request', 'timeoutMs: must be 100 to 30000.');
    const sent = await this.threads.inject(p, threadId, { content, mode: 'enqueue' });
    const waited = await this.ops.wait(p, threadId, ms);
    const reply = waited.lastReply && waited.lastReply.seq > sent.seq ? waited.lastReply : null;
    return { messageId: sent.message.id, runId: sent.runId, status: sent.status, timedOut: waited.timedOut, reply };
  }

  async accountRuns(p: Principal, input: { limit?: number; cursor?: string; status?: string; agentId?: string }) {
    if (input.status !== undefined && !RUN_STATUS.includes(input.status)) {
      throw new DomainError('invalid_argument', 'invalid_request', `status: must be one of ${RUN_STATUS.join(', ')}.`);
    }
    if (input.agentId !== undefined && !AGENT_ID_RE.test(input.agentId)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'agentId: must be an agent id (agt_…).');
    }
    const n = Math.min(Math.max(input.limit || 50, 1), 200);
    const rows = await this.store.accountRuns({
      accountId: p.accountId,
      projectId: p.projectId,
      status: input.status,
      agentId: input.agentId,
      before: decode(input.cursor),
      limit: n + 1,
    });
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { runs: page, nextCursor: rows.length > n && last ? encode(last.created_at, last.id) : undefined };
  }

  async usage(p: Principal, since?: string) {
    return this.store.usageByAgent(p.accountId, p.projectId, parseSince(since));
  }

  async participants(p: Principal, threadId: string) {
    await this.threads.get(p, threadId);
    return this.store.participants(threadId);
  }

  /** Archives the idle threads without activity for `olderThanDays` (at most 500 a call). */
  async archiveIdle(p: Principal, olderThanDays: number, agentId?: string): Promise<string[]> {
    if (!Number.isInteger(olderThanDays) || olderThanDays < 0 || olderThanDays > 3650) {
      throw new DomainError('invalid_argument', 'invalid_request', 'olderThanDays: must be 0 to 3650.');
    }
    if (agentId !== undefined && !AGENT_ID_RE.test(agentId))
      throw new DomainError('invalid_argument', 'invalid_request', 'agentId: must be an agent id (agt_…).');
    const before = new Date(Date.now() - olderThanDays * 86_400_000);
    const { ids, events } = await this.sql.tx(async (q) => {
      const ids = await this.store.idleThreads(q, { accountId: p.accountId, projectId: p.projectId, agentId, before });
      if (!ids.length) return { ids, events: [] as { id: string; events: EventRow[] }[] };
      await this.store.archive(q, ids);
      const events: { id: string; events: EventRow[] }[] = [];
      for (const id of ids)
        events.push({ id, events: await this.threads.append(q, id, [{ type: 'thread.archived', producer: producerOf(p), data: {} }]) });
      return { ids, events };
    });
    for (const e of events) await this.threads.after(e.id, e.events, null);
    return ids;
  }

  /** The events after `after` (of `types`), as soon as there is one, or none when timeoutMs pass (checked every 200 ms). */
  async waitEvents(p: Principal, threadId: string, input: { after: number; types: string[]; timeoutMs: number; limit: number }) {
    // The route's default (10 s) fills in an absent timeoutMs: 0 here is an explicit zero, to answer at once.
    const ms = input.timeoutMs;
    if (!Number.isInteger(ms) || ms < 0 || ms > 30_000)
      throw new DomainError('invalid_argument', 'invalid_request', 'timeoutMs: must be 0 to 30000.');
    if (!Number.isSafeInteger(input.after) || input.after < 0)
      throw new DomainError('invalid_argument', 'invalid_request', 'after: must be 0 or more.');
    if (input.types.length > 20 || input.types.some((x) => !EVENT_TYPE_RE.test(x))) {
      throw new DomainError('invalid_argument', 'invalid_request', 'types: at most 20 event types such as run.completed.');
    }
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    const end = Date.now() + ms;
    for (;;) {
      const t = await this.threads.get(p, threadId);
      const rows = await this.store.eventsOf(threadId, input.after, input.types, limit);
      if (rows.length || Date.now() >= end) return { events: rows, timedOut: rows.length === 0, lastSeq: Number(t.last_seq) };
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(end - Date.now(), 0))));
    }
  }

  /** A run's steps: each model turn with its usage, the tools it called and their errors. */
  async steps(p: Principal, threadId: string, runId: string) {
    await this.ops.run(p, threadId, runId);
    const steps = new Map<number, { step: number; at: Date; interrupted: boolean; usage: unknown; tools: string[]; errors: number }>();
    const at = (n: number, e: EventRow) => {
      let s = steps.get(n);
      if (!s) steps.set(n, (s = { step: n, at: e.created_at, interrupted: false, usage: null, tools: [], errors: 0 }));
      return s;
    };
    for (const e of await this.store.stepEvents(threadId, runId)) {
      const n = Number(e.data.step);
      if (!Number.isInteger(n)) continue;
      if (e.type === 'message.created' && e.data.role === 'assistant') at(n, e).usage = e.usage;
      else if (e.type === 'run.step') {
        const s = at(n, e);
        s.at = e.created_at;
        if (e.data.interrupted) s.interrupted = true;
      } else if (e.type === 'tool.called') at(n, e).tools.push(String(e.data.name));
      else if (e.type === 'tool.result' && e.data.isError) at(n, e).errors++;
    }
    return [...steps.values()].sort((a, b) => a.step - b.step);
  }
}
