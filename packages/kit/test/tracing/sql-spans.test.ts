import { sqlSpanName } from '../../src/tracing/sql-spans';

test('a SQL span is named by its operation and the table it names', () => {
  const cases: Array<[string, string]> = [
    ['SELECT id, name FROM keys.api_keys WHERE id = $1', 'SELECT keys.api_keys'],
    ['  select count(*) from drive.items i JOIN drive.blobs b ON true', 'SELECT drive.items'],
    ['INSERT INTO agents.outbox (id) VALUES ($1)', 'INSERT agents.outbox'],
    ['UPDATE keys.api_keys SET revoked_at = now()', 'UPDATE keys.api_keys'],
    ['DELETE FROM keys.idempotency WHERE expires_at < now()', 'DELETE keys.idempotency'],
    ['WITH gone AS (DELETE FROM drive.items WHERE id = $1 RETURNING id) SELECT count(*) FROM gone', 'SELECT gone'],
    ['WITH x AS (SELECT 1) UPDATE trading.orders SET status = $1', 'UPDATE trading.orders'],
    ['BEGIN', 'BEGIN'],
    ['COMMIT', 'COMMIT'],
    ['SELECT 1', 'SELECT'],
    ['/* why */ SELECT * FROM "profiles"."versions"', 'SELECT profiles.versions'],
    ['SELECT pg_advisory_xact_lock(hashtext($1))', 'SELECT'],
    // A FROM inside parentheses is not the statement's table.
    [
      "SELECT window_start, ceil(extract(epoch FROM window_start + interval '1 minute'))::int AS left FROM drive.write_windows",
      'SELECT drive.write_windows',
    ],
    ['SELECT count(*)::int AS n, extract(epoch FROM now() - min(created_at)) AS lag FROM agents.outbox', 'SELECT agents.outbox'],
    ['SELECT * FROM (SELECT 1) s', 'SELECT'],
  ];
  for (const [text, name] of cases) expect([text, sqlSpanName(text).name]).toEqual([text, name]);
});
