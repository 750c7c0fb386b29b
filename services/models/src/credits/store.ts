import type { Actor, Queryable, Sql } from '@svc/kit';

export interface CreditEntryRow {
  id: string;
  account_id: string;
  kind: 'grant' | 'charge';
  /** numeric as text (`-0.000180000000`); normalised by the rules. */
  amount: string;
  currency: string;
  model: string | null;
  input_tokens: string | number;
  output_tokens: string | number;
  charge_key: string | null;
  memo: string | null;
  actor: Actor;
  created_at: Date;
}

const CREDIT_COLUMNS =
  'id, account_id, kind, amount::text AS amount, currency, model, input_tokens, output_tokens, charge_key, memo, actor, created_at';
const creditRow = (r: CreditEntryRow): CreditEntryRow => ({
  ...r,
  actor: typeof r.actor === 'string' ? JSON.parse(r.actor) : r.actor,
  created_at: r.created_at instanceof Date ? r.created_at : new Date(r.created_at),
});

/** SQL for the credit ledger. Rules live in credits.ts. */
export class CreditStore {
  constructor(readonly sql: Sql) {}

  /**
   * Adds an entry and moves the balance, in one transaction; a charge whose (account, charge key)
   * is already in the ledger adds nothing (null). Answers the entry and the balance after it.
   */
  async add(
    e: Omit<CreditEntryRow, 'created_at' | 'input_tokens' | 'output_tokens'> & { input_tokens: number; output_tokens: number },
    /** More work in the same transaction once the entry is in (an outbox event). */
    then?: (q: Queryable, entry: CreditEntryRow) => Promise<unknown>,
  ): Promise<{ entry: CreditEntryRow; balance: string } | null> {
    return this.sql.tx(async (q) => {
      const rows = await q.query<CreditEntryRow>(
        `INSERT INTO models.credit_entries (id, account_id, kind, amount, currency, model, input_tokens, output_tokens, charge_key, memo, actor)
         VALUES ($1, $2, $3, $4::numeric, $5, $6, $7, $8, $9, $10, $11::jsonb)
         ON CONFLICT (account_id, charge_key) WHERE charge_key IS NOT NULL DO NOTHING
         RETURNING ${CREDIT_COLUMNS}`,
        [e.id, e.account_id, e.kind, e.amount, e.currency, e.model, e.input_tokens, e.output_tokens, e.charge_key, e.memo, JSON.stringify(e.actor)],
      );
      if (!rows[0]) return null;
      const balance = await q.query<{ balance: string }>(
        `INSERT INTO models.credit_balances (account_id, balance, currency) VALUES ($1, $2::numeric, $3)
         ON CONFLICT (account_id) DO UPDATE SET balance = models.credit_balances.balance + EXCLUDED.balance, updated_at = now()
         RETURNING balance::text AS balance`,
        [e.account_id, e.amount, e.currency],
      );
      const entry = creditRow(rows[0]);
      await then?.(q, entry);
      return { entry, balance: balance[0]!.balance };
    });
  }

  /** An account's balance (numeric as text), "0" when it has no entries. */
  async balance(accountId: string): Promise<string> {
    const rows = await this.sql.query<{ balance: string }>(`SELECT balance::text AS balance FROM models.credit_balances WHERE account_id = $1`, [
      accountId,
    ]);
    return rows[0]?.balance ?? '0';
  }

  /** Whether the account's ledger holds a charge under this key. */
  async charged(accountId: string, chargeKey: string): Promise<boolean> {
    const rows = await this.sql.query(`SELECT 1 FROM models.credit_entries WHERE account_id = $1 AND charge_key = $2`, [accountId, chargeKey]);
    return rows.length > 0;
  }

  /** An account's entries, newest first, after the cursor's id; one more than `limit` to tell whether more follow. */
  async entries(accountId: string, before: string | null, limit: number): Promise<CreditEntryRow[]> {
    const rows = await this.sql.query<CreditEntryRow>(
      `SELECT ${CREDIT_COLUMNS} FROM models.credit_entries WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [accountId, before, limit + 1],
    );
    return rows.map(creditRow);
  }
}
