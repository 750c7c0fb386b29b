import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';

import {
  type Blobs,
  type Bus,
  type Cache,
  createFsBlobs,
  createLogger,
  createMemoryBus,
  createMemoryCache,
  createNatsBus,
  createPgliteSql,
  createPgSql,
  createRedisCache,
  createS3Blobs,
  enqueueEvent,
  type EventEnvelope,
  eventRows,
  handleOnce,
  migrate,
  newId,
  type Sql,
  startOutboxRelay,
} from '@svc/kit';

import { createDatabase, dropNatsNamespace, randomName, REAL, startS3, tempDir } from '../../../../test/support/backends';

const log = createLogger({ level: 'silent', service: 'test' });
const until = async (cond: () => boolean, ms = 3000) => {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

// Whether the relay marks the event published within three seconds.
const markedSoon = async (sql: Sql, id: string) => {
  const marked = async () => (await sql.query('SELECT id FROM t.outbox WHERE published_at IS NULL AND id = $1', [id])).length === 0;
  for (let i = 0; i < 300 && !(await marked()); i++) await new Promise((r) => setTimeout(r, 10));
  return marked();
};

// Each adapter runs the same contract: embedded always, the real one when its variable is set.
type Maker<T> = [string, () => Promise<{ it: T; close(): Promise<void> }>];

const sqls: Maker<Sql>[] = [
  [
    'pglite',
    async () => {
      const it = await createPgliteSql(tempDir());
      return { it, close: () => it.close() };
    },
  ],
];
if (REAL.pg) {
  sqls.push([
    'postgresql',
    async () => {
      const db = await createDatabase(REAL.pg!);
      const it = createPgSql(db.url);
      return {
        it,
        close: async () => {
          await it.close();
          await db.drop();
        },
      };
    },
  ]);
}

describe.each(sqls)('Sql on %s', (_name, make) => {
  let sql: Sql;
  let close: () => Promise<void>;
  beforeAll(async () => ({ it: sql, close } = await make()));
  afterAll(() => close());

  const migrations = [
    { id: '0001', sql: 'CREATE TABLE t.items (id text PRIMARY KEY, n int NOT NULL)' },
    { id: '0002', sql: 'ALTER TABLE t.items ADD COLUMN note text' },
  ];

  test('migrations apply once, in order, also when started together', async () => {
    const results = await Promise.all([migrate(sql, 't', migrations), migrate(sql, 't', migrations)]);
    const applied = results.flat().filter((m) => !m.startsWith('kit_'));
    expect(applied).toEqual(['0001', '0002']);
    expect(await migrate(sql, 't', migrations)).toEqual([]);
    const rows = await sql.query<{ id: string }>('SELECT id FROM t.schema_migrations ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(['0001', '0002', 'kit_0001_outbox_inbox']);
  });

  test('a transaction that throws leaves nothing', async () => {
    await expect(
      sql.tx(async (q) => {
        await q.query('INSERT INTO t.items (id, n) VALUES ($1, $2)', ['a', 1]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await sql.query('SELECT * FROM t.items')).toEqual([]);
    await sql.tx((q) => q.query('INSERT INTO t.items (id, n) VALUES ($1, $2)', ['b', 2]));
    expect(await sql.query('SELECT id, n FROM t.items')).toEqual([{ id: 'b', n: 2 }]);
  });

  test('a transaction is one unit whichever statement opens it: a failing first one, two sent at once, none at all', async () => {
    // The embedded database sends BEGIN with a transaction's first statement (pglite.ts).
    await expect(sql.tx((q) => q.query('INSERT INTO t.items (id, n) VALUES ($1, $2)', ['c', null]))).rejects.toMatchObject({ code: '23502' });
    await expect(
      sql.tx(async (q) => {
        await Promise.all([
          q.query('INSERT INTO t.items (id, n) VALUES ($1, $2)', ['d', 4]),
          q.query('INSERT INTO t.items (id, n) VALUES ($1, $2)', ['e', 5]),
        ]);
        throw new Error('after both');
      }),
    ).rejects.toThrow('after both');
    expect(await sql.tx(async () => 'nothing run')).toBe('nothing run');
    await sql.tx((q) => Promise.all(['f', 'g'].map((id) => q.query('INSERT INTO t.items (id, n) VALUES ($1, 6)', [id]))));
    // The connection is free again, and only the committed rows are there.
    expect(await sql.query('SELECT id FROM t.items ORDER BY id')).toEqual([{ id: 'b' }, { id: 'f' }, { id: 'g' }]);
    await sql.query("DELETE FROM t.items WHERE id IN ('f', 'g')");
  });

  test('statements keep working after a migration changes the table under them (prepared statements are replanned or rerun)', async () => {
    await sql.exec('CREATE TABLE t.shape (id text PRIMARY KEY)');
    await sql.query('INSERT INTO t.shape (id) VALUES ($1)', ['a']);
    const select = 'SELECT * FROM t.shape WHERE id = $1';
    // In parallel, so that every pooled connection prepares it.
    const all = () => Promise.all(Array.from({ length: 24 }, () => sql.query(select, ['a'])));
    expect(new Set((await all()).map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify([{ id: 'a' }])]));
    await sql.exec('ALTER TABLE t.shape ADD COLUMN extra int');
    expect(new Set((await all()).map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify([{ id: 'a', extra: null }])]));
  });

  test('inside a transaction, a statement whose plan a migration invalidated fails with its own error once, then runs', async () => {
    await sql.exec('CREATE TABLE t.shape2 (id text PRIMARY KEY)');
    await sql.query('INSERT INTO t.shape2 (id) VALUES ($1)', ['a']);
    const select = 'SELECT * FROM t.shape2 WHERE id = $1';
    await Promise.all(Array.from({ length: 24 }, () => sql.query(select, ['a'])));
    await sql.exec('ALTER TABLE t.shape2 ADD COLUMN extra int');
    // The first try may hit a connection that prepared the old plan: the transaction is aborted,
    // and the error is PostgreSQL's (not "current transaction is aborted" from a retry in it).
    const first = await sql
      .tx((q) => q.query(select, ['a']))
      .then(
        (rows) => ({ rows }),
        (err: { code?: string }) => ({ code: err.code }),
      );
    if ('code' in first) expect(first.code).toBe('0A000');
    else expect(first.rows).toEqual([{ id: 'a', extra: null }]);
    expect(await sql.tx((q) => q.query(select, ['a']))).toEqual([{ id: 'a', extra: null }]);
  });

  test('outbox: committed events are published once, rolled-back ones never; consumers run once per event', async () => {
    const bus = createMemoryBus(randomName('ns'));
    const got: EventEnvelope[] = [];
    await bus.subscribe('t.item.>', async (e) => void got.push(e), { durable: 'test' });
    const relay = startOutboxRelay({ sql, schema: 't', bus, log, intervalMs: 50 });
    const committed = await sql.tx((q) => enqueueEvent(q, 't', { subject: 't.item.created', accountId: 'acct_x', data: { n: 1 } }));
    await sql
      .tx(async (q) => {
        await enqueueEvent(q, 't', { subject: 't.item.created', accountId: 'acct_x', data: { n: 2 } });
        throw new Error('rolled back');
      })
      .catch(() => {});
    relay.kick();
    await until(() => got.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    await relay.stop();
    expect(got.map((e) => e.id)).toEqual([committed.id]);
    expect(got[0]).toMatchObject({ type: 't.item.created', accountId: 'acct_x', data: { n: 1 } });
    expect(got[0]!.occurredAt).toMatch(/Z$/);
    const pending = await sql.query('SELECT id FROM t.outbox WHERE published_at IS NULL');
    expect(pending).toEqual([]);

    let effects = 0;
    const effect = async () => void effects++;
    expect(await handleOnce(sql, 't', 'c1', got[0]!, effect)).toBe(true);
    expect(await handleOnce(sql, 't', 'c1', got[0]!, effect)).toBe(false);
    expect(await handleOnce(sql, 't', 'c2', got[0]!, effect)).toBe(true);
    expect(effects).toBe(2);
  });

  test('outbox: a backlog of several passes (1,200 events in one commit) is published whole, in id order, each once', async () => {
    const bus = createMemoryBus(randomName('ns'));
    const got: string[] = [];
    await bus.subscribe('t.backlog.>', async (e) => void got.push(e.id), { durable: 'backlog' });
    const rows = eventRows(Array.from({ length: 1200 }, (_, n) => ({ subject: 't.backlog.added', accountId: 'acct_b', data: { n } })));
    await sql.tx((q) =>
      q.query('INSERT INTO t.outbox (id, subject, payload, headers) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::jsonb[])', [
        rows.ids,
        rows.subjects,
        rows.payloads,
        rows.headers,
      ]),
    );
    // No poll within the test (it would publish whatever a pass left): the relay's start and the
    // kick must carry the whole backlog, pass after pass (2 passes would leave 200 or 1,000).
    const relay = startOutboxRelay({ sql, schema: 't', bus, log, intervalMs: 600_000 });
    try {
      relay.kick();
      await until(() => got.length >= 1200, 30_000);
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await relay.stop();
    }
    const inOrder = (await sql.query<{ id: string }>("SELECT id FROM t.outbox WHERE subject = 't.backlog.added' ORDER BY id")).map((r) => r.id);
    expect(got).toEqual(inOrder);
    expect(new Set(got).size).toBe(1200);
    expect(await sql.query("SELECT id FROM t.outbox WHERE published_at IS NULL AND subject = 't.backlog.added'")).toEqual([]);
  });

  test("outbox: while the relay publishes, the database serves other statements (the embedded one's single connection is not held)", async () => {
    // A bus whose publish waits until it is let go: a NATS round trip that takes its time.
    const inner = createMemoryBus(randomName('ns'));
    let publishing = false;
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    const bus: Bus = Object.assign(Object.create(inner) as Bus, {
      publish: async (...args: Parameters<Bus['publish']>) => {
        publishing = true;
        await gate;
        return inner.publish(...args);
      },
    });
    const relay = startOutboxRelay({ sql, schema: 't', bus, log, intervalMs: 50 });
    try {
      const event = await sql.tx((q) => enqueueEvent(q, 't', { subject: 't.item.created', accountId: 'acct_z', data: { n: 4 } }));
      relay.kick();
      await until(() => publishing);
      // Another tenant's statement, and a transaction, answer while the publish is in flight.
      const answered = await Promise.race([
        (async () => {
          await sql.query('SELECT 1');
          await sql.tx((q) => q.query('SELECT 1'));
          return 'answered';
        })(),
        new Promise((r) => setTimeout(() => r('waited for the publish'), 2000)),
      ]);
      expect(answered).toBe('answered');
      letGo();
      expect(await markedSoon(sql, event.id)).toBe(true);
    } finally {
      letGo();
      await relay.stop();
      await inner.close();
    }
  });

  test('outbox: an event no kick announced (another replica committed it, or a process gone after its commit) is published by the poll', async () => {
    const bus = createMemoryBus(randomName('ns'));
    const got: EventEnvelope[] = [];
    await bus.subscribe('t.item.>', async (e) => void got.push(e), { durable: 'test-poll' });
    const relay = startOutboxRelay({ sql, schema: 't', bus, log, intervalMs: 50 });
    try {
      // Another writer's transaction (no relay.kick()).
      const late = await sql.tx((q) => enqueueEvent(q, 't', { subject: 't.item.created', accountId: 'acct_y', data: { n: 3 } }));
      await until(() => got.some((e) => e.id === late.id));
      // The relay marks a row after the bus took it, so a subscriber can see the event first.
      expect(await markedSoon(sql, late.id)).toBe(true);
    } finally {
      await relay.stop();
      await bus.close();
    }
  });
});

test('the embedded database begins a transaction with its first statement, not when tx() is called', async () => {
  // BEGIN rides with the first statement (one round trip to the database's thread fewer), so the
  // transaction starts when that statement runs: a tx that waits before its first statement has no
  // transaction open meanwhile. (PostgreSQL's client sends BEGIN when tx() starts.)
  const sql = await createPgliteSql(tempDir());
  try {
    const [row] = await sql.tx(async (q) => {
      await new Promise((r) => setTimeout(r, 300));
      return q.query<{ ms: number }>('SELECT extract(epoch FROM statement_timestamp() - transaction_timestamp()) * 1000 AS ms');
    });
    expect(Number(row!.ms)).toBeLessThan(250);
    // The contract above holds: statements after the first are in the same transaction.
    const [a, b] = await sql.tx(async (q) => {
      const first = await q.query<{ t: string }>('SELECT transaction_timestamp()::text AS t');
      await new Promise((r) => setTimeout(r, 20));
      return [first[0]!.t, (await q.query<{ t: string }>('SELECT transaction_timestamp()::text AS t'))[0]!.t];
    });
    expect(b).toBe(a);
  } finally {
    await sql.close();
  }
});

const buses: Maker<Bus>[] = [
  [
    'in-process',
    async () => {
      const it = createMemoryBus(randomName('ns'));
      return { it, close: () => it.close() };
    },
  ],
];
if (REAL.nats) {
  buses.push([
    'nats-jetstream',
    async () => {
      const ns = randomName('ns');
      const it = await createNatsBus(REAL.nats!, ns);
      return {
        it,
        close: async () => {
          await it.close();
          await dropNatsNamespace(ns);
        },
      };
    },
  ]);
}

describe.each(buses)('Bus on %s', (_name, make) => {
  let bus: Bus;
  let close: () => Promise<void>;
  beforeAll(async () => ({ it: bus, close } = await make()));
  afterAll(() => close());

  const event = (data: unknown): EventEnvelope => ({
    id: newId('evt'),
    type: 'x.thing.done',
    occurredAt: new Date().toISOString(),
    accountId: 'acct_x',
    data,
  });

  test('a durable consumer gets each event once (duplicates by id are dropped); broadcasts reach every subscriber', async () => {
    const durable: unknown[] = [];
    const a: unknown[] = [];
    const b: unknown[] = [];
    await bus.subscribe('x.thing.*', async (e) => void durable.push(e.data), { durable: 'worker' });
    await bus.subscribe('x.thing.*', async (e) => void durable.push(e.data), { durable: 'worker' });
    await bus.subscribe('x.>', async (e) => void a.push(e.data));
    await bus.subscribe('x.thing.done', async (e) => void b.push(e.data));
    const e1 = event(1);
    await bus.publish('x.thing.done', e1);
    await bus.publish('x.thing.done', e1);
    await bus.publish('x.thing.done', event(2));
    await bus.publish('y.other.done', event(3));
    await until(() => durable.length >= 2 && a.length >= 2 && b.length >= 2);
    await new Promise((r) => setTimeout(r, 150));
    expect(durable.sort()).toEqual([1, 2]);
    expect(a.sort()).toEqual(a.length === 2 ? [1, 2] : [1, 1, 2]); // core subscribers may see a duplicate publish
    expect(b).toContain(2);
  });

  test('a failing durable handler gets the event again', async () => {
    let calls = 0;
    await bus.subscribe(
      'x.retry.once',
      async () => {
        calls++;
        if (calls === 1) throw new Error('first time fails');
      },
      { durable: 'retrier' },
    );
    await bus.publish('x.retry.once', event('r'));
    await until(() => calls >= 2, 5000);
    expect(calls).toBe(2);
  });
});

const caches: Maker<Cache>[] = [
  [
    'memory',
    async () => {
      const it = createMemoryCache();
      return { it, close: () => it.close() };
    },
  ],
];
if (REAL.redis) {
  caches.push([
    'redis',
    async () => {
      const it = createRedisCache(REAL.redis!, randomName('ns'));
      return { it, close: () => it.close() };
    },
  ]);
}

describe.each(caches)('Cache on %s', (_name, make) => {
  let cache: Cache;
  let close: () => Promise<void>;
  beforeAll(async () => ({ it: cache, close } = await make()));
  afterAll(() => close());

  test('values expire', async () => {
    await cache.set('a', '1', 80);
    expect(await cache.get('a')).toBe('1');
    await new Promise((r) => setTimeout(r, 150));
    expect(await cache.get('a')).toBeNull();
    await cache.set('b', '2', 10_000);
    await cache.del('b');
    expect(await cache.get('b')).toBeNull();
  });

  test('counters add up and drain atomically; hmax keeps the largest', async () => {
    expect(await cache.hincrby('h', 'k1', 2)).toBe(2);
    expect(await cache.hincrby('h', 'k1', 3)).toBe(5);
    await cache.hincrby('h', 'k2', 1);
    expect(await cache.hdrain('h')).toEqual({ k1: '5', k2: '1' });
    expect(await cache.hdrain('h')).toEqual({});
    await cache.hmax('m', { k: 10 });
    await cache.hmax('m', { k: 5 });
    await cache.hmax('m', { k: 12 });
    expect(await cache.hdrain('m')).toEqual({ k: '12' });
  });

  test('hit counts within a window', async () => {
    expect(await cache.hit('w', 100)).toBe(1);
    expect(await cache.hit('w', 100)).toBe(2);
    await new Promise((r) => setTimeout(r, 150));
    expect(await cache.hit('w', 100)).toBe(1);
  });
});

const blobStores: Maker<Blobs>[] = [
  ['filesystem', async () => ({ it: createFsBlobs(tempDir()), close: async () => {} })],
  [
    's3 (s3rver)',
    async () => {
      const s3 = await startS3();
      const it = await createS3Blobs({ ...s3, bucket: randomName('b'), region: 'us-east-1' });
      return { it, close: () => s3.stop() };
    },
  ],
];

describe.each(blobStores)('Blobs on %s', (_name, make) => {
  let blobs: Blobs;
  let close: () => Promise<void>;
  beforeAll(async () => ({ it: blobs, close } = await make()));
  afterAll(() => close());

  const read = async (r: Readable) => {
    const chunks: Buffer[] = [];
    for await (const c of r) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString();
  };

  test('put, stat, get, ranged get, remove', async () => {
    expect(await blobs.put('sha256/ab/cd', Buffer.from('hello world'))).toEqual({ size: 11 });
    expect(await blobs.put('stream', Readable.from([Buffer.from('abc'), Buffer.from('def')]), 6)).toEqual({ size: 6 });
    expect(await blobs.stat('sha256/ab/cd')).toEqual({ size: 11 });
    expect(await read(await blobs.get('sha256/ab/cd'))).toBe('hello world');
    expect(await read(await blobs.get('sha256/ab/cd', { start: 6, end: 10 }))).toBe('world');
    expect(await read(await blobs.get('stream'))).toBe('abcdef');
    await blobs.remove('stream');
    expect(await blobs.stat('stream')).toBeNull();
    expect(await blobs.stat('never')).toBeNull();
  });

  // A reader that keeps each chunk for as long as the option promises (until it takes the third
  // chunk after it) and checks it then: the bytes a chunk held when it was taken are still there.
  test('a read into buffers used again gives the same bytes, whole and in ranges, each chunk valid until the third after it is taken', async () => {
    const whole = randomBytes(5 * 1024 * 1024 + 777);
    await blobs.put('reused', whole, whole.length);
    const readKeeping = async (range?: { start: number; end: number }) => {
      const kept: Array<{ chunk: Buffer; copy: Buffer }> = [];
      const out: Buffer[] = [];
      for await (const c of await blobs.get('reused', range, { reuseBuffers: true })) {
        const chunk = c as Buffer;
        kept.push({ chunk, copy: Buffer.from(chunk) });
        // The chunk taken two before this one is still intact now, and dropped.
        if (kept.length > 2) {
          const old = kept.shift()!;
          expect(old.chunk.equals(old.copy)).toBe(true);
          out.push(old.copy);
        }
      }
      return Buffer.concat([...out, ...kept.map((k) => k.copy)]);
    };
    expect((await readKeeping()).equals(whole)).toBe(true);
    expect((await readKeeping({ start: 1000, end: 3 * 1024 * 1024 })).equals(whole.subarray(1000, 3 * 1024 * 1024 + 1))).toBe(true);
    expect((await readKeeping({ start: 10, end: 20 })).equals(whole.subarray(10, 21))).toBe(true);
    await blobs.put('reused-small', Buffer.from('small'));
    expect(await read(await blobs.get('reused-small', undefined, { reuseBuffers: true }))).toBe('small');
    await blobs.put('reused-empty', Buffer.alloc(0));
    expect(await read(await blobs.get('reused-empty', undefined, { reuseBuffers: true }))).toBe('');
    // Stopping early ends the stream (on the filesystem: its file is closed).
    const early = await blobs.get('reused', undefined, { reuseBuffers: true });
    for await (const _ of early) break;
    if (blobs.kind === 'fs') expect(early.destroyed).toBe(true);
  });

  test('a put whose stream fails leaves no object', async () => {
    let chunks = 0;
    const failing = new Readable({
      read() {
        if (chunks++ < 3) this.push(Buffer.alloc(64 * 1024, 1));
        else this.destroy(new Error('client went away'));
      },
    });
    await expect(blobs.put('partial', failing, 10 * 1024 * 1024)).rejects.toThrow();
    expect(await blobs.stat('partial')).toBeNull();
  });

  // Over one S3 part (16 MiB): sent as a multipart upload (the plain API, no listing of unfinished
  // uploads, which s3rver does not implement); on the filesystem the same stream.
  test('a stream larger than one part is stored whole, and a source that fails after a part leaves no object', async () => {
    const part = (n: number, fill: number) => Buffer.alloc(n, fill);
    const chunks = [part(9 << 20, 1), part(9 << 20, 2), part(9 << 20, 3), part(7 << 20, 4), part(12345, 5)];
    const whole = Buffer.concat(chunks);
    expect(await blobs.put('multi', Readable.from(chunks), whole.length)).toEqual({ size: whole.length });
    const back: Buffer[] = [];
    for await (const c of await blobs.get('multi')) back.push(c as Buffer);
    expect(createHash('sha256').update(Buffer.concat(back)).digest('hex')).toBe(createHash('sha256').update(whole).digest('hex'));

    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent < 20 << 20) {
          sent += 1 << 20;
          this.push(Buffer.alloc(1 << 20, 6));
        } else this.destroy(new Error('client went away after a part'));
      },
    });
    await expect(blobs.put('multi-partial', failing, 40 << 20)).rejects.toThrow(/client went away/);
    expect(await blobs.stat('multi-partial')).toBeNull();
  }, 60_000);

  test('keys that could escape the store are refused', async () => {
    await expect(blobs.put('../etc/passwd', Buffer.from('x'))).rejects.toThrow(/bad blob key/);
  });
});

// PostgreSQL only: the embedded database has one connection, and its ping reports one held too long
// (sql-guard.test.ts).
(REAL.pg ? test : test.skip)('PostgreSQL: a ping while every connection of the pool is busy answers from the statements just answered', async () => {
  const db = await createDatabase(REAL.pg!);
  const sql = createPgSql(db.url, { max: 1 });
  let release!: () => void;
  try {
    await sql.query('SELECT 1');
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const held = sql.tx(async (q) => {
      await q.query('SELECT 1');
      opened();
      await new Promise<void>((r) => (release = r));
    });
    await open;
    // A statement now waits for the one connection; the health check's ping must not.
    const waiting = sql.query('SELECT 2 AS n');
    const ping = await Promise.race([sql.ping().then(() => 'answered'), new Promise((r) => setTimeout(() => r('waited'), 1000))]);
    expect(ping).toBe('answered');
    release();
    await held;
    expect(await waiting).toEqual([{ n: 2 }]);
  } finally {
    release?.();
    await sql.close();
    await db.drop();
  }
});
