import { createMemoryBus, createPgliteSql, createPgSql, type DomainError, guardMode, newId, type Sql, TransactionEscapeError } from '@svc/kit';

import { createDatabase, randomName, REAL, tempDir } from '../../../../test/support/backends';

/**
 * The transaction guard (packages/kit/src/storage/sql-guard.ts): while a transaction of an Sql is
 * open, a statement sent through that Sql itself from the transaction's work fails, naming the
 * statement, instead of running outside the transaction (PostgreSQL) or waiting for it forever
 * (PGlite, one connection).
 */

type Maker = [string, () => Promise<{ sql: Sql; close(): Promise<void> }>];
const makers: Maker[] = [
  [
    'pglite',
    async () => {
      const sql = await createPgliteSql(tempDir());
      return { sql, close: () => sql.close() };
    },
  ],
];
if (REAL.pg) {
  makers.push([
    'postgresql',
    async () => {
      const db = await createDatabase(REAL.pg!);
      const sql = createPgSql(db.url, { max: 4 });
      return {
        sql,
        close: async () => {
          await sql.close();
          await db.drop();
        },
      };
    },
  ]);
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err as Error,
  );

describe.each(makers)('the transaction guard on %s', (_name, make) => {
  let sql: Sql;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ sql, close } = await make());
    await sql.exec('CREATE TABLE IF NOT EXISTS items (id text PRIMARY KEY)');
  });
  afterAll(() => close());

  test('a query through the Sql inside its own transaction fails, naming the statement, and the transaction rolls back', async () => {
    const err = await errorOf(
      sql.tx(async (q) => {
        await q.query('INSERT INTO items (id) VALUES ($1)', ['kept-out']);
        await sql.query('SELECT id FROM items WHERE id = $1', ['kept-out']);
      }),
    );
    expect(err).toBeInstanceOf(TransactionEscapeError);
    expect(err.message).toContain('"SELECT id FROM items WHERE id = $1"');
    expect(err.message).toMatch(/pass the transaction/);
    expect(await sql.query('SELECT id FROM items WHERE id = $1', ['kept-out'])).toEqual([]);
  });

  test('exec and a nested transaction through the Sql fail too, also from deeper in the work', async () => {
    const deep = async () => {
      await new Promise((r) => setImmediate(r));
      await sql.exec('SELECT 1');
    };
    expect(await errorOf(sql.tx(() => deep()))).toBeInstanceOf(TransactionEscapeError);
    const nested = await errorOf(sql.tx(() => sql.tx((q) => q.query('SELECT 1'))));
    expect(nested).toBeInstanceOf(TransactionEscapeError);
    expect(nested.message).toContain('BEGIN');
  });

  test('the long statement is named by its first 80 characters, on one line', async () => {
    const text = `SELECT id\n  FROM items\n WHERE id = $1 ${'AND id IS NOT NULL '.repeat(10)}`;
    const err = (await errorOf(sql.tx(() => sql.query(text, ['x'])))) as TransactionEscapeError;
    expect(err.statement).toBe(`${text.replace(/\s+/g, ' ').trim().slice(0, 80)}…`);
  });

  test("the transaction's own Queryable works, and work it started that runs after the commit is not refused", async () => {
    let later: Promise<unknown> | undefined;
    let opened!: () => void;
    const committed = new Promise<void>((r) => (opened = r));
    await sql.tx(async (q) => {
      await q.query('INSERT INTO items (id) VALUES ($1)', ['a']);
      // Started inside the transaction (it inherits its context), it runs once the transaction has ended.
      later = committed.then(() => sql.query<{ id: string }>('SELECT id FROM items WHERE id = $1', ['a']));
    });
    opened();
    expect(await later).toEqual([{ id: 'a' }]);
  });

  test("the in-process bus delivers events and jobs as work of their own, not inside the publisher's transaction", async () => {
    const bus = createMemoryBus(randomName('ns'));
    const event = new Promise((resolve) => void bus.subscribe('x.>', async () => resolve(await sql.query('SELECT 1 AS n'))));
    const job = new Promise((resolve) => void bus.work('jobs', async () => resolve(await sql.query('SELECT 2 AS n'))));
    await sql.tx(async (q) => {
      await bus.publish('x.done', { id: newId('evt'), type: 'x.done', occurredAt: new Date().toISOString(), accountId: 'acct_x', data: {} });
      await bus.enqueue('jobs', 'job-1', {});
      // The handlers run while the transaction is still open (on PGlite their statements then wait for it).
      await new Promise((r) => setTimeout(r, 50));
      await q.query('SELECT 1');
    });
    expect(await event).toEqual([{ n: 1 }]);
    expect(await job).toEqual([{ n: 2 }]);
    await bus.close();
  });

  test('statements of other work, while a transaction is open, are not refused', async () => {
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    let finish!: () => void;
    const tx = sql.tx(async (q) => {
      await q.query('SELECT 1');
      inside();
      await new Promise<void>((r) => (finish = r));
    });
    await entered;
    // Outside the transaction's context: on PostgreSQL it runs now, on PGlite after the commit.
    const other = sql.query<{ n: number }>('SELECT 1 AS n');
    finish();
    await tx;
    expect(await other).toEqual([{ n: 1 }]);
  });
});

