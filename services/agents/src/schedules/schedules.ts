import { z } from 'zod';

import {
  actorOf,
  DomainError,
  enqueueEvent,
  newId,
  type OutboxRelay,
  parseInput,
  type Principal,
  type Queryable,
  type Sql,
  visibleName,
} from '@svc/kit';

import { type AgentStore, SCHEMA } from '../agents/store.js';
import type { ThreadsDomain } from '../threads/threads.js';
import { CronError, parseCron } from './cron.js';
import { ScheduleFirer } from './fire.js';
import { type ScheduleRow, ScheduleStore, type Timing } from './store.js';
import { nextFire } from './timing.js';

/**
 * Schedules (docs/memory.md): a message the account sends on a timetable to one of its threads,
 * or to one of its agents in a new thread each time. Another account's schedule is not found.
 * The runtime fires due schedules (runtime/schedules.ts); `trigger` fires one at once. Changes and
 * firings are events (`agents.schedule.created`, `.updated`, `.paused`, `.resumed`, `.skipped`,
 * `.deleted`, `.fired`) through the outbox, in the change's transaction.
 */

export const MAX_SCHEDULES = 100;
const MAX_INTERVAL = 366 * 24 * 3600;
const SCHEDULE_RE = /^sch_[0-9a-z]{26}$/;

const notFound = () => new DomainError('not_found', 'schedule_not_found', 'Schedule not found.');
const bad = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

const Name = visibleName(z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'));
const Message = z.string().trim().min(1, 'must not be empty').max(32_000, 'must be at most 32000 characters');
const Time = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).transform((s) => new Date(s));

export interface TimingInput {
  cron?: string;
  intervalSeconds?: number;
  at?: string;
}

/** Exactly one of cron, intervalSeconds and at, checked. */
export function parseTiming(t: TimingInput | undefined, where = 'body'): Timing {
  const given = [t?.cron, t?.intervalSeconds, t?.at].filter((x) => x !== undefined).length;
  if (!t || given !== 1) throw bad(`${where}: give exactly one of cron, intervalSeconds and at.`);
  if (t.cron !== undefined) {
    try {
      parseCron(t.cron);
    } catch (err) {
      if (err instanceof CronError) throw new DomainError('invalid_argument', 'invalid_cron', `cron: ${err.message}.`);
      throw err;
    }
    return { cron: t.cron.trim().split(/\s+/).join(' '), interval_seconds: null, at: null };
  }
  if (t.intervalSeconds !== undefined) {
    const n = Number(t.intervalSeconds);
    if (!Number.isInteger(n) || n < 1 || n > MAX_INTERVAL) throw bad(`intervalSeconds: must be 1 to ${MAX_INTERVAL}.`);
    return { cron: null, interval_seconds: n, at: null };
  }
  return { cron: null, interval_seconds: null, at: parseInput(Time, t.at, { where: 'at' }) };
}

export class SchedulesDomain {
  readonly store: ScheduleStore;
  readonly firer: ScheduleFirer;

  constructor(
    private readonly sql: Sql,
    private readonly threads: ThreadsDomain,
    private readonly agents: AgentStore,
    private readonly outbox: () => OutboxRelay | undefined = () => undefined,
  ) {
    this.store = new ScheduleStore(sql);
    this.firer = new ScheduleFirer(sql, threads);
  }

