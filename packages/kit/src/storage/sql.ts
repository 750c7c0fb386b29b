import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';

import { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';

import { databaseUnavailable } from '../errors.js';
import { observePool } from '../tracing/metrics.js';
import { withSqlSpan } from '../tracing/sql-spans.js';

export interface Queryable {
  /** One statement with $1-style parameters. */
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  /** Several statements, no parameters (migrations). */
  exec(text: string): Promise<void>;
}

export interface Sql extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Names for prepared statements: a query with parameters is prepared once per connection and
 * then only bound and executed (PostgreSQL skips parsing and planning it; the client sends less).
 * Bounded: the first MAX_PREPARED distinct texts get names, later ones run unprepared, so SQL
 * built at run time cannot grow every connection's statement cache without end.
 */
const MAX_PREPARED = 500;
function statementNames(): { (text: string): string | undefined; disable(text: string): void } {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED) names.set(text, (name = `svc_${names.size}`));
    return name || undefined;
  };
  return Object.assign(nameOf, { disable: (text: string) => void names.set(text, '') });
}

export function createPgSql(url: string, options: { max?: number; applicationName?: string } = {}): Sql {
  // Loaded here, not at the top: the embedded stack (PGlite) never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Pool, types } = require('pg') as typeof pg;
  // int8 and numeric as JS numbers: counters here stay far below 2^53.
  types.setTypeParser(20, (v) => Number(v));
  const pool = new Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'svc',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  observePool(pool, options.applicationName ?? 'svc');
  const named = statementNames();
  const wrap = (c: pg.Pool | pg.PoolClient, inTransaction: boolean): Queryable => ({
    async query<R>(text: string, params?: unknown[]) {
      const name = params ? named(text) : undefined;
      if (!name) return (await c.query(text, params as unknown[])).rows as R[];
      try {
        return (await c.query({ name, text, values: params })).rows as R[];
      } catch (err) {
        // A migration changed a table under a statement a connection prepared ("cached plan must
        // not change result type"): run it unprepared, from now on. Inside a transaction the
        // failure has aborted it, so the error stands (a retry of the transaction runs unprepared).
        if ((err as { code?: string }).code !== '0A000') throw err;
        named.disable(text);
        if (inTransaction) throw err;
        return (await c.query(text, params as unknown[])).rows as R[];
      }
    },
    async exec(text: string) {
      await c.query(text);
    },
  });
  const base = wrap(pool, false);
  // A database that cannot be reached is an outage (503 with Retry-After), not an internal error:
  // mapped here, once, for every service's statements and transactions.
  const outage = (err: unknown) => databaseUnavailable(err) ?? err;
  return {
    kind: 'pg',
    async query<R>(text: string, params?: unknown[]) {
      try {
        return await base.query<R>(text, params);
      } catch (err) {
        throw outage(err);
      }
    },
    async exec(text: string) {
      try {
        await base.exec(text);
      } catch (err) {
        throw outage(err);
      }
    },
    async tx(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw outage(err);
      }
      let broken: unknown;
      // A checked-out connection that is lost between statements emits 'error' with no one
      // listening (the pool listens to idle ones only), which would end the process: it is noted,
      // and the next statement fails as an outage.
      const lost = (err: Error) => void (broken ??= err);
      client.on('error', lost);
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client, true));
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        if (databaseUnavailable(err)) broken = err;
        throw outage(err);
      } finally {
        // A connection that failed is not given back for reuse.
        client.removeListener('error', lost);
        client.release(broken ? (broken as Error) : undefined);
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * Settings of the embedded PostgreSQL beyond PGlite's own: its defaults are a server's (128 MB of
 * shared buffers, 100 connections), and PostgreSQL zeroes that shared memory at every start, which
 * was a third of a restart's time and ~120 MB of resident memory. One process, one session, and an
 * all-in-one data set that fits: 32 MB of buffers (the operating system caches the files behind
 * them) and a few connection slots.
 */
export const PGLITE_SETTINGS = ['shared_buffers=32MB', 'max_connections=8'];

/**
 * How much a WebAssembly function runs before V8 compiles it again with its optimizing compiler
 * (V8's default is 1,800,000). PostgreSQL's start runs enough of its code to send hundreds of
 * functions to the optimizing compiler at once; on a small machine those compile threads take the
 * cores from the start itself (a restart took 3.2 s instead of 2.3 s on 2 cores). A higher budget
 * leaves the optimizing to the functions that stay hot: queries settle at the same speed once the
 * first few thousand have run.
 */
const PGLITE_TIERING_BUDGET = 10_000_000;

/** Embedded PostgreSQL (WebAssembly) with its data in a folder; one instance per process. */
export async function createPgliteSql(dataDir: string): Promise<Sql> {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  // Read when the module is instantiated: set before PGlite compiles it (a process-wide V8 flag,
  // which only WebAssembly uses; PGlite is the process's only module of size).
  v8.setFlagsFromString(`--wasm-tiering-budget=${PGLITE_TIERING_BUDGET}`);
  const db = await PGlite.create(dataDir, { startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS.flatMap((s) => ['-c', s])] });
  const wrap = (c: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<R>(text: string, params?: unknown[]) {
      return withSqlSpan(text, async () => (await c.query<R>(text, params)).rows);
    },
    async exec(text: string) {
      await withSqlSpan(text, () => c.exec(text));
    },
  });
  return {
    kind: 'pglite',
    ...wrap(db),
    tx: (fn) => db.transaction((t) => fn(wrap(t))),
    async ping() {
      await db.query('SELECT 1');
    },
    async close() {
      await db.close();
    },
  };
}

