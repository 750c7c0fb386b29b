import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createPgliteSql, type Sql } from '@svc/kit';

import { seedEmbeddedDatabase } from '../support/pglite-template';

/**
 * The embedded database prepares each statement once (kit's storage/pglite-prepared.ts), as the
 * PostgreSQL client does on a server: what a statement answers must not change with it. Typed
 * values both ways, errors that keep their codes and leave the connection usable, a statement a
 * migration made stale, a text that does not parse, and more texts than are prepared.
 */

let dir: string;
let sql: Sql;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pglite-prepared-'));
  await seedEmbeddedDatabase(path.join(dir, 'pg'));
  sql = await createPgliteSql(path.join(dir, 'pg'));
  await sql.exec(`CREATE TABLE t (id text PRIMARY KEY, n bigint, price numeric, at timestamptz, tags text[], doc jsonb, ok boolean)`);
}, 60_000);
afterAll(async () => {
  await sql?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const row = {
  id: 'a',
  n: 9007199254740993n,
  price: '12.50',
  at: new Date('2026-11-29T10:00:00.123Z'),
  tags: ['x', 'y,z', 'a"b'],
  doc: { k: [1, { v: null }] },
  ok: true,
};

test('typed values go in and come back as the unprepared query gave them, run after run', async () => {
  const insert = 'INSERT INTO t (id, n, price, at, tags, doc, ok) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *';
  const first = await sql.query(insert, [row.id, row.n.toString(), row.price, row.at, row.tags, JSON.stringify(row.doc), row.ok]);
  const expected = { id: 'a', n: 9007199254740993n, price: '12.50', at: row.at, tags: row.tags, doc: row.doc, ok: true };
  expect(first).toEqual([expected]);
  // The same text again, many times (a prepared statement's plan may turn generic after five runs).
  for (let i = 0; i < 8; i++) {
    expect(await sql.query('SELECT * FROM t WHERE id = $1', ['a'])).toEqual([expected]);
    expect(await sql.query('SELECT * FROM t WHERE id = $1', ['none'])).toEqual([]);
  }
  // Nulls, and a statement that answers no rows.
  await sql.query('INSERT INTO t (id, n, price, at, tags, doc, ok) VALUES ($1, $2, $3, $4, $5, $6, $7)', ['b', null, null, null, null, null, null]);
  expect(await sql.query('SELECT n, price, at, tags, doc, ok FROM t WHERE id = $1', ['b'])).toEqual([
    { n: null, price: null, at: null, tags: null, doc: null, ok: null },
  ]);
  expect(await sql.query('UPDATE t SET ok = $2 WHERE id = $1', ['b', false])).toEqual([]);
  expect(await sql.query('SELECT ok FROM t WHERE id = ANY($1::text[]) ORDER BY id', [['a', 'b']])).toEqual([{ ok: true }, { ok: false }]);
});

test('an error keeps its code and fields, and the next statement runs', async () => {
  const insert = 'INSERT INTO t (id) VALUES ($1)';
  await sql.query(insert, ['dup']);
  for (let i = 0; i < 2; i++) {
    await expect(sql.query(insert, ['dup'])).rejects.toMatchObject({ code: '23505', constraint: 't_pkey' });
  }
  await expect(sql.query('SELECT $1::int AS v', ['not a number'])).rejects.toMatchObject({ code: '22P02' });
  expect(await sql.query('SELECT $1::int AS v', ['7'])).toEqual([{ v: 7 }]);
  // In a transaction the failed statement aborts it; the transaction is rolled back, nothing kept.
  await expect(
    sql.tx(async (q) => {
      await q.query(insert, ['in-tx']);
      await q.query(insert, ['dup']);
    }),
  ).rejects.toMatchObject({ code: '23505' });
  expect(await sql.query('SELECT id FROM t WHERE id = $1', ['in-tx'])).toEqual([]);
});

test('a text that does not parse fails each time with its syntax error; the next statement runs', async () => {
  for (let i = 0; i < 2; i++) await expect(sql.query('SELEC id FROM t WHERE id = $1', ['a'])).rejects.toMatchObject({ code: '42601' });
  expect(await sql.query('SELECT id FROM t WHERE id = $1', ['a'])).toEqual([{ id: 'a' }]);
});

test('a statement a migration made stale answers with the new shape outside a transaction; inside one the error stands once', async () => {
  await sql.exec('CREATE TABLE s (id text PRIMARY KEY, v integer)');
  await sql.query('INSERT INTO s (id, v) VALUES ($1, $2)', ['x', 1]);
  const select = 'SELECT * FROM s WHERE id = $1';
  const inTx = 'SELECT * FROM s WHERE id = $1 AND true';
  expect(await sql.query(select, ['x'])).toEqual([{ id: 'x', v: 1 }]);
  expect(await sql.tx((q) => q.query(inTx, ['x']))).toEqual([{ id: 'x', v: 1 }]);
  await sql.exec("ALTER TABLE s ADD COLUMN w text NOT NULL DEFAULT 'new'");
  expect(await sql.query(select, ['x'])).toEqual([{ id: 'x', v: 1, w: 'new' }]);
  await expect(sql.tx((q) => q.query(inTx, ['x']))).rejects.toMatchObject({ code: '0A000' });
  expect(await sql.tx((q) => q.query(inTx, ['x']))).toEqual([{ id: 'x', v: 1, w: 'new' }]);
});

test('more distinct texts than are prepared still run', async () => {
  for (let i = 0; i < 520; i++) {
    expect(await sql.query(`SELECT $1::int + ${i} AS v`, [1])).toEqual([{ v: i + 1 }]);
  }
  expect(await sql.query('SELECT id FROM t WHERE id = $1', ['a'])).toEqual([{ id: 'a' }]);
}, 60_000);
