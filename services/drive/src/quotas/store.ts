/** The SQL of per-account quotas (docs/drive.md, "Quotas"); the rules are in quotas.ts. */
import type { Queryable } from '@svc/kit';

/** An account's write count in a minute. */
export interface WriteWindow {
  /** When the minute the count is of started (null: the account never wrote). */
  windowStart: Date | null;
  writes: number;
  /** Seconds until that minute is over (at least 1). */
  secondsLeft: number;
}

/** Content no item, kept version, open upload or site deployment references. */
const UNREFERENCED = `NOT EXISTS (SELECT 1 FROM drive.items i WHERE i.account_id = b.account_id AND i.sha256 = b.sha256)
  AND NOT EXISTS (SELECT 1 FROM drive.uploads u WHERE u.account_id = b.account_id AND u.sha256 = b.sha256)
  AND NOT EXISTS (SELECT 1 FROM drive.site_files f WHERE f.account_id = b.account_id AND f.sha256 = b.sha256)
  AND NOT EXISTS (SELECT 1 FROM drive.versions v WHERE v.account_id = b.account_id AND v.sha256 = b.sha256)`;

// date_part, not extract(… FROM …): a FROM before the table's would name the query's trace span after a column.
const SECONDS_LEFT = `GREATEST(1, ceil(date_part('epoch', window_start + interval '1 minute' - now())))::int`;

/** Counts $2 writes of account $1 in the current minute (a new minute starts the count again), locking its row. */
const COUNT_WRITES = `INSERT INTO drive.write_windows AS w (account_id, window_start, writes) VALUES ($1, date_trunc('minute', now()), $2)
  ON CONFLICT (account_id) DO UPDATE SET
    writes = CASE WHEN w.window_start = EXCLUDED.window_start THEN w.writes + EXCLUDED.writes ELSE EXCLUDED.writes END,
    window_start = EXCLUDED.window_start`;

/** A write window's row (window_start, writes, left), or none: the account has no count in that minute. */
type WindowRow = { window_start: Date | null; writes: number | null; left: number | null };
const windowOf = (r: WindowRow | undefined): WriteWindow =>
  r && r.window_start !== null
    ? { windowStart: new Date(r.window_start), writes: Number(r.writes), secondsLeft: Number(r.left) }
    : { windowStart: null, writes: 0, secondsLeft: 60 };

export class QuotaStore {
  /**
   * Bytes of the account's files (every drive of it) and of its kept versions: the counters the
   * triggers on drive.items and drive.versions keep (migration 0010), as this transaction sees them.
   */
  async usage(q: Queryable, accountId: string): Promise<{ live: number; versions: number }> {
    const rows = await q.query<{ bytes_live: string; bytes_versions: string }>(
      `SELECT bytes_live, bytes_versions FROM drive.usage WHERE account_id = $1`,
      [accountId],
    );
    return { live: Number(rows[0]?.bytes_live ?? 0), versions: Number(rows[0]?.bytes_versions ?? 0) };
  }

  /** The account's count as stored: the last minute it wrote in (not moved on by time alone). */
  async lastWindow(q: Queryable, accountId: string): Promise<WriteWindow> {
    const rows = await q.query<WindowRow>(`SELECT window_start, writes, ${SECONDS_LEFT} AS left FROM drive.write_windows WHERE account_id = $1`, [
      accountId,
    ]);
    return windowOf(rows[0]);
  }

  /**
   * What a write is checked against before it is made, in one statement: the account's writes in
   * the current minute (0 when its last write was in an earlier one) and its files' bytes.
   */
  async beforeWrite(q: Queryable, accountId: string): Promise<{ window: WriteWindow; live: number }> {
    const rows = await q.query<WindowRow & { bytes_live: string | null }>(
      `SELECT w.window_start, w.writes, ${SECONDS_LEFT} AS left, u.bytes_live
         FROM drive.write_windows w
         RIGHT JOIN (SELECT $1::text AS account_id) a ON w.account_id = a.account_id AND w.window_start = date_trunc('minute', now())
         LEFT JOIN drive.usage u ON u.account_id = a.account_id`,
      [accountId],
    );
    return { window: windowOf(rows[0]), live: Number(rows[0]?.bytes_live ?? 0) };
  }