export interface Migration {
  id: string;
  sql: string;
}

/**
 * Applies forward-only migrations to one service's schema, each once, in order. An advisory
 * lock makes replicas that start together (or a migration Job) take turns.
 */
export async function migrate(sql: Sql, schema: string, migrations: Migration[]): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
  return sql.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc.migrate.${schema}`]);
    await q.exec(
      `CREATE SCHEMA IF NOT EXISTS ${schema};
       CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());`,
    );
    const done = new Set((await q.query<{ id: string }>(`SELECT id FROM ${schema}.schema_migrations`)).map((r) => r.id));
    const applied: string[] = [];
    for (const m of [...KIT_MIGRATIONS(schema), ...migrations]) {
      if (done.has(m.id)) continue;
      await q.exec(m.sql);
      await q.query(`INSERT INTO ${schema}.schema_migrations (id) VALUES ($1)`, [m.id]);
      applied.push(m.id);
    }
    return applied;
  });
}

/** Tables every service schema gets: the transactional outbox and the consumer inbox. */
function KIT_MIGRATIONS(schema: string): Migration[] {
  return [
    {
      id: 'kit_0001_outbox_inbox',
      sql: `
        CREATE TABLE ${schema}.outbox (
          id text PRIMARY KEY,
          subject text NOT NULL,
          payload jsonb NOT NULL,
          headers jsonb NOT NULL DEFAULT '{}'::jsonb,
          created_at timestamptz NOT NULL DEFAULT now(),
          published_at timestamptz
        );
        CREATE INDEX outbox_unpublished ON ${schema}.outbox (id) WHERE published_at IS NULL;
        CREATE TABLE ${schema}.inbox (
          consumer text NOT NULL,
          event_id text NOT NULL,
          processed_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (consumer, event_id)
        );`,
    },
  ];
}

/**
 * A caller's text as the right side of PostgreSQL's `~*` (case-insensitive regular expression),
 * matching wherever the text occurs: `column ~* $1` with `containsText(q)`. The `***=` director
 * makes the rest a literal (no character is special). PostgreSQL's regex engine runs it as a DFA,
 * in time linear in the column's text; `ILIKE '%…%'` backtracks over every `a` before a mismatch
 * (200 characters against 10 MB: 8.8 s in PGlite, on the event loop of `npm start`; 0.4 s so).
 */
export const containsText = (text: string): string => `***=${text}`;
