import type { Migration } from '@svc/kit';

/**
 * A trigger function and its three statement triggers on `drive.<table>`: the rows' `size` (those
 * `filter` keeps) added to `column` of each account's counter by an insert, taken off by a delete,
 * and both by an update (its old and new rows).
 */
const counting = (table: string, column: string, filter: string) => {
  const upsert = (rows: string) => `
        INSERT INTO drive.usage AS u (account_id, ${column})
        SELECT account_id, sum(d) FROM (${rows}) c GROUP BY account_id HAVING sum(d) <> 0 ORDER BY account_id
        ON CONFLICT (account_id) DO UPDATE SET ${column} = u.${column} + EXCLUDED.${column};`;
  const added = `SELECT account_id, size AS d FROM new_rows WHERE ${filter}`;
  const removed = `SELECT account_id, -size AS d FROM old_rows WHERE ${filter}`;
  return `
    CREATE FUNCTION drive.count_${table}_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN ${upsert(added)}
      ELSIF TG_OP = 'DELETE' THEN ${upsert(removed)}
      ELSE ${upsert(`${added} UNION ALL ${removed}`)}
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER ${table}_usage_insert AFTER INSERT ON drive.${table}
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION drive.count_${table}_bytes();
    CREATE TRIGGER ${table}_usage_update AFTER UPDATE ON drive.${table}
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION drive.count_${table}_bytes();
    CREATE TRIGGER ${table}_usage_delete AFTER DELETE ON drive.${table}
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION drive.count_${table}_bytes();`;
};

/**
 * Each account's bytes, kept as counters (docs/drive.md, "Quotas"): `bytes_live` (its files, every
 * drive of it) and `bytes_versions` (its kept versions), which every content write checks against
 * its quotas. Summing the account's rows on each check made a write's cost grow with the files the
 * account held (an extract of 2,000 entries into an account of 4,000 files took 32 s, against 24 s
 * into an empty one).
 *
 * Statement triggers on drive.items and drive.versions move the counters in the same transaction
 * as the rows, whatever statement changes them (a delete that cascades included): one upsert per
 * account per statement, in account order (so that two statements touching several accounts wait
 * in one order). The counts are filled from the rows as they stand, under a lock that keeps
 * writers out until the migration commits.
 */
export const usage: Migration = {
  id: '0010_usage',
  sql: `
    CREATE TABLE drive.usage (
      account_id text PRIMARY KEY,
      bytes_live bigint NOT NULL DEFAULT 0,
      bytes_versions bigint NOT NULL DEFAULT 0
    );

    ${counting('items', 'bytes_live', "kind = 'file'")}
    ${counting('versions', 'bytes_versions', 'true')}

    LOCK TABLE drive.items, drive.versions IN SHARE ROW EXCLUSIVE MODE;
    INSERT INTO drive.usage (account_id, bytes_live, bytes_versions)
    SELECT account_id, sum(live), sum(kept) FROM (
      SELECT account_id, size AS live, 0 AS kept FROM drive.items WHERE kind = 'file'
      UNION ALL
      SELECT account_id, 0, size FROM drive.versions
    ) c GROUP BY account_id;
  `,
};
