import { DomainError, enqueueEvent, newId, type Principal, type Queryable, type Sql } from '@svc/kit';

import { SCHEMA } from '../agents/store.js';
import type { ThreadsDomain } from '../threads/threads.js';
import { type FiringRow, type ScheduleRow, ScheduleStore, type Timing } from './store.js';
import { nextFire } from './timing.js';

/**
 * Firing schedules: a due schedule is claimed (FOR UPDATE SKIP LOCKED, so each firing happens on
 * one replica only), advanced to its next time and its firing recorded, in one transaction; then
 * the message is delivered: injected into the thread (enqueued after a running run), or sent to
 * the agent in a new thread. A failed delivery is recorded on the firing with its reason.
 */
export class ScheduleFirer {
  readonly store: ScheduleStore;

  constructor(
    private readonly sql: Sql,
    private readonly threads: ThreadsDomain,
  ) {
    this.store = new ScheduleStore(sql);
  }

  /** Fires the due schedules (at most `max`); how many fired. */
  async fireDue(max = 20): Promise<number> {
    let n = 0;
    for (; n < max; n++) {
      const claimed = await this.sql.tx(async (q) => {
        const s = await this.store.claimDue(q);
        if (!s) return null;
        const next = nextFire(s as Timing, new Date(), s.next_fire_at, s.ends_at);
        await this.store.advance(q, s.id, next, true);
        const firingId = newId('sfr');
        await this.store.insertFiring(q, { id: firingId, schedule_id: s.id, scheduled_for: s.next_fire_at, trigger: 'schedule' });
        await this.fired(q, s, firingId, 'schedule', s.next_fire_at);
        return { s, firingId };
      });
      if (!claimed) break;
      await this.deliver(claimed.s, claimed.firingId);
    }
    return n;
  }

  /** Fires a schedule now, outside its timetable (which stays as it is). */
  async fireNow(s: ScheduleRow): Promise<FiringRow> {
    const firingId = newId('sfr');
    await this.sql.tx(async (q) => {
      await this.store.insertFiring(q, { id: firingId, schedule_id: s.id, scheduled_for: null, trigger: 'manual' });
      await this.store.countFiring(q, s.id);
      await this.fired(q, s, firingId, 'manual', null);
    });
    return this.deliver(s, firingId);
  }

  /** The event of a firing, in its claim's transaction (the agents service's outbox relay publishes it). */
  private fired(q: Queryable, s: ScheduleRow, firingId: string, trigger: string, scheduledFor: Date | null) {
    return enqueueEvent(q, SCHEMA, {
      subject: 'agents.schedule.fired',
      accountId: s.account_id,
      data: { scheduleId: s.id, firingId, trigger, scheduledFor: scheduledFor?.toISOString() ?? null, threadId: s.thread_id, agentId: s.agent_id },
    });
  }

  private async deliver(s: ScheduleRow, firingId: string): Promise<FiringRow> {
    const p: Principal = { kind: 'system', accountId: s.account_id, channel: 'internal' };
    try {
      if (s.thread_id) {
        const r = await this.threads.inject(p, s.thread_id, { content: s.message, mode: 'enqueue', clientMessageId: `schedule:${firingId}` });
        return await this.store.finishFiring(firingId, { status: 'sent', threadId: s.thread_id, runId: r.runId });
      }
      const r = await this.threads.create(p, { agentId: s.agent_id!, title: s.name, message: s.message });
      return await this.store.finishFiring(firingId, { status: 'sent', threadId: r.thread.id, runId: r.runId });
    } catch (err) {
      const reason = err instanceof DomainError ? `${err.code}: ${err.message}` : 'the message could not be delivered';
      return this.store.finishFiring(firingId, { status: 'failed', threadId: s.thread_id, error: reason });
    }
  }
}