test('the guard refuses in tests; elsewhere it is off where async context is costly, else refuses in development and warns in production', () => {
  expect(guardMode({ NODE_ENV: 'test' }, true)).toBe('throw');
  expect(guardMode({}, true)).toBe('off');
  expect(guardMode({ NODE_ENV: 'production' }, true)).toBe('off');
  expect(guardMode({}, false)).toBe('throw');
  expect(guardMode({ NODE_ENV: 'production' }, false)).toBe('warn');
  // Set, it wins; a value it does not know stops the start.
  expect(guardMode({ NODE_ENV: 'test', SVC_SQL_GUARD: 'off' }, false)).toBe('off');
  expect(guardMode({ NODE_ENV: 'production', SVC_SQL_GUARD: 'throw' }, true)).toBe('throw');
  expect(() => guardMode({ SVC_SQL_GUARD: 'loud' })).toThrow(/SVC_SQL_GUARD must be one of throw, warn, off/);
});

test('on PGlite the guard refuses an escape in production too; turned off, the escape fails as database_busy after its bound, with its transaction', async () => {
  const before = { env: process.env.NODE_ENV, guard: process.env.SVC_SQL_GUARD };
  try {
    process.env.NODE_ENV = 'production';
    process.env.SVC_SQL_GUARD = 'warn';
    const lite = await createPgliteSql(tempDir());
    try {
      expect(await errorOf(lite.tx(() => lite.query('SELECT 1')))).toBeInstanceOf(TransactionEscapeError);
    } finally {
      await lite.close();
    }
    process.env.SVC_SQL_GUARD = 'off';
    const off = await createPgliteSql(tempDir(), { busyTimeoutMs: 300 });
    try {
      const err = (await errorOf(off.tx(() => off.query('SELECT 1')))) as DomainError;
      expect(err.code).toBe('database_busy');
      // The connection is free again.
      expect(await off.query<{ n: number }>('SELECT 1 AS n')).toEqual([{ n: 1 }]);
    } finally {
      await off.close();
    }
  } finally {
    process.env.NODE_ENV = before.env;
    if (before.guard === undefined) delete process.env.SVC_SQL_GUARD;
    else process.env.SVC_SQL_GUARD = before.guard;
  }
}, 120_000); // two new embedded databases are made (initdb each): seconds, far more on a loaded machine

