import net from 'node:net';

import { createPgSql, databaseUnavailable, DomainError } from '@svc/kit';

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const outageOf = async (work: Promise<unknown>) => {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw err;
  const d = err as DomainError;
  return { kind: d.kind, code: d.code, status: d.httpStatus, details: d.details };
};

test('a database that refuses connections is a 503 database_unavailable with a retry delay, for statements and transactions', async () => {
  const sql = createPgSql(`postgres://postgres@127.0.0.1:${await closedPort()}/x`);
  try {
    const expected = { kind: 'unavailable', code: 'database_unavailable', status: 503, details: { retryAfterSeconds: expect.any(Number) } };
    expect(await outageOf(sql.query('SELECT $1::int AS n', [1]))).toEqual(expected);
    expect(await outageOf(sql.exec('SELECT 1'))).toEqual(expected);
    expect(await outageOf(sql.tx((q) => q.query('SELECT 1')))).toEqual(expected);
    // Nothing answered lately: the ping asks the database, and says it is down.
    expect(await outageOf(sql.ping())).toEqual(expected);
  } finally {
    await sql.close();
  }
});

test('only connection failures are mapped: a wrong statement stays what it was', () => {
  const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  for (const code of ['57P01', '57P03', '08006', '08001', '53300', 'ECONNREFUSED'])
    expect(databaseUnavailable(pgError(code))?.code).toBe('database_unavailable');
  expect(databaseUnavailable(new Error('timeout exceeded when trying to connect'))?.httpStatus).toBe(503);
  expect(databaseUnavailable(pgError('55000', 'database "t" is not currently accepting connections'))?.httpStatus).toBe(503);
  for (const code of ['23505', '42601', '40001', '55000']) expect(databaseUnavailable(pgError(code))).toBeUndefined();
  expect(databaseUnavailable(new DomainError('not_found', 'not_found', 'x'))).toBeUndefined();
});
