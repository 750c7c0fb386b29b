import type { Queryable, Sql } from '@svc/kit';

/** One record of the authorization server (oidc-provider's model and id). */
export interface OauthRecordRow {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grant_id: string | null;
  account_id: string | null;
  created_at: Date;
  last_used_at: Date | null;
  consumed_at: Date | null;
}

export interface ServerKeyRow {
  id: string;
  private_jwk_enc: string;
}

const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const recordRow = (r: OauthRecordRow): OauthRecordRow => ({ ...r, payload: json(r.payload) });
const COLUMNS = 'model, id, payload, grant_id, account_id, created_at, last_used_at, consumed_at';
/** A live record: not expired. */
const LIVE = '(expires_at IS NULL OR expires_at > now())';

/** SQL of the OAuth records (accounts.oauth_records, accounts.oauth_server_keys). */
export class OauthStore {
  constructor(readonly sql: Sql) {}

  /** Writes a record whole (oidc-provider saves a model again after changing it). */
  async put(
    q: Queryable,
    r: {
      model: string;
      id: string;
      payload: Record<string, unknown>;
      grantId: string | null;
      uid: string | null;
      userCode: string | null;
      accountId: string | null;
      expiresInSeconds: number;
    },
  ): Promise<boolean> {
    const rows = await q.query<{ inserted: boolean }>(
      `INSERT INTO accounts.oauth_records (model, id, payload, grant_id, uid, user_code, account_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8::int > 0 THEN now() + make_interval(secs => $8::int) END)
       ON CONFLICT (model, id) DO UPDATE
         SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, uid = EXCLUDED.uid, user_code = EXCLUDED.user_code,
             account_id = EXCLUDED.account_id, expires_at = EXCLUDED.expires_at
       RETURNING (xmax = 0) AS inserted`,
      [r.model, r.id, JSON.stringify(r.payload), r.grantId, r.uid, r.userCode, r.accountId, r.expiresInSeconds],
    );
    return rows[0]?.inserted ?? false;
  }

  async get(by: { model: string; id?: string; uid?: string; userCode?: string }): Promise<OauthRecordRow | null> {
    const [column, value] = by.id ? ['id', by.id] : by.uid ? ['uid', by.uid] : ['user_code', by.userCode];
    const rows = await this.sql.query<OauthRecordRow>(
      `SELECT ${COLUMNS} FROM accounts.oauth_records WHERE model = $1 AND ${column} = $2 AND ${LIVE} LIMIT 1`,
      [by.model, value],
    );
    return rows[0] ? recordRow(rows[0]) : null;
  }

  /** Marks a live record consumed, once: null when it is not there or was consumed before. */
  async consume(q: Queryable, model: string, id: string, at: number): Promise<{ grantId: string | null } | null> {
    const rows = await q.query<{ grant_id: string | null }>(
      `UPDATE accounts.oauth_records
          SET consumed_at = to_timestamp($3), payload = jsonb_set(payload, '{consumed}', to_jsonb($3::bigint))
        WHERE model = $1 AND id = $2 AND consumed_at IS NULL AND ${LIVE}
        RETURNING grant_id`,
      [model, id, at],
    );
    return rows[0] ? { grantId: rows[0].grant_id } : null;
  }

  async grantOf(q: Queryable, model: string, id: string): Promise<string | null> {
    const rows = await q.query<{ grant_id: string | null }>(`SELECT grant_id FROM accounts.oauth_records WHERE model = $1 AND id = $2`, [model, id]);
    return rows[0]?.grant_id ?? null;
  }

  async destroy(q: Queryable, model: string, id: string): Promise<void> {
    await q.query(`DELETE FROM accounts.oauth_records WHERE model = $1 AND id = $2`, [model, id]);
  }

  /** A grant's record, locked for its revocation. */
  async grantForUpdate(q: Queryable, grantId: string): Promise<OauthRecordRow | null> {
    const rows = await q.query<OauthRecordRow>(`SELECT ${COLUMNS} FROM accounts.oauth_records WHERE model = 'Grant' AND id = $1 FOR UPDATE`, [
      grantId,
    ]);
    return rows[0] ? recordRow(rows[0]) : null;
  }

  /** Deletes what was issued under a grant (and the grant too unless `tokensOnly`): the rows gone. */
  async deleteGrant(q: Queryable, grantId: string, tokensOnly: boolean): Promise<number> {
    const rows = await q.query<{ model: string }>(
      `DELETE FROM accounts.oauth_records
        WHERE grant_id = $1 ${tokensOnly ? '' : `OR (model = 'Grant' AND id = $1)`}
        RETURNING model`,
      [grantId],
    );
    return rows.length;
  }

  /** Notes that a grant was used (a token issued under it). */
  async touchGrant(q: Queryable, grantId: string): Promise<void> {
    await q.query(`UPDATE accounts.oauth_records SET last_used_at = now() WHERE model = 'Grant' AND id = $1`, [grantId]);
  }

  /** A person's live grants, newest first (at most `limit`). */
  async grantsOf(accountId: string, limit: number): Promise<OauthRecordRow[]> {
    const rows = await this.sql.query<OauthRecordRow>(
      `SELECT ${COLUMNS} FROM accounts.oauth_records
        WHERE model = 'Grant' AND account_id = $1 AND ${LIVE}
        ORDER BY created_at DESC LIMIT $2`,
      [accountId, limit],
    );
    return rows.map(recordRow);
  }

  async clients(ids: string[]): Promise<Map<string, Record<string, unknown>>> {
    if (!ids.length) return new Map();
    const rows = await this.sql.query<{ id: string; payload: unknown }>(
      `SELECT id, payload FROM accounts.oauth_records WHERE model = 'Client' AND id = ANY($1::text[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, json<Record<string, unknown>>(r.payload)]));
  }

  /** Deletes records expired for more than a minute, a batch at a time: how many went. */
  async sweep(limit: number): Promise<number> {
    const rows = await this.sql.query<{ id: string }>(
      `DELETE FROM accounts.oauth_records WHERE (model, id) IN (
         SELECT model, id FROM accounts.oauth_records WHERE expires_at < now() - interval '1 minute' LIMIT $1)
       RETURNING id`,
      [limit],
    );
    return rows.length;
  }

  async serverKeys(): Promise<ServerKeyRow[]> {
    return this.sql.query<ServerKeyRow>(`SELECT id, private_jwk_enc FROM accounts.oauth_server_keys WHERE retired_at IS NULL ORDER BY created_at`);
  }

  /** Stores the first key, unless another replica stored one first. */
  async insertServerKeyIfNone(q: Queryable, row: ServerKeyRow): Promise<void> {
    await q.query(`LOCK TABLE accounts.oauth_server_keys IN EXCLUSIVE MODE`);
    const existing = await q.query(`SELECT 1 FROM accounts.oauth_server_keys WHERE retired_at IS NULL LIMIT 1`);
    if (existing.length) return;
    await q.query(`INSERT INTO accounts.oauth_server_keys (id, private_jwk_enc) VALUES ($1, $2)`, [row.id, row.private_jwk_enc]);
  }
}
