import type { Migration } from '@svc/kit';

/**
 * Per-account storage quotas (docs/drive.md, "Quotas").
 * - write_windows: an account's content writes in the minute that started at window_start (a
 *   fixed window; a write in a later minute starts the count again). One row per account, locked
 *   by each counted write at the end of its transaction, so that an account's commits check the
 *   live-bytes quota one after the other.
 * - blobs.released_at: when content was last released (replaced, deleted, its version or
 *   deployment dropped), NULL once something holds it again (an upload placing it, a copy, a
 *   deploy). Released content over the account's version quota is collected before its grace
 *   period ends, the longest-released first.
 * - versions_account_age: the account's kept versions oldest first, for dropping those beyond the
 *   version quota.
 */
export const quotas: Migration = {
  id: '0008_quotas',
  sql: `
    CREATE TABLE drive.write_windows (
      account_id text PRIMARY KEY,
      window_start timestamptz NOT NULL,
      writes integer NOT NULL
    );
    ALTER TABLE drive.blobs ADD COLUMN released_at timestamptz;
    CREATE INDEX blobs_released ON drive.blobs (account_id, released_at) WHERE released_at IS NOT NULL;
    CREATE INDEX versions_account_age ON drive.versions (account_id, replaced_at, id);`,
};
