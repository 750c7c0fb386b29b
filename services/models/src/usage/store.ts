import type { Actor, Queryable, Sql } from '@svc/kit';

import type { CreditEntryRow } from '../credits/store.js';

/** SQL of usage records, providers' last errors and the credit ledger's views (docs/models.md). */

export interface UsageRow {
  id: string;
  account_id: string;
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
  cost: string;
  currency: string;
  own_key: boolean;
  charged: boolean;
  charge_key: string;
  finish_reason: string;
  actor: Actor;
  created_at: Date;
}

export interface UsageGroupRow {
  key: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: string;
  charged: string;
}

const USAGE = `id, account_id, model, provider, input_tokens::int, output_tokens::int, cost::text, currency, own_key, charged, charge_key,
  finish_reason, actor, created_at`;
const CREDIT = 'id, account_id, kind, amount::text AS amount, currency, model, input_tokens, output_tokens, charge_key, memo, actor, created_at';

const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const usageRow = (r: UsageRow): UsageRow => ({ ...r, actor: json(r.actor), created_at: new Date(r.created_at) });
const creditRow = (r: CreditEntryRow): CreditEntryRow => ({ ...r, actor: json(r.actor), created_at: new Date(r.created_at) });

/** What a summary groups by, as SQL over models.usage. */
export const GROUPS: Record<string, string> = {
  model: 'model',
  provider: 'provider',
  day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  agent: `actor->>'kind' || ':' || (actor->>'id')`,
};

export class UsageStore {
  constructor(readonly sql: Sql) {}

  async insert(q: Queryable, u: Omit<UsageRow, 'created_at'>): Promise<void> {
    await q.query(
      `INSERT INTO models.usage (id, account_id, model, provider, input_tokens, output_tokens, cost, currency, own_key, charged, charge_key,
         finish_reason, actor) VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11, $12, $13::jsonb)`,
      [
        u.id,
        u.account_id,
        u.model,
        u.provider,
        u.input_tokens,
        u.output_tokens,
        u.cost,
        u.currency,
        u.own_key,
        u.charged,
        u.charge_key,
        u.finish_reason,
        JSON.stringify(u.actor),
      ],
    );
  }

  async list(
    accountId: string,
    f: { model?: string; agentId?: string; start?: string; end?: string; before?: string },
    limit: number,
  ): Promise<UsageRow[]> {
    const rows = await this.sql.query<UsageRow>(
      `SELECT ${USAGE} FROM models.usage WHERE account_id = $1 AND ($2::text IS NULL OR model = $2)
         AND ($3::text IS NULL OR (actor->>'kind' = 'agent' AND actor->>'id' = $3))
         AND ($4::timestamptz IS NULL OR created_at >= $4) AND ($5::timestamptz IS NULL OR created_at < $5) AND ($6::text IS NULL OR id < $6)
       ORDER BY id DESC LIMIT $7`,
      [accountId, f.model ?? null, f.agentId ?? null, f.start ?? null, f.end ?? null, f.before ?? null, limit + 1],
    );
    return rows.map(usageRow);
  }

  async get(accountId: string, id: string): Promise<UsageRow | null> {
    const rows = await this.sql.query<UsageRow>(`SELECT ${USAGE} FROM models.usage WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return rows[0] ? usageRow(rows[0]) : null;
  }

  async summary(accountId: string, groupBy: string, start: Date, end: Date): Promise<UsageGroupRow[]> {
    const key = GROUPS[groupBy]!;
    return this.sql.query<UsageGroupRow>(
      `SELECT ${key} AS key, count(*)::int AS calls, coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
         coalesce(sum(output_tokens), 0)::bigint AS output_tokens, coalesce(sum(cost), 0)::text AS cost,
         coalesce(sum(cost) FILTER (WHERE charged), 0)::text AS charged
       FROM models.usage WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY 1 ORDER BY 1`,
      [accountId, start, end],
    );
  }

  /** The last call of each provider for the account. */
  async lastUsed(accountId: string): Promise<Map<string, Date>> {
    const rows = await this.sql.query<{ provider: string; at: Date }>(
      `SELECT provider, max(created_at) AS at FROM models.usage WHERE account_id = $1 GROUP BY provider`,
      [accountId],
    );
    return new Map(rows.map((r) => [r.provider, new Date(r.at)]));
  }

  async recordError(accountId: string, provider: string, code: string, message: string): Promise<void> {
    await this.sql.query(
      `INSERT INTO models.provider_errors (account_id, provider, code, message) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, provider) DO UPDATE SET code = EXCLUDED.code, message = EXCLUDED.message, at = now()`,
      [accountId, provider, code, message.slice(0, 500)],
    );
  }

  async errors(accountId: string): Promise<Map<string, { code: string; message: string; at: Date }>> {
    const rows = await this.sql.query<{ provider: string; code: string; message: string; at: Date }>(
      `SELECT provider, code, message, at FROM models.provider_errors WHERE account_id = $1`,
      [accountId],
    );
    return new Map(rows.map((r) => [r.provider, { code: r.code, message: r.message, at: new Date(r.at) }]));
  }

  // Credit ledger views -------------------------------------------------------------------------

  async creditEntries(
    accountId: string,
    f: { kind?: string; model?: string; start?: string; end?: string; before?: string },
    limit: number,
  ): Promise<CreditEntryRow[]> {
    const rows = await this.sql.query<CreditEntryRow>(
      `SELECT ${CREDIT} FROM models.credit_entries WHERE account_id = $1 AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR model = $3)
         AND ($4::timestamptz IS NULL OR created_at >= $4) AND ($5::timestamptz IS NULL OR created_at < $5) AND ($6::text IS NULL OR id < $6)
       ORDER BY id DESC LIMIT $7`,
      [accountId, f.kind ?? null, f.model ?? null, f.start ?? null, f.end ?? null, f.before ?? null, limit + 1],
    );
    return rows.map(creditRow);
  }

  async creditEntry(accountId: string, id: string): Promise<CreditEntryRow | null> {
    const rows = await this.sql.query<CreditEntryRow>(`SELECT ${CREDIT} FROM models.credit_entries WHERE account_id = $1 AND id = $2`, [
      accountId,
      id,
    ]);
    return rows[0] ? creditRow(rows[0]) : null;
  }

  /** Grants and charges per UTC day in a range. */
  async creditDays(accountId: string, start: Date, end: Date): Promise<Array<{ day: string; granted: string; spent: string }>> {
    return this.sql.query(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
         coalesce(sum(amount) FILTER (WHERE kind = 'grant'), 0)::text AS granted, coalesce(-sum(amount) FILTER (WHERE kind = 'charge'), 0)::text AS spent
       FROM models.credit_entries WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY 1 ORDER BY 1`,
      [accountId, start, end],
    );
  }

  /** Charges per model in a range, most spent first. */
  async creditModels(accountId: string, start: Date, end: Date): Promise<Array<{ model: string; spent: string; calls: number }>> {
    return this.sql.query(
      `SELECT model, (-sum(amount))::text AS spent, count(*)::int AS calls FROM models.credit_entries
       WHERE account_id = $1 AND kind = 'charge' AND created_at >= $2 AND created_at < $3 GROUP BY model ORDER BY sum(amount), model`,
      [accountId, start, end],
    );
  }
}
