import type pg from 'pg';

import { databaseUnavailable } from '../errors.js';
import { observePool } from '../tracing/metrics.js';
import { createTxGuard, type GuardMode, guardMode, type TxState } from './sql-guard.js';
import { statementNames } from './statement-names.js';
import { utcTimestamp } from './timestamps.js';

/** The type oid of timestamptz, and whether pg reads it with utcTimestamp yet. */
const TIMESTAMPTZ = 1184;
let timestampsRead = false;

export interface Queryable {
  /** One statement with $1-style parameters. */
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  /** Several statements, no parameters (migrations). */
  exec(text: string): Promise<void>;
}

export interface TxOptions {
  /** The embedded database's bound on this transaction (its default is SVC_SQL_TX_TIMEOUT_MS); migrations take longer. */
  timeoutMs?: number;
}

/**
 * A database. While a transaction runs, every statement of its work goes through the transaction's
 * Queryable `q`: one sent through the Sql itself from inside it (a store method that took no `q`)
 * is refused by the transaction guard (sql-guard.ts), with an error naming the statement.
 */
export interface Sql extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>, options?: TxOptions): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface PgSqlOptions {
  max?: number;
  applicationName?: string;
  /** What the transaction guard does with an escaping statement: refuse it, warn once per statement, or nothing (default: guardMode(), SVC_SQL_GUARD). */
  guard?: GuardMode;
  /** Where a warning of the guard goes (default: process.emitWarning). */
  warn?: (message: string, statement: string) => void;
  /**
   * Server settings for this pool's sessions (`-c name=value` at connect), for what one service's
   * statements need: the trading service keeps one generic plan per prepared statement.
   */
  settings?: Record<string, string>;
}

/**
 * The startup `options` of `settings` (names and values of plain characters only: they are our own
 * constants), after the operator's own PGOPTIONS, which the client would otherwise read alone.
 */
export function sessionOptions(settings: Record<string, string> = {}, env = process.env.PGOPTIONS): string | undefined {
  const parts = Object.entries(settings).map(([name, value]) => {
    if (!/^[a-z_][a-z0-9_.]*$/.test(name) || !/^[A-Za-z0-9_.-]+$/.test(value)) throw new Error(`invalid database setting ${name}=${value}`);
    return `-c ${name}=${value}`;
  });
  if (!parts.length) return undefined;
  return [env?.trim(), ...parts].filter(Boolean).join(' ');
}

/** How recent an answered statement must be for ping() to take it as the database's answer. */
const PING_FRESH_MS = 5000;

export function createPgSql(url: string, options: PgSqlOptions = {}): Sql {
  // Loaded here, not at the top: the embedded stack (PGlite) never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Pool, types } = require('pg') as typeof pg;
  // int8 and numeric as JS numbers: counters here stay far below 2^53.
  types.setTypeParser(20, (v) => Number(v));
  // timestamptz: its usual form read directly, any other by pg's own parser (timestamps.ts); once
  // for the process, as pg's parsers are.
  if (!timestampsRead) {
    const general = types.getTypeParser(TIMESTAMPTZ);
    types.setTypeParser(TIMESTAMPTZ, (v: string) => utcTimestamp(v) ?? general(v));
    timestampsRead = true;
  }
  const pool = new Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'svc',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    options: sessionOptions(options.settings),
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  observePool(pool, options.applicationName ?? 'svc');
  const named = statementNames();
  // When the server last answered a statement (ms since the epoch): what ping() trusts first.
  let answered = 0;
  /** A statement's rows, noting that the server answered. */
  const answer = <R>(result: pg.QueryResult): R[] => {
    answered = Date.now();
    return result.rows as R[];
  };
  const wrap = (c: pg.Pool | pg.PoolClient, inTransaction: boolean): Queryable => ({
    async query<R>(text: string, params?: unknown[]) {
      const name = params ? named(text) : undefined;
      if (!name) return answer<R>(await c.query(text, params as unknown[]));
      try {
        return answer<R>(await c.query({ name, text, values: params }));
      } catch (err) {
        // A migration changed a table under a statement a connection prepared ("cached plan must
        // not change result type"): run it unprepared, from now on. Inside a transaction the
        // failure has aborted it, so the error stands (a retry of the transaction runs unprepared).
        if ((err as { code?: string }).code !== '0A000') throw err;
        named.disable(text);
        if (inTransaction) throw err;
        return answer<R>(await c.query(text, params as unknown[]));
      }
    },
    async exec(text: string) {
      await c.query(text);
    },
  });
  const base = wrap(pool, false);
  // Here an escaping statement works (a second connection of the pool), but outside the
  // transaction; on the embedded database the same code waits forever. Refused in development
  // and tests, so that it is found before it ships; a warning in production.
  const guard = createTxGuard(options.guard ?? guardMode(), options.warn);
  // A database that cannot be reached is an outage (503 with Retry-After), not an internal error:
  // mapped here, once, for every service's statements and transactions.
  const outage = (err: unknown) => databaseUnavailable(err) ?? err;
  return {
    kind: 'pg',
    async query<R>(text: string, params?: unknown[]) {
      guard.check(text);
      try {
        return await base.query<R>(text, params);
      } catch (err) {
        throw outage(err);
      }
    },
    async exec(text: string) {
      guard.check(text);
      try {
        await base.exec(text);
      } catch (err) {
        throw outage(err);
      }
    },
    async tx(fn) {
      guard.check('BEGIN (a transaction started inside an open transaction of the same Sql)');
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
      const state: TxState = { open: true };
      try {
        await client.query('BEGIN');
        const out = await guard.run(state, () => fn(wrap(client, true)));
        state.open = false;
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        if (databaseUnavailable(err)) broken = err;
        throw outage(err);
      } finally {
        state.open = false;
        // A connection that failed is not given back for reuse.
        client.removeListener('error', lost);
        client.release(broken ? (broken as Error) : undefined);
      }
    },
    /**
     * A statement answered within PING_FRESH_MS proves the database reachable. Under a tenant's
     * heavy load every connection of the pool is busy and a `SELECT 1` would wait its turn behind
     * them: the health check (every 5 s, service.ts) would then fail, and a busy but healthy
     * replica be taken out of its Service. Only a pool that has answered nothing lately is asked.
     */
    async ping() {
      if (Date.now() - answered < PING_FRESH_MS) return;
      try {
        await pool.query('SELECT 1');
        answered = Date.now();
      } catch (err) {
        throw outage(err);
      }
    },
    async close() {
      await pool.end();
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
  return sql.tx(
    async (q) => {
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
    },
    // A first start applies every migration in one transaction: longer than a request's bound.
    { timeoutMs: MIGRATION_TX_TIMEOUT_MS },
  );
}

const MIGRATION_TX_TIMEOUT_MS = 10 * 60_000;

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
