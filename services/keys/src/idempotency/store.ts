import type { Sql } from '@svc/kit';

/** Whose key it is: the acting account and the API key (or host credential) that sent it. */
export interface Scope {
  accountId: string;
  keyId: string;
  key: string;
}

export interface IdempotencyRow {
  fingerprint: string;
  /** Set while the request runs; null once its answer is recorded. */
  claim: string | null;
  status: number | null;
  headers: Record<string, string> | null;
  body: Buffer | null;
  content_sha256: string | null;
}

export interface RecordedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** For a streamed request: the hash of its content (empty otherwise). */
  contentSha256: string;
}

/** SQL for Idempotency-Key records (keys.idempotency). Rules live in idempotency.ts. */
export class IdempotencyStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Claims the key for a request: a new record, or one that has expired (not yet swept), or one
   * whose claim outlived its lease for the same request (its gateway died mid-request). Returns
   * false when the key is held: by a running request, a recorded answer, or another request.
   */
  async claim(s: Scope, fingerprint: string, claim: string, ttlSeconds: number, leaseSeconds: number): Promise<boolean> {
    const rows = await this.sql.query<{ claim: string }>(
      `INSERT INTO keys.idempotency AS i (account_id, key_id, idem_key, fingerprint, claim, locked_until, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 second', now() + $7 * interval '1 second')
       ON CONFLICT (account_id, key_id, idem_key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, claim = EXCLUDED.claim, locked_until = EXCLUDED.locked_until,
             expires_at = EXCLUDED.expires_at, created_at = now(), status = NULL, headers = NULL, body = NULL, content_sha256 = NULL
         WHERE i.expires_at <= now()
            OR (i.claim IS NOT NULL AND i.locked_until <= now() AND i.fingerprint = EXCLUDED.fingerprint)
       RETURNING claim`,
      [s.accountId, s.keyId, s.key, fingerprint, claim, leaseSeconds, ttlSeconds],
    );
    return rows[0]?.claim === claim;
  }

  async get(s: Scope): Promise<IdempotencyRow | null> {
    const rows = await this.sql.query<IdempotencyRow>(
      `SELECT fingerprint, claim, status, headers, body, content_sha256 FROM keys.idempotency
       WHERE account_id = $1 AND key_id = $2 AND idem_key = $3 AND expires_at > now()`,
      [s.accountId, s.keyId, s.key],
    );
    return rows[0] ?? null;
  }

  /** Records the answer of the request holding `claim`; false when the claim is no longer held. */
  async finish(s: Scope, claim: string, answer: RecordedAnswer): Promise<boolean> {
    const rows = await this.sql.query(
      `UPDATE keys.idempotency SET status = $5, headers = $6, body = $7, content_sha256 = $8, claim = NULL, locked_until = NULL
       WHERE account_id = $1 AND key_id = $2 AND idem_key = $3 AND claim = $4 RETURNING 1`,
      [s.accountId, s.keyId, s.key, claim, answer.status, JSON.stringify(answer.headers), answer.body, answer.contentSha256 || null],
    );
    return rows.length > 0;
  }

  /** Forgets the record of the request holding `claim` (the key may be used again). */
  async release(s: Scope, claim: string): Promise<void> {
    await this.sql.query(`DELETE FROM keys.idempotency WHERE account_id = $1 AND key_id = $2 AND idem_key = $3 AND claim = $4`, [
      s.accountId,
      s.keyId,
      s.key,
      claim,
    ]);
  }

  /** Deletes up to `batch` expired records; returns how many. */
  async sweep(batch: number): Promise<number> {
    const rows = await this.sql.query(
      `DELETE FROM keys.idempotency WHERE (account_id, key_id, idem_key) IN (
         SELECT account_id, key_id, idem_key FROM keys.idempotency WHERE expires_at <= now() LIMIT $1)
       RETURNING 1`,
      [batch],
    );
    return rows.length;
  }
}
