import type { Queryable, Sql } from '@svc/kit';

/** One passkey of a person (accounts.passkeys): its public key, never a secret. */
export interface PasskeyRow {
  id: string;
  user_id: string;
  name: string;
  public_key: string;
  counter: number;
  transports: string[];
  device_type: string;
  backed_up: boolean;
  created_at: Date;
  last_used_at: Date | null;
}

export type Ceremony = 'registration' | 'authentication';

const COLUMNS = 'id, user_id, name, public_key, counter, transports, device_type, backed_up, created_at, last_used_at';
const row = (r: PasskeyRow): PasskeyRow => ({ ...r, counter: Number(r.counter), transports: r.transports ?? [] });

/** SQL of passkeys and of the challenges of ceremonies in progress (accounts.passkeys, accounts.passkey_challenges). */
export class PasskeyStore {
  constructor(readonly sql: Sql) {}

  async putChallenge(c: { id: string; ceremony: Ceremony; userId: string | null; binding: string; ttlSeconds: number }): Promise<void> {
    await this.sql.query(
      `INSERT INTO accounts.passkey_challenges (id, ceremony, user_id, binding, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::int))`,
      [c.id, c.ceremony, c.userId, c.binding, c.ttlSeconds],
    );
  }

  /** Takes a live challenge, once: it is gone whether or not it is then found good. */
  async takeChallenge(q: Queryable, id: string): Promise<{ ceremony: Ceremony; user_id: string | null; binding: string } | null> {
    const rows = await q.query<{ ceremony: Ceremony; user_id: string | null; binding: string; live: boolean }>(
      `DELETE FROM accounts.passkey_challenges WHERE id = $1 RETURNING ceremony, user_id, binding, expires_at > now() AS live`,
      [id],
    );
    const r = rows[0];
    return r?.live ? r : null;
  }

  async insert(
    q: Queryable,
    p: {
      id: string;
      userId: string;
      name: string;
      publicKey: string;
      counter: number;
      transports: string[];
      deviceType: string;
      backedUp: boolean;
      aaguid: string;
    },
  ): Promise<PasskeyRow | null> {
    const rows = await q.query<PasskeyRow>(
      `INSERT INTO accounts.passkeys (id, user_id, name, public_key, counter, transports, device_type, backed_up, aaguid)
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8, $9)
       ON CONFLICT (id) DO NOTHING
       RETURNING ${COLUMNS}`,
      [p.id, p.userId, p.name, p.publicKey, p.counter, p.transports, p.deviceType, p.backedUp, p.aaguid],
    );
    return rows[0] ? row(rows[0]) : null;
  }

  async byId(id: string): Promise<PasskeyRow | null> {
    const rows = await this.sql.query<PasskeyRow>(`SELECT ${COLUMNS} FROM accounts.passkeys WHERE id = $1`, [id]);
    return rows[0] ? row(rows[0]) : null;
  }

  async ofUser(userId: string, limit: number): Promise<PasskeyRow[]> {
    const rows = await this.sql.query<PasskeyRow>(`SELECT ${COLUMNS} FROM accounts.passkeys WHERE user_id = $1 ORDER BY created_at, id LIMIT $2`, [
      userId,
      limit,
    ]);
    return rows.map(row);
  }

  async countOf(q: Queryable, userId: string): Promise<number> {
    const rows = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM accounts.passkeys WHERE user_id = $1`, [userId]);
    return rows[0]?.n ?? 0;
  }

  /**
   * Records a sign-in: the new counter and backup state, only if the stored counter is still the
   * one the assertion was checked against (two sign-ins racing with one counter: one wins).
   */
  async used(q: Queryable, u: { id: string; expectedCounter: number; counter: number; backedUp: boolean }): Promise<boolean> {
    const rows = await q.query(
      `UPDATE accounts.passkeys SET counter = $3, backed_up = $4, last_used_at = now()
        WHERE id = $1 AND counter = $2 RETURNING id`,
      [u.id, u.expectedCounter, u.counter, u.backedUp],
    );
    return rows.length > 0;
  }

  async delete(q: Queryable, userId: string, id: string): Promise<PasskeyRow | null> {
    const rows = await q.query<PasskeyRow>(`DELETE FROM accounts.passkeys WHERE id = $1 AND user_id = $2 RETURNING ${COLUMNS}`, [id, userId]);
    return rows[0] ? row(rows[0]) : null;
  }

  /** Deletes challenges expired for more than a minute: how many went. */
  async sweep(limit: number): Promise<number> {
    const rows = await this.sql.query(
      `DELETE FROM accounts.passkey_challenges WHERE id IN (
         SELECT id FROM accounts.passkey_challenges WHERE expires_at < now() - interval '1 minute' LIMIT $1)
       RETURNING id`,
      [limit],
    );
    return rows.length;
  }
}
