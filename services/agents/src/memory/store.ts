import { type Actor, containsText, type Queryable, type Sql } from '@svc/kit';

/** SQL for agent memory (docs/memory.md). Rules live in memory.ts. */

export interface MemoryRow {
  account_id: string;
  namespace: string;
  key: string;
  value: unknown;
  version: number;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  updated_by: Actor;
}

export interface MemoryVersionRow {
  version: number;
  op: string;
  value: unknown;
  at: Date;
  by_actor: Actor;
}

export interface NamespaceRow {
  name: string;
  entries: number;
  bytes: number;
  updated_at: Date;
}

/** How many versions of a key its history keeps. */
export const HISTORY_KEPT = 100;

const LIVE = '(expires_at IS NULL OR expires_at > now())';

export class MemoryStore {
  constructor(readonly sql: Sql) {}

  /** Serialises writers of one key (also of a key that does not exist yet) until the commit. */
  async lockKey(q: Queryable, accountId: string, namespace: string, key: string): Promise<void> {
    await q.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`memory:${accountId}:${namespace}:${key}`]);
  }

  /** The live entry (an expired one is gone: deleted here when `q` is a writer's transaction). */
  async entry(q: Queryable, accountId: string, namespace: string, key: string): Promise<MemoryRow | null> {
    const rows = await q.query<MemoryRow>(`SELECT * FROM agents.memory WHERE account_id = $1 AND namespace = $2 AND key = $3`, [
      accountId,
      namespace,
      key,
    ]);
    const r = rows[0];
    if (!r) return null;
    if (r.expires_at && r.expires_at.getTime() <= Date.now()) return null;
    return r;
  }

  async entries(q: Queryable, accountId: string, namespace: string, keys: string[]): Promise<MemoryRow[]> {
    return q.query<MemoryRow>(
      `SELECT * FROM agents.memory WHERE account_id = $1 AND namespace = $2 AND key = ANY($3::text[]) AND ${LIVE} ORDER BY key`,
      [accountId, namespace, keys],
    );
  }

  /** The version a (re)created key starts at: after every version its history holds. */
  async nextVersion(q: Queryable, accountId: string, namespace: string, key: string): Promise<number> {
    const rows = await q.query<{ v: number }>(
      `SELECT COALESCE(MAX(version), 0) + 1 AS v FROM agents.memory_history WHERE account_id = $1 AND namespace = $2 AND key = $3`,
      [accountId, namespace, key],
    );
    return Number(rows[0]!.v);
  }

  async upsert(
    q: Queryable,
    e: { accountId: string; namespace: string; key: string; value: unknown; version: number; expiresAt: Date | null; by: Actor },
  ): Promise<MemoryRow> {
    const rows = await q.query<MemoryRow>(
      `INSERT INTO agents.memory (account_id, namespace, key, value, version, expires_at, updated_by)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb)
       ON CONFLICT (account_id, namespace, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version,
         expires_at = EXCLUDED.expires_at, updated_by = EXCLUDED.updated_by, updated_at = now(),
         created_at = CASE WHEN agents.memory.version + 1 = EXCLUDED.version THEN agents.memory.created_at ELSE now() END
       RETURNING *`,
      [e.accountId, e.namespace, e.key, JSON.stringify(e.value), e.version, e.expiresAt, JSON.stringify(e.by)],
    );
    return rows[0]!;
  }

  async remove(q: Queryable, accountId: string, namespace: string, key: string): Promise<void> {
    await q.query(`DELETE FROM agents.memory WHERE account_id = $1 AND namespace = $2 AND key = $3`, [accountId, namespace, key]);
  }

  async record(q: Queryable, accountId: string, namespace: string, key: string, v: { version: number; op: string; value: unknown; by: Actor }) {
    await q.query(
      `INSERT INTO agents.memory_history (account_id, namespace, key, version, op, value, by_actor)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)`,
      [accountId, namespace, key, v.version, v.op, v.value === undefined ? null : JSON.stringify(v.value), JSON.stringify(v.by)],
    );
    await q.query(`DELETE FROM agents.memory_history WHERE account_id = $1 AND namespace = $2 AND key = $3 AND version <= $4`, [
      accountId,
      namespace,
      key,
      v.version - HISTORY_KEPT,
    ]);
  }

  async history(accountId: string, namespace: string, key: string, limit: number): Promise<MemoryVersionRow[]> {
    return this.sql.query<MemoryVersionRow>(
      `SELECT version, op, value, at, by_actor FROM agents.memory_history WHERE account_id = $1 AND namespace = $2 AND key = $3
        ORDER BY version DESC LIMIT $4`,
      [accountId, namespace, key, limit],
    );
  }

  async version(q: Queryable, accountId: string, namespace: string, key: string, version: number): Promise<MemoryVersionRow | null> {
    const rows = await q.query<MemoryVersionRow>(
      `SELECT version, op, value, at, by_actor FROM agents.memory_history WHERE account_id = $1 AND namespace = $2 AND key = $3 AND version = $4`,
      [accountId, namespace, key, version],
    );
    return rows[0] ?? null;
  }

  async list(accountId: string, namespace: string, prefix: string, after: string | undefined, limit: number): Promise<MemoryRow[]> {
    return this.sql.query<MemoryRow>(
      `SELECT * FROM agents.memory WHERE account_id = $1 AND namespace = $2 AND starts_with(key, $3) AND key > $4 AND ${LIVE}
        ORDER BY key LIMIT $5`,
      [accountId, namespace, prefix, after ?? '', limit],
    );
  }

  /** Entries whose key or value text holds `text` (case-insensitive), most recently written first. */
  async search(accountId: string, text: string, namespace: string | undefined, limit: number): Promise<MemoryRow[]> {
    const pattern = containsText(text);
    return this.sql.query<MemoryRow>(
      `SELECT * FROM agents.memory WHERE account_id = $1 AND ($2::text IS NULL OR namespace = $2) AND ${LIVE}
          AND (key ~* $3 OR value::text ~* $3)
        ORDER BY updated_at DESC, namespace, key LIMIT $4`,
      [accountId, namespace ?? null, pattern, limit],
    );
  }

  async namespaces(accountId: string, after: string | undefined, limit: number): Promise<NamespaceRow[]> {
    return this.sql.query<NamespaceRow>(
      `SELECT namespace AS name, COUNT(*)::int AS entries, COALESCE(SUM(octet_length(value::text)), 0)::bigint AS bytes,
              MAX(updated_at) AS updated_at
         FROM agents.memory WHERE account_id = $1 AND namespace > $2 AND ${LIVE}
        GROUP BY namespace ORDER BY namespace LIMIT $3`,
      [accountId, after ?? '', limit],
    );
  }

  /** Deletes a namespace's entries and history; the number of live entries it held. */
  async clear(accountId: string, namespace: string): Promise<number> {
    return this.sql.tx(async (q) => {
      const rows = await q.query<{ live: boolean }>(`DELETE FROM agents.memory WHERE account_id = $1 AND namespace = $2 RETURNING ${LIVE} AS live`, [
        accountId,
        namespace,
      ]);
      await q.query(`DELETE FROM agents.memory_history WHERE account_id = $1 AND namespace = $2`, [accountId, namespace]);
      return rows.filter((r) => r.live).length;
    });
  }

  async allLive(q: Queryable, accountId: string, namespace: string): Promise<MemoryRow[]> {
    return q.query<MemoryRow>(`SELECT * FROM agents.memory WHERE account_id = $1 AND namespace = $2 AND ${LIVE} ORDER BY key`, [
      accountId,
      namespace,
    ]);
  }

  async count(q: Queryable, accountId: string): Promise<number> {
    const rows = await q.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM agents.memory WHERE account_id = $1`, [accountId]);
    return rows[0]!.n;
  }
}
