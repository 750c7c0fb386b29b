import type { Queryable, Sql } from '@svc/kit';

/** SQL of low-balance credit alerts (credit-alerts.ts). */

export interface CreditAlertRow {
  id: string;
  account_id: string;
  threshold: string;
  note: string | null;
  status: 'active' | 'triggered';
  triggered_at: Date | null;
  triggered_balance: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, account_id, threshold::text, note, status, triggered_at, triggered_balance::text, created_at, updated_at`;

export class CreditAlertStore {
  constructor(readonly sql: Sql) {}

  async insert(q: Queryable, a: { id: string; accountId: string; threshold: string; note: string | null }): Promise<CreditAlertRow> {
    const rows = await q.query<CreditAlertRow>(
      `INSERT INTO models.credit_alerts (id, account_id, threshold, note) VALUES ($1, $2, $3::numeric, $4) RETURNING ${COLUMNS}`,
      [a.id, a.accountId, a.threshold, a.note],
    );
    return rows[0]!;
  }

  async get(q: Queryable, accountId: string, id: string, lock = false): Promise<CreditAlertRow | null> {
    const rows = await q.query<CreditAlertRow>(
      `SELECT ${COLUMNS} FROM models.credit_alerts WHERE account_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [accountId, id],
    );
    return rows[0] ?? null;
  }

  async list(accountId: string, status: string | undefined, before: string | undefined, limit: number): Promise<CreditAlertRow[]> {
    return this.sql.query<CreditAlertRow>(
      `SELECT ${COLUMNS} FROM models.credit_alerts WHERE account_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR id < $3)
       ORDER BY id DESC LIMIT $4`,
      [accountId, status ?? null, before ?? null, limit + 1],
    );
  }

  /** Sets the threshold and note; a changed alert is armed again. */
  async update(q: Queryable, accountId: string, id: string, threshold: string, note: string | null): Promise<CreditAlertRow | null> {
    const rows = await q.query<CreditAlertRow>(
      `UPDATE models.credit_alerts SET threshold = $3::numeric, note = $4, status = 'active', triggered_at = NULL, triggered_balance = NULL,
         updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [accountId, id, threshold, note],
    );
    return rows[0] ?? null;
  }

  async remove(q: Queryable, accountId: string, id: string): Promise<boolean> {
    return (await q.query(`DELETE FROM models.credit_alerts WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id])).length > 0;
  }

  /** Triggers the account's active alerts whose threshold the balance is at or below; answers them. */
  async trigger(q: Queryable, accountId: string, balance: string): Promise<CreditAlertRow[]> {
    return q.query<CreditAlertRow>(
      `UPDATE models.credit_alerts SET status = 'triggered', triggered_at = now(), triggered_balance = $2::numeric, updated_at = now()
       WHERE account_id = $1 AND status = 'active' AND threshold >= $2::numeric RETURNING ${COLUMNS}`,
      [accountId, balance],
    );
  }
}
