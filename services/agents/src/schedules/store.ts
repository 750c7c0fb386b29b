import type { Actor, Queryable, Sql } from '@svc/kit';

/** SQL for schedules and their firings (docs/memory.md). Rules live in schedules.ts and fire.ts. */

export interface ScheduleRow {
  id: string;
  account_id: string;
  name: string;
  message: string;
  thread_id: string | null;
  agent_id: string | null;
  cron: string | null;
  interval_seconds: number | null;
  at: Date | null;
  ends_at: Date | null;
  status: 'active' | 'paused' | 'completed';
  next_fire_at: Date | null;
  last_fired_at: Date | null;
  fire_count: number;
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
}

export interface FiringRow {
  id: string;
  schedule_id: string;
  scheduled_for: Date | null;
  fired_at: Date;
  trigger: 'schedule' | 'manual';
  status: 'pending' | 'sent' | 'failed';
  thread_id: string | null;
  run_id: string | null;
  error: string | null;
}

export type Timing = Pick<ScheduleRow, 'cron' | 'interval_seconds' | 'at'>;

export class ScheduleStore {
  constructor(readonly sql: Sql) {}

  async insert(
    q: Queryable,
    s: Pick<ScheduleRow, 'id' | 'account_id' | 'name' | 'message' | 'thread_id' | 'agent_id' | 'ends_at' | 'next_fire_at' | 'created_by'> & Timing,
  ): Promise<void> {
    await q.query(
      `INSERT INTO agents.schedules (id, account_id, name, message, thread_id, agent_id, cron, interval_seconds, at, ends_at, next_fire_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb)`,
      [
        s.id,
        s.account_id,
        s.name,
        s.message,
        s.thread_id,
        s.agent_id,
        s.cron,
        s.interval_seconds,
        s.at,
        s.ends_at,
        s.next_fire_at,
        JSON.stringify(s.created_by),
      ],
    );
  }

  async get(id: string, q: Queryable = this.sql, lock = false): Promise<ScheduleRow | null> {
    const rows = await q.query<ScheduleRow>(`SELECT * FROM agents.schedules WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
    return rows[0] ?? null;
  }

  async list(accountId: string, status: string | undefined, after: string, limit: number): Promise<ScheduleRow[]> {
    return this.sql.query<ScheduleRow>(
      `SELECT * FROM agents.schedules WHERE account_id = $1 AND ($2::text IS NULL OR status = $2) AND id > $3 ORDER BY id LIMIT $4`,
      [accountId, status ?? null, after, limit],
    );
  }

  async count(q: Queryable, accountId: string): Promise<number> {
    const rows = await q.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM agents.schedules WHERE account_id = $1`, [accountId]);
    return rows[0]!.n;
  }

  async update(
    q: Queryable,
    id: string,
    f: Pick<ScheduleRow, 'name' | 'message' | 'ends_at' | 'status' | 'next_fire_at'> & Timing,
  ): Promise<ScheduleRow> {
    const rows = await q.query<ScheduleRow>(
      `UPDATE agents.schedules SET name = $2, message = $3, cron = $4, interval_seconds = $5, at = $6, ends_at = $7, status = $8,
         next_fire_at = $9, updated_at = now() WHERE id = $1 RETURNING *`,
      [id, f.name, f.message, f.cron, f.interval_seconds, f.at, f.ends_at, f.status, f.next_fire_at],
    );
    return rows[0]!;
  }

  async remove(q: Queryable, id: string): Promise<void> {
    await q.query(`DELETE FROM agents.schedules WHERE id = $1`, [id]);
  }

  /** One due active schedule nobody else holds, locked until the commit (replicas skip it). */
  async claimDue(q: Queryable): Promise<ScheduleRow | null> {
    const rows = await q.query<ScheduleRow>(
      `SELECT * FROM agents.schedules WHERE status = 'active' AND next_fire_at <= now()
        ORDER BY next_fire_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    return rows[0] ?? null;
  }

  async advance(q: Queryable, id: string, next: Date | null, fired: boolean): Promise<void> {
    await q.query(
      `UPDATE agents.schedules SET next_fire_at = $2, status = CASE WHEN $2::timestamptz IS NULL THEN 'completed' ELSE status END,
         last_fired_at = CASE WHEN $3 THEN now() ELSE last_fired_at END, fire_count = fire_count + CASE WHEN $3 THEN 1 ELSE 0 END,
         updated_at = now() WHERE id = $1`,
      [id, next, fired],
    );
  }

  /** A manual firing: counted, the timetable unchanged. */
  async countFiring(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE agents.schedules SET last_fired_at = now(), fire_count = fire_count + 1 WHERE id = $1`, [id]);
  }

  async insertFiring(q: Queryable, f: Pick<FiringRow, 'id' | 'schedule_id' | 'scheduled_for' | 'trigger'>): Promise<void> {
    await q.query(`INSERT INTO agents.schedule_firings (id, schedule_id, scheduled_for, trigger, status) VALUES ($1, $2, $3, $4, 'pending')`, [
      f.id,
      f.schedule_id,
      f.scheduled_for,
      f.trigger,
    ]);
  }

  async finishFiring(id: string, r: { status: 'sent' | 'failed'; threadId?: string | null; runId?: string | null; error?: string | null }) {
    const rows = await this.sql.query<FiringRow>(
      `UPDATE agents.schedule_firings SET status = $2, thread_id = $3, run_id = $4, error = $5 WHERE id = $1 RETURNING *`,
      [id, r.status, r.threadId ?? null, r.runId ?? null, r.error ?? null],
    );
    return rows[0]!;
  }

  async firings(scheduleId: string, before: string | null, limit: number): Promise<FiringRow[]> {
    return this.sql.query<FiringRow>(
      `SELECT * FROM agents.schedule_firings WHERE schedule_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [scheduleId, before, limit],
    );
  }
}