  private async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const out = await this.sql.tx(fn);
    this.outbox()?.kick();
    return out;
  }

  private event(q: Queryable, p: Principal, type: string, s: Pick<ScheduleRow, 'id' | 'status' | 'next_fire_at'>) {
    return enqueueEvent(q, SCHEMA, {
      subject: `agents.schedule.${type}`,
      accountId: p.accountId,
      data: { scheduleId: s.id, status: s.status, nextFireAt: s.next_fire_at?.toISOString() ?? null, actor: actorOf(p) },
    });
  }

  async get(p: Principal, id: string, q = this.sql as Parameters<ScheduleStore['get']>[1], lock = false): Promise<ScheduleRow> {
    const s = SCHEDULE_RE.test(id) ? await this.store.get(id, q, lock) : null;
    if (!s || (p.kind !== 'system' && s.account_id !== p.accountId)) throw notFound();
    return s;
  }

  async create(
    p: Principal,
    r: { name: string; message: string; threadId?: string; agentId?: string; timing?: TimingInput; endsAt?: string },
  ): Promise<ScheduleRow> {
    const name = parseInput(Name, r.name, { where: 'name' });
    const message = parseInput(Message, r.message, { where: 'message' });
    if ((r.threadId === undefined) === (r.agentId === undefined)) throw bad('body: give exactly one of threadId and agentId.');
    const timing = parseTiming(r.timing);
    const endsAt = r.endsAt === undefined ? null : parseInput(Time, r.endsAt, { where: 'endsAt' });
    const now = new Date();
    if (timing.at && timing.at <= now) throw bad('at: must be in the future.');
    if (endsAt && endsAt <= now) throw bad('endsAt: must be in the future.');
    if (r.threadId !== undefined) await this.threads.get(p, r.threadId);
    else {
      const a = /^agt_[0-9a-z]{26}$/.test(r.agentId!) ? await this.agents.byId(r.agentId!) : null;
      if (!a || a.owner_account_id !== p.accountId) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
    }
    const next = nextFire(timing, now, null, endsAt);
    if (!next) throw new DomainError('unprocessable', 'never_fires', 'The timetable has no time ahead (before endsAt).');
    const id = newId('sch');
    await this.tx(async (q) => {
      await q.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`schedules:${p.accountId}`]);
      if ((await this.store.count(q, p.accountId)) >= MAX_SCHEDULES) {
        throw new DomainError('conflict', 'schedule_limit', `An account has at most ${MAX_SCHEDULES} schedules.`);
      }
      await this.store.insert(q, {
        id,
        account_id: p.accountId,
        name,
        message,
        thread_id: r.threadId ?? null,
        agent_id: r.agentId ?? null,
        ...timing,
        ends_at: endsAt,
        next_fire_at: next,
        created_by: actorOf(p),
      });
      await this.event(q, p, 'created', { id, status: 'active', next_fire_at: next });
    });
    return (await this.store.get(id))!;
  }

  async list(p: Principal, r: { status?: string; limit?: number; cursor?: string }) {
    const status =
      r.status === undefined
        ? undefined
        : parseInput(z.enum(['active', 'paused', 'completed'], { error: 'must be active, paused or completed' }), r.status, { where: 'status' });
    const after = r.cursor ? Buffer.from(r.cursor, 'base64url').toString() : '';
    if (after && !SCHEDULE_RE.test(after)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
    const n = Math.min(Math.max(r.limit || 50, 1), 200);
    const rows = await this.store.list(p.accountId, status, after, n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? Buffer.from(page[page.length - 1]!.id).toString('base64url') : undefined };
  }

  async update(
    p: Principal,
    r: { id: string; name?: string; message?: string; timing?: TimingInput; endsAt?: string; clearEndsAt?: boolean },
  ): Promise<ScheduleRow> {
    const name = r.name === undefined ? undefined : parseInput(Name, r.name, { where: 'name' });
    const message = r.message === undefined ? undefined : parseInput(Message, r.message, { where: 'message' });
    const timing = r.timing === undefined ? undefined : parseTiming(r.timing, 'timing');
    const endsAt = r.endsAt === undefined ? undefined : parseInput(Time, r.endsAt, { where: 'endsAt' });
    if (name === undefined && message === undefined && !timing && endsAt === undefined && !r.clearEndsAt) {
      throw bad('body: must change at least one field.');
    }
    const now = new Date();
    if (timing?.at && timing.at <= now) throw bad('at: must be in the future.');
    return this.tx(async (q) => {
      const s = await this.get(p, r.id, q, true);
      const t = timing ?? { cron: s.cron, interval_seconds: s.interval_seconds, at: s.at };
      const ends = r.clearEndsAt ? null : (endsAt ?? s.ends_at);
      // A new timetable (or end) applies from now; a new timetable makes a completed schedule active again.
      const retimed = timing !== undefined || endsAt !== undefined || r.clearEndsAt;
      let status = timing && s.status === 'completed' ? 'active' : s.status;
      let next = s.next_fire_at;
      if (retimed && status === 'active') {
        next = nextFire(t, now, null, ends);
        if (!next) status = 'completed';
      }
      const row = await this.store.update(q, s.id, {
        name: name ?? s.name,
        message: message ?? s.message,
        ...t,
        ends_at: ends,
        status: status as ScheduleRow['status'],
        next_fire_at: next,
      });
      await this.event(q, p, 'updated', row);
      return row;
    });
  }

  async remove(p: Principal, id: string): Promise<number> {
    if (!SCHEDULE_RE.test(id)) throw notFound();
    return this.tx(async (q) => {
      // A made-up id and another account's schedule answer alike (no existence oracle).
      const s = await this.get(p, id, q, true);
      await this.store.remove(q, id);
      await this.event(q, p, 'deleted', { ...s, status: s.status });
      return 1;
    });
  }

  private async setState(p: Principal, id: string, type: string, fn: (s: ScheduleRow) => Pick<ScheduleRow, 'status' | 'next_fire_at'> | null) {
    return this.tx(async (q) => {
      const s = await this.get(p, id, q, true);
      const change = fn(s);
      if (!change) return s;
      const row = await this.store.update(q, s.id, { ...s, ...change });
      await this.event(q, p, type, row);
      return row;
    });
  }

  pause(p: Principal, id: string) {
    return this.setState(p, id, 'paused', (s) => {
      if (s.status === 'completed') throw new DomainError('conflict', 'schedule_completed', 'The schedule has completed: give it a new timetable.');
      return s.status === 'paused' ? null : { status: 'paused', next_fire_at: null };
    });
  }

  resume(p: Principal, id: string) {
    return this.setState(p, id, 'resumed', (s) => {
      if (s.status === 'completed') throw new DomainError('conflict', 'schedule_completed', 'The schedule has completed: give it a new timetable.');
      if (s.status === 'active') return null;
      const next = nextFire(s, new Date(), null, s.ends_at);
      return next ? { status: 'active', next_fire_at: next } : { status: 'completed', next_fire_at: null };
    });
  }

  /** Skips the next firing: the schedule moves on to the one after it. */
  skip(p: Principal, id: string) {
    return this.setState(p, id, 'skipped', (s) => {
      if (s.status !== 'active' || !s.next_fire_at) {
        throw new DomainError('conflict', 'schedule_not_active', 'Only an active schedule has a next firing to skip.');
      }
      const next = nextFire(s, s.next_fire_at, s.next_fire_at, s.ends_at);
      return next ? { status: 'active', next_fire_at: next } : { status: 'completed', next_fire_at: null };
    });
  }

  async trigger(p: Principal, id: string) {
    return this.firer.fireNow(await this.get(p, id));
  }

  preview(r: { timing?: TimingInput; count?: number; from?: string }): Date[] {
    const timing = parseTiming(r.timing);
    const count = r.count ?? 5;
    if (!Number.isInteger(count) || count < 1 || count > 50) throw bad('count: must be 1 to 50.');
    let at = r.from === undefined ? new Date() : parseInput(Time, r.from, { where: 'from' });
    const out: Date[] = [];
    let anchor: Date | null = null;
    while (out.length < count) {
      const next = nextFire(timing, at, anchor);
      if (!next) break;
      out.push(next);
      at = next;
      anchor = next;
    }
    return out;
  }

  async firings(p: Principal, id: string, limit?: number, cursor?: string) {
    const s = await this.get(p, id);
    const before = cursor ? Buffer.from(cursor, 'base64url').toString() : null;
    if (before !== null && !/^sfr_[0-9a-z]{26}$/.test(before))
      throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
    const n = Math.min(Math.max(limit || 50, 1), 200);
    const rows = await this.store.firings(s.id, before, n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? Buffer.from(page[page.length - 1]!.id).toString('base64url') : undefined };
  }
}
