import type { Actor, Queryable, Sql } from '@svc/kit';

/** SQL of approvals, questions to a person and approval policies (rules in approvals.ts and the runtime). */

export type ApprovalKind = 'approval' | 'question';
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled' | 'answered';

export interface ApprovalRow {
  id: string;
  kind: ApprovalKind;
  thread_id: string;
  run_id: string;
  account_id: string;
  agent_id: string;
  call_id: string;
  step: number;
  tool: string;
  arguments: unknown;
  status: ApprovalStatus;
  edited_arguments: unknown;
  reason: string | null;
  answer: string | null;
  answer_message_id: string | null;
  decided_by: Actor | null;
  decided_at: Date | null;
  expires_at: Date;
  created_at: Date;
}

export interface PolicyRow {
  subject_id: string;
  account_id: string;
  tools: string[];
  updated_by: Actor;
  updated_at: Date;
}

const json = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
const approvalRow = (r: ApprovalRow): ApprovalRow => ({
  ...r,
  arguments: r.arguments === null ? null : json(r.arguments),
  edited_arguments: r.edited_arguments === null ? null : json(r.edited_arguments),
  decided_by: r.decided_by ? json(r.decided_by) : null,
  step: Number(r.step),
});

export class ApprovalStore {
  constructor(readonly sql: Sql) {}

  /** Records a request for a call; the earlier row when the call already has one (a step taken again). */
  async insert(
    q: Queryable,
    a: Pick<ApprovalRow, 'id' | 'kind' | 'thread_id' | 'run_id' | 'account_id' | 'agent_id' | 'call_id' | 'step' | 'tool' | 'arguments'> & {
      ttlSeconds: number;
    },
  ): Promise<{ row: ApprovalRow; fresh: boolean }> {
    const rows = await q.query<ApprovalRow>(
      `INSERT INTO agents.approvals (id, kind, thread_id, run_id, account_id, agent_id, call_id, step, tool, arguments, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, now() + ($11::int * interval '1 second'))
       ON CONFLICT (run_id, call_id) DO NOTHING RETURNING *`,
      [a.id, a.kind, a.thread_id, a.run_id, a.account_id, a.agent_id, a.call_id, a.step, a.tool, JSON.stringify(a.arguments ?? null), a.ttlSeconds],
    );
    if (rows[0]) return { row: approvalRow(rows[0]), fresh: true };
    return { row: (await this.forCall(q, a.run_id, a.call_id))!, fresh: false };
  }

  async forCall(q: Queryable, runId: string, callId: string): Promise<ApprovalRow | null> {
    const rows = await q.query<ApprovalRow>(`SELECT * FROM agents.approvals WHERE run_id = $1 AND call_id = $2`, [runId, callId]);
    return rows[0] ? approvalRow(rows[0]) : null;
  }

