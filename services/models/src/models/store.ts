import type { Actor, Queryable, Sql } from '@svc/kit';

export type { Actor };

export const SCHEMA = 'models';

export interface ProviderKeyRow {
  account_id: string;
  provider: string;
  /** Envelope-sealed (provider-keys.ts); never the plaintext. */
  sealed_key: string;
  last4: string;
  base_url: string | null;
  set_by: Actor;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'account_id, provider, sealed_key, last4, base_url, set_by, created_at, updated_at';

const row = (r: ProviderKeyRow): ProviderKeyRow => ({ ...r, set_by: typeof r.set_by === 'string' ? JSON.parse(r.set_by) : r.set_by });

/** SQL for provider keys. Rules live in provider-keys.ts. */
export class ProviderKeyStore {
  constructor(readonly sql: Sql) {}

  /** Sets (or replaces) an account's key for a provider; `created_at` stays that of the first. */
  async upsert(q: Queryable, k: Omit<ProviderKeyRow, 'created_at' | 'updated_at'>): Promise<ProviderKeyRow> {
    const rows = await q.query<ProviderKeyRow>(
      `INSERT INTO models.provider_keys (account_id, provider, sealed_key, last4, base_url, set_by)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb)
       ON CONFLICT (account_id, provider) DO UPDATE
         SET sealed_key = EXCLUDED.sealed_key, last4 = EXCLUDED.last4, base_url = EXCLUDED.base_url, set_by = EXCLUDED.set_by, updated_at = now()
       RETURNING ${COLUMNS}`,
      [k.account_id, k.provider, k.sealed_key, k.last4, k.base_url, JSON.stringify(k.set_by)],
    );
    return row(rows[0]!);
  }

  /** An account's keys, by provider. */
  async list(accountId: string): Promise<ProviderKeyRow[]> {
    const rows = await this.sql.query<ProviderKeyRow>(`SELECT ${COLUMNS} FROM models.provider_keys WHERE account_id = $1 ORDER BY provider`, [
      accountId,
    ]);
    return rows.map(row);
  }

  /** An account's key for a provider, or null. */
  async get(accountId: string, provider: string): Promise<ProviderKeyRow | null> {
    const rows = await this.sql.query<ProviderKeyRow>(`SELECT ${COLUMNS} FROM models.provider_keys WHERE account_id = $1 AND provider = $2`, [
      accountId,
      provider,
    ]);
    return rows[0] ? row(rows[0]) : null;
  }

  /** The providers an account has a key for. */
  async providers(accountId: string): Promise<Set<string>> {
    const rows = await this.sql.query<{ provider: string }>(`SELECT provider FROM models.provider_keys WHERE account_id = $1`, [accountId]);
    return new Set(rows.map((r) => r.provider));
  }

  /** Deletes a key; the deleted row, or null when there was none. */
  async remove(q: Queryable, accountId: string, provider: string): Promise<ProviderKeyRow | null> {
    const rows = await q.query<ProviderKeyRow>(`DELETE FROM models.provider_keys WHERE account_id = $1 AND provider = $2 RETURNING ${COLUMNS}`, [
      accountId,
      provider,
    ]);
    return rows[0] ? row(rows[0]) : null;
  }

  /** Keys not wrapped with the current KEK, a page at a time (for rewrapping). */
  async page(after: { accountId: string; provider: string } | null, limit: number): Promise<ProviderKeyRow[]> {
    const rows = await this.sql.query<ProviderKeyRow>(
      `SELECT ${COLUMNS} FROM models.provider_keys WHERE ($1::text IS NULL OR (account_id, provider) > ($1, $2)) ORDER BY account_id, provider LIMIT $3`,
      [after?.accountId ?? null, after?.provider ?? null, limit],
    );
    return rows.map(row);
  }

  /** Replaces a sealed key in place if it is still the one read (a concurrent set wins). */
  async replaceSealed(accountId: string, provider: string, from: string, to: string): Promise<void> {
    await this.sql.query(`UPDATE models.provider_keys SET sealed_key = $4 WHERE account_id = $1 AND provider = $2 AND sealed_key = $3`, [
      accountId,
      provider,
      from,
      to,
    ]);
  }
}