(REAL.pg ? test : test.skip)('in production on PostgreSQL an escaping statement runs, with one warning per statement text', async () => {
  const db = await createDatabase(REAL.pg!);
  const warnings: string[] = [];
  const sql = createPgSql(db.url, { max: 4, guard: 'warn', warn: (_message, statement) => void warnings.push(statement) });
  try {
    const out = await sql.tx(async () => {
      const a = await sql.query<{ n: number }>('SELECT 1 AS n');
      await sql.query<{ n: number }>('SELECT 1 AS n');
      await sql.query('SELECT 2 AS n');
      return a;
    });
    expect(out).toEqual([{ n: 1 }]);
    expect(warnings).toEqual(['SELECT 1 AS n', 'SELECT 2 AS n']);
  } finally {
    await sql.close();
    await db.drop();
  }
});

describe('the embedded database has bounds', () => {
  let sql: Sql;
  beforeAll(async () => {
    sql = await createPgliteSql(tempDir(), { busyTimeoutMs: 300, txTimeoutMs: 1500, closeTimeoutMs: 2000 });
    await sql.exec('CREATE TABLE items (id text PRIMARY KEY)');
  });
  afterAll(() => sql.close());

  /** A transaction (through the kit's API) that holds the one connection until released. */
  const hold = () => {
    let release!: () => void;
    let entered!: () => void;
    const open = new Promise<void>((r) => (entered = r));
    const done = sql
      .tx(async (q) => {
        await q.query('INSERT INTO items (id) VALUES ($1)', ['held']);
        entered();
        await new Promise<void>((r) => (release = r));
        return q.query('SELECT 1');
      })
      .then(
        () => 'committed',
        (err: DomainError) => err.code ?? err.message,
      );
    return { open, done, release: () => release() };
  };

  test('a statement waiting for a held connection fails with 503 database_busy after its bound, as do a transaction and a ping', async () => {
    const h = hold();
    await h.open;
    const busy = (await errorOf(sql.query('SELECT 1'))) as DomainError;
    expect([busy.code, busy.httpStatus, busy.details]).toEqual(['database_busy', 503, { retryAfterSeconds: expect.any(Number) }]);
    expect(busy.message).toMatch(/a transaction has held for \d+ ms/);
    expect(((await errorOf(sql.tx((q) => q.query('SELECT 1')))) as DomainError).code).toBe('database_busy');
    expect(((await errorOf(sql.ping())) as DomainError).code).toBe('database_busy');
    h.release();
    expect(await h.done).toBe('committed');
    expect(await sql.query('SELECT id FROM items')).toEqual([{ id: 'held' }]);
    await sql.query('DELETE FROM items');
  });

  test('a transaction past its bound is rolled back; its caller is told so and its later statements are refused', async () => {
    const h = hold();
    await h.open;
    expect(await h.done).toBe('transaction_timeout');
    // Rolled back: its insert is gone, and the connection serves others again.
    expect(await sql.query('SELECT id FROM items')).toEqual([]);
    h.release();
    await sql.ping();
  });

  test('a migration-sized bound can be asked for', async () => {
    const out = await sql.tx(
      async (q) => {
        await new Promise((r) => setTimeout(r, 2000));
        return q.query<{ n: number }>('SELECT 1 AS n');
      },
      { timeoutMs: 60_000 },
    );
    expect(out).toEqual([{ n: 1 }]);
  });

  test('close() returns while a transaction is held open, and rolls it back', async () => {
    const own = await createPgliteSql(tempDir(), { txTimeoutMs: 600_000 });
    await own.exec('CREATE TABLE items (id text PRIMARY KEY)');
    let entered!: () => void;
    const open = new Promise<void>((r) => (entered = r));
    const held = own
      .tx(async (q) => {
        await q.query('INSERT INTO items (id) VALUES ($1)', ['x']);
        entered();
        await new Promise(() => {});
      })
      .then(
        () => 'committed',
        (err: DomainError) => err.code,
      );
    await open;
    await own.close();
    expect(await held).toBe('database_unavailable');
    expect(((await errorOf(own.query('SELECT 1'))) as DomainError).code).toBe('database_unavailable');
  }, 120_000); // a new embedded database is made first (initdb): seconds, far more on a loaded machine
});