  async get(id: string, q: Queryable = this.sql, lock = false): Promise<ApprovalRow | null> {
    const rows = await q.query<ApprovalRow>(`SELECT * FROM agents.approvals WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
    return rows[0] ? approvalRow(rows[0]) : null;
  }

  /** A thread's requests, or an account's (its pending ones by default), oldest first. */
  async list(f: { threadId?: string; accountId?: string; status?: ApprovalStatus; projectId?: string; limit: number }): Promise<ApprovalRow[]> {
    const rows = await this.sql.query<ApprovalRow>(
      `SELECT a.* FROM agents.approvals a JOIN agents.threads t ON t.id = a.thread_id AND t.deleted_at IS NULL
        WHERE ($1::text IS NULL OR a.thread_id = $1) AND ($2::text IS NULL OR a.account_id = $2) AND ($3::text IS NULL OR a.status = $3)
          AND ($4::text IS NULL OR t.project_id = $4)
        ORDER BY a.created_at, a.id LIMIT $5`,
      [f.threadId ?? null, f.accountId ?? null, f.status ?? null, f.projectId ?? null, f.limit],
    );
    return rows.map(approvalRow);
  }

  /** Ends a pending request; null when it was not pending any more. */
  async decide(
    q: Queryable,
    id: string,
    d: { status: ApprovalStatus; by: Actor | null; editedArguments?: unknown; reason?: string | null; answer?: string; answerMessageId?: string },
  ): Promise<ApprovalRow | null> {
    const rows = await q.query<ApprovalRow>(
      `UPDATE agents.approvals SET status = $2, decided_by = $3::jsonb, decided_at = now(), edited_arguments = $4::jsonb, reason = $5,
          answer = $6, answer_message_id = $7
        WHERE id = $1 AND status = 'pending' RETURNING *`,
      [
        id,
        d.status,
        d.by ? JSON.stringify(d.by) : null,
        d.editedArguments === undefined ? null : JSON.stringify(d.editedArguments),
        d.reason ?? null,
        d.answer ?? null,
        d.answerMessageId ?? null,
      ],
    );
    return rows[0] ? approvalRow(rows[0]) : null;
  }

  /** The run's pending requests, ended as `cancelled` (the run ended otherwise: cancel, rollback, deletion). */
  async closeForRun(q: Queryable, runId: string): Promise<ApprovalRow[]> {
    const rows = await q.query<ApprovalRow>(
      `UPDATE agents.approvals SET status = 'cancelled', decided_at = now() WHERE run_id = $1 AND status = 'pending' RETURNING *`,
      [runId],
    );
    return rows.map(approvalRow);
  }

  /** The pending request a run waits on (the oldest), if any. */
  async pendingOfRun(q: Queryable, runId: string): Promise<ApprovalRow | null> {
    const rows = await q.query<ApprovalRow>(
      `SELECT * FROM agents.approvals WHERE run_id = $1 AND status = 'pending' ORDER BY created_at, id LIMIT 1 FOR UPDATE`,
      [runId],
    );
    return rows[0] ? approvalRow(rows[0]) : null;
  }

  /** Pending requests past their expiry. */
  async due(limit: number): Promise<ApprovalRow[]> {
    const rows = await this.sql.query<ApprovalRow>(
      `SELECT * FROM agents.approvals WHERE status = 'pending' AND expires_at < now() ORDER BY expires_at LIMIT $1`,
      [limit],
    );
    return rows.map(approvalRow);
  }

  /** Pauses the run (no worker holds it) until `wakeRun`. False when a cancel was asked for meanwhile (or the run is not this worker's). */
  async pauseRun(q: Queryable, runId: string, worker: string, waitingFor: 'approval' | 'answer'): Promise<boolean> {
    const rows = await q.query(
      `UPDATE agents.runs SET waiting_for = $3, worker = NULL, lease_until = NULL WHERE id = $1 AND worker = $2 AND status = 'running'
          AND NOT cancel_requested RETURNING id`,
      [runId, worker, waitingFor],
    );
    return rows.length > 0;
  }

  /** Makes a paused run claimable again (then it is put on the work queue); false when it was not paused. */
  async wakeRun(q: Queryable, runId: string): Promise<boolean> {
    const rows = await q.query(
      `UPDATE agents.runs SET waiting_for = NULL, worker = NULL, lease_until = NULL WHERE id = $1 AND status = 'running' AND waiting_for IS NOT NULL
        RETURNING id`,
      [runId],
    );
    return rows.length > 0;
  }

  /** An agent's name (a deleted agent's too), for the audit trail. */
  static async agentName(q: Queryable, agentId: string): Promise<string | null> {
    const rows = await q.query<{ name: string }>(`SELECT name FROM agents.agents WHERE id = $1`, [agentId]);
    return rows[0]?.name ?? null;
  }

  async policy(subjectId: string, q: Queryable = this.sql): Promise<PolicyRow | null> {
    const rows = await q.query<PolicyRow>(`SELECT * FROM agents.approval_policies WHERE subject_id = $1`, [subjectId]);
    return rows[0] ? { ...rows[0], updated_by: json(rows[0].updated_by) } : null;
  }

  async setPolicy(q: Queryable, p: Pick<PolicyRow, 'subject_id' | 'account_id' | 'tools' | 'updated_by'>): Promise<PolicyRow> {
    const rows = await q.query<PolicyRow>(
      `INSERT INTO agents.approval_policies (subject_id, account_id, tools, updated_by) VALUES ($1, $2, $3::text[], $4::jsonb)
       ON CONFLICT (subject_id) DO UPDATE SET account_id = $2, tools = $3::text[], updated_by = $4::jsonb, updated_at = now() RETURNING *`,
      [p.subject_id, p.account_id, p.tools, JSON.stringify(p.updated_by)],
    );
    return { ...rows[0]!, updated_by: json(rows[0]!.updated_by) };
  }

  async deletePolicy(q: Queryable, subjectId: string): Promise<void> {
    await q.query(`DELETE FROM agents.approval_policies WHERE subject_id = $1`, [subjectId]);
  }
}