  /**
   * Counts `n` writes (as countWrites) and reads the account's files' bytes after them, in one
   * statement; the usage it reads is as this transaction's earlier statements left it.
   */
  async countWritesAndUsage(q: Queryable, accountId: string, n: number): Promise<{ window: WriteWindow; live: number }> {
    const rows = await q.query<WindowRow & { bytes_live: string | null }>(
      `WITH w AS (${COUNT_WRITES} RETURNING window_start, writes, ${SECONDS_LEFT} AS left)
       SELECT w.window_start, w.writes, w.left, u.bytes_live FROM drive.usage u RIGHT JOIN w ON u.account_id = $1`,
      [accountId, n],
    );
    return { window: windowOf(rows[0]), live: Number(rows[0]?.bytes_live ?? 0) };
  }

  /**
   * Counts `n` writes in the current minute (a new minute starts the count again) and locks the
   * account's row until the transaction ends; the count after them.
   */
  async countWrites(q: Queryable, accountId: string, n: number): Promise<WriteWindow> {
    const rows = await q.query<WindowRow>(`${COUNT_WRITES} RETURNING window_start, writes, ${SECONDS_LEFT} AS left`, [accountId, n]);
    return windowOf(rows[0]);
  }

  /**
   * Deletes the account's oldest kept versions beyond `limit` bytes (the newest kept while they
   * fit); the contents they named.
   */
  async dropOldVersions(q: Queryable, accountId: string, limit: number): Promise<string[]> {
    const rows = await q.query<{ sha256: string }>(
      `WITH ranked AS (
         SELECT id, sum(size) OVER (ORDER BY replaced_at DESC, id DESC) AS running FROM drive.versions WHERE account_id = $1
       )
       DELETE FROM drive.versions v USING ranked r WHERE v.id = r.id AND r.running > $2 RETURNING v.sha256`,
      [accountId, limit],
    );
    return [...new Set(rows.map((r) => r.sha256))];
  }

  /**
   * Released content awaiting collection beyond what each account's version quota leaves room for
   * (the quota less its kept versions), the longest-released first: at most `limit`. Content held
   * again since its release (longer than the grace period `graceSeconds` a release gives: a deploy
   * holding it) is left alone.
   */
  async overBudget(q: Queryable, versionQuota: number, graceSeconds: number, limit: number): Promise<Array<{ account_id: string; sha256: string }>> {
    return q.query(
      `WITH garbage AS (
         SELECT b.account_id, b.sha256, b.size, b.released_at FROM drive.blobs b
          WHERE b.released_at IS NOT NULL AND b.held_until <= b.released_at + make_interval(secs => $3) AND ${UNREFERENCED}
       ), room AS (
         SELECT a.account_id,
                $1::bigint - COALESCE((SELECT sum(v.size) FROM drive.versions v WHERE v.account_id = a.account_id), 0) AS left
           FROM (SELECT DISTINCT account_id FROM garbage) a
       ), ranked AS (
         SELECT g.account_id, g.sha256, g.released_at,
                sum(g.size) OVER (PARTITION BY g.account_id ORDER BY g.released_at DESC, g.sha256 DESC) AS running
           FROM garbage g
       )
       SELECT r.account_id, r.sha256 FROM ranked r JOIN room USING (account_id)
        WHERE r.running > room.left ORDER BY r.released_at, r.sha256 LIMIT $2`,
      [versionQuota, limit, graceSeconds],
    );
  }

  /** Of these contents, the ones still unreferenced, locked for removal (skipping any another transaction holds). */
  async lockUnreferenced(q: Queryable, keys: Array<{ account_id: string; sha256: string }>): Promise<Array<{ account_id: string; sha256: string }>> {
    if (!keys.length) return [];
    return q.query(
      `SELECT b.account_id, b.sha256 FROM drive.blobs b
        JOIN unnest($1::text[], $2::text[]) AS k (account_id, sha256) ON k.account_id = b.account_id AND k.sha256 = b.sha256
        WHERE ${UNREFERENCED}
        FOR UPDATE OF b SKIP LOCKED`,
      [keys.map((k) => k.account_id), keys.map((k) => k.sha256)],
    );
  }
}
