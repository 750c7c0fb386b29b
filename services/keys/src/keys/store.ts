import type { Queryable, Sql } from '@svc/kit';

export const SCHEMA = 'keys';

export interface KeyRow {
  id: string;
  key_hash: string;
  prefix: string;
  name: string;
  account_id: string;
  owner_kind: 'human' | 'agent';
  owner_id: string;
  project_id: string | null;
  created_by_key_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  usage_count: number;
  created_at: Date;
}

export type NewKey = Omit<KeyRow, 'revoked_at' | 'last_used_at' | 'usage_count' | 'created_at'>;

const COLUMNS = `id, key_hash, prefix, name, account_id, owner_kind, owner_id, project_id, created_by_key_id,
  expires_at, revoked_at, last_used_at, usage_count, created_at`;

export interface ListFilter {
  accountId: string;
  ownerKind: 'human' | 'agent';
  /** Only this owner's keys (an agent's, or a member's own keys in an organization). */
  ownerId?: string;
  projectId?: string;
  /** Exclusive upper bound on id (keys are listed newest first). */
  before?: string;
  limit: number;
}

/** SQL for API keys. Rules live in keys.ts. */
export class KeyStore {
  constructor(private readonly sql: Sql) {}

  async insert(q: Queryable, k: NewKey): Promise<KeyRow> {
    const rows = await q.query<KeyRow>(
      `INSERT INTO keys.api_keys (id, key_hash, prefix, name, account_id, owner_kind, owner_id, project_id,
         created_by_key_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [k.id, k.key_hash, k.prefix, k.name, k.account_id, k.owner_kind, k.owner_id, k.project_id, k.created_by_key_id, k.expires_at],
    );
    return rows[0]!;
  }

  /** Inserts unless a key with that hash exists; returns the stored row either way. */
  async insertIfAbsent(q: Queryable, k: NewKey): Promise<KeyRow> {
    await q.query(
      `INSERT INTO keys.api_keys (id, key_hash, prefix, name, account_id, owner_kind, owner_id, project_id,
         created_by_key_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (key_hash) DO NOTHING`,
      [k.id, k.key_hash, k.prefix, k.name, k.account_id, k.owner_kind, k.owner_id, k.project_id, k.created_by_key_id, k.expires_at],
    );
    return (await this.byHash(k.key_hash, q))!;
  }

  async hashById(id: string): Promise<string | null> {
    const rows = await this.sql.query<{ key_hash: string }>(`SELECT key_hash FROM keys.api_keys WHERE id = $1`, [id]);
    return rows[0]?.key_hash ?? null;
  }

  async byHash(hash: string, q: Queryable = this.sql): Promise<KeyRow | null> {
    const rows = await q.query<KeyRow>(`SELECT ${COLUMNS} FROM keys.api_keys WHERE key_hash = $1`, [hash]);
    return rows[0] ?? null;
  }

  async byId(q: Queryable, id: string, accountId: string): Promise<KeyRow | null> {
    const rows = await q.query<KeyRow>(`SELECT ${COLUMNS} FROM keys.api_keys WHERE id = $1 AND account_id = $2 FOR UPDATE`, [id, accountId]);
    return rows[0] ?? null;
  }

  /** Active keys: not revoked, not expired. */
  async listActive(f: ListFilter): Promise<KeyRow[]> {
    const params: unknown[] = [f.accountId, f.ownerKind];
    let where = `account_id = $1 AND owner_kind = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
    if (f.ownerId) where += ` AND owner_id = $${params.push(f.ownerId)}`;
    if (f.projectId) where += ` AND project_id = $${params.push(f.projectId)}`;
    if (f.before) where += ` AND id < $${params.push(f.before)}`;
    params.push(f.limit);
    return this.sql.query<KeyRow>(`SELECT ${COLUMNS} FROM keys.api_keys WHERE ${where} ORDER BY id DESC LIMIT $${params.length}`, params);
  }

  async markRevoked(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE keys.api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [id]);
  }

  /**
   * The key a new key is created from, locked against its revocation until the new key is
   * committed (FOR SHARE): a revocation of it waits, then finds the new key among its children.
   */
  async parentForCreate(q: Queryable, id: string): Promise<Pick<KeyRow, 'id' | 'expires_at' | 'revoked_at'> | null> {
    const rows = await q.query<Pick<KeyRow, 'id' | 'expires_at' | 'revoked_at'>>(
      `SELECT id, expires_at, revoked_at FROM keys.api_keys WHERE id = $1 FOR SHARE`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Whether key `id` was made, directly or down the tree, from key `ancestor`. */
  async descendsFrom(id: string, ancestor: string): Promise<boolean> {
    const rows = await this.sql.query<{ id: string }>(
      `WITH RECURSIVE up AS (
         SELECT id, created_by_key_id FROM keys.api_keys WHERE id = $1
         UNION ALL
         SELECT k.id, k.created_by_key_id FROM keys.api_keys k JOIN up ON k.id = up.created_by_key_id
       )
       SELECT id FROM up WHERE id = $2 AND id <> $1 LIMIT 1`,
      [id, ancestor],
    );
    return rows.length > 0;
  }

  /**
   * Revokes every active key created from the given keys, then from those, down the tree; returns
   * them. One statement per level, each with a fresh snapshot: a child committed while this runs
   * (its creation held its parent's row, which the level above waited for) is found at the next level.
   */
  async revokeDescendants(q: Queryable, ids: string[]): Promise<KeyRow[]> {
    const out: KeyRow[] = [];
    for (let level = ids; level.length;) {
      const rows = await q.query<KeyRow>(
        `UPDATE keys.api_keys SET revoked_at = now()
          WHERE created_by_key_id = ANY($1::text[]) AND revoked_at IS NULL RETURNING ${COLUMNS}`,
        [level],
      );
      out.push(...rows);
      level = rows.map((r) => r.id);
    }
    return out;
  }

  async revokeOwner(q: Queryable, ownerKind: string, ownerId: string, accountId?: string): Promise<KeyRow[]> {
    const params: unknown[] = [ownerKind, ownerId];
    const scope = accountId ? ` AND account_id = $${params.push(accountId)}` : '';
    return q.query<KeyRow>(
      `UPDATE keys.api_keys SET revoked_at = now()
        WHERE owner_kind = $1 AND owner_id = $2 AND revoked_at IS NULL${scope} RETURNING ${COLUMNS}`,
      params,
    );
  }

  /** Adds batched usage: counts and the latest use per key id. */
  async addUsage(usage: Array<{ id: string; count: number; lastUsedAt: Date | null }>): Promise<void> {
    if (!usage.length) return;
    await this.sql.query(
      `UPDATE keys.api_keys k
          SET usage_count = k.usage_count + u.n,
              last_used_at = GREATEST(k.last_used_at, u.last)
         FROM (SELECT unnest($1::text[]) AS id, unnest($2::bigint[]) AS n, unnest($3::timestamptz[]) AS last) u
        WHERE k.id = u.id`,
      [usage.map((u) => u.id), usage.map((u) => u.count), usage.map((u) => u.lastUsedAt)],
    );
  }

  async rename(q: Queryable, id: string, name: string): Promise<KeyRow> {
    const rows = await q.query<KeyRow>(`UPDATE keys.api_keys SET name = $2 WHERE id = $1 RETURNING ${COLUMNS}`, [id, name]);
    return rows[0]!;
  }

  /** Revoked keys of an account, of one owner kind (and owner, when given), most recently revoked first. */
  async listRevoked(f: ListFilter): Promise<KeyRow[]> {
    const params: unknown[] = [f.accountId, f.ownerKind];
    let where = `account_id = $1 AND owner_kind = $2 AND revoked_at IS NOT NULL`;
    if (f.ownerId) where += ` AND owner_id = $${params.push(f.ownerId)}`;
    if (f.projectId) where += ` AND project_id = $${params.push(f.projectId)}`;
    if (f.before) where += ` AND id < $${params.push(f.before)}`;
    params.push(f.limit);
    return this.sql.query<KeyRow>(`SELECT ${COLUMNS} FROM keys.api_keys WHERE ${where} ORDER BY id DESC LIMIT $${params.length}`, params);
  }
}
