import fs from 'node:fs';
import path from 'node:path';

import { DATABASE_RETRY_AFTER_SECONDS, DomainError } from '../errors.js';
import { withSqlSpan } from '../tracing/sql-spans.js';
import { PgliteThread } from './pglite-thread.js';
import type { Queryable, Sql, TxOptions } from './sql.js';
import { createTxGuard, databaseBusy, type GuardMode, guardMode, statementHead, transactionTimeout, type TxState } from './sql-guard.js';

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

export interface PgliteBounds {
  /** A transaction open longer is rolled back and its caller gets 503 `transaction_timeout` (SVC_SQL_TX_TIMEOUT_MS). */
  txTimeoutMs?: number;
  /** A statement or transaction that waits longer for the one connection fails with 503 `database_busy` (SVC_SQL_BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number;
  /** How long close() waits for the connection and for PGlite to shut down before it returns anyway. */
  closeTimeoutMs?: number;
  /** The transaction guard's mode (default guardMode(): SVC_SQL_GUARD); any mode but `off` refuses here. */
  guard?: GuardMode;
}

export const PGLITE_DEFAULT_BOUNDS = { txTimeoutMs: 30_000, busyTimeoutMs: 8_000, closeTimeoutMs: 5_000 } as const;
/** How long a readiness ping waits for the connection (readiness checks give up after 2 s). */
const PING_WAIT_MS = 1_500;

interface Holder {
  kind: 'transaction' | 'statement' | 'health check' | 'close';
  /** The statement's head, for the busy error's cause (logged, not answered). */
  what: string;
  since: number;
  /** Rolls the holder's transaction back now (close()). */
  abort?: (err: Error) => void;
}

interface Waiter {
  holder: Holder;
  resolve(): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
}

/**
 * The embedded database's one connection, taken in turn: every statement and transaction of the
 * Sql waits here (first come, first served) with a bound, rather than in PGlite's own unbounded
 * queue. A transaction holds it from BEGIN to COMMIT.
 */
class Connection {
  holder: Holder | undefined;
  private readonly queue: Waiter[] = [];

  acquire(holder: Holder, waitMs: number): Promise<void> {
    if (!this.holder) {
      holder.since = Date.now();
      this.holder = holder;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { holder, resolve, reject };
      w.timer = setTimeout(() => {
        const i = this.queue.indexOf(w);
        if (i >= 0) this.queue.splice(i, 1);
        reject(this.busy(waitMs));
      }, waitMs);
      this.queue.push(w);
    });
  }

  release(): void {
    const next = this.queue.shift();
    if (!next) return void (this.holder = undefined);
    clearTimeout(next.timer);
    next.holder.since = Date.now();
    this.holder = next.holder;
    next.resolve();
  }

  /** Fails every waiter (close()). */
  failAll(err: Error): void {
    for (const w of this.queue.splice(0)) {
      clearTimeout(w.timer);
      w.reject(err);
    }
  }

  busy(waitedMs: number): DomainError {
    const h = this.holder;
    const heldMs = h ? Date.now() - h.since : 0;
    return databaseBusy(
      `waited ${waitedMs} ms for the embedded database's only connection, which a ${h?.kind ?? 'statement'} has held for ${heldMs} ms`,
      new Error(`the embedded database's connection is held by ${h?.what ?? 'nothing'} for ${heldMs} ms`),
    );
  }
}

const closing = () =>
  new DomainError('unavailable', 'database_unavailable', 'The database is unavailable; try again shortly.', {
    retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
  });

/** Resolves when p settles or after ms, whichever is first; true when p settled. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms)))),
  ]);
  clearTimeout(timer);
  return settled;
}

/**
 * Embedded PostgreSQL (WebAssembly) with its data in a folder; one instance per process, on a
 * thread of its own (pglite-thread.ts), so that statements never run on the event loop. It has
 * ONE connection: a statement sent through the Sql while a transaction is open waits for that
 * transaction, so one sent from inside the transaction's own work would wait forever. The
 * transaction guard refuses those (always, here), and bounds keep anything else from wedging it:
 * a transaction is rolled back past `txTimeoutMs`, a statement waiting for the connection fails
 * with `database_busy` past `busyTimeoutMs`, and close() returns within `closeTimeoutMs`.
 */
export async function createPgliteSql(dataDir: string, bounds: PgliteBounds = {}): Promise<Sql> {
  const { txTimeoutMs, busyTimeoutMs, closeTimeoutMs } = { ...PGLITE_DEFAULT_BOUNDS, ...bounds };
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  // The tiering budget is a process-wide V8 flag, which only WebAssembly uses; PGlite is the
  // process's only module of size. The thread sets it before PGlite compiles its module.
  const db = await PgliteThread.start({ dataDir, settings: PGLITE_SETTINGS, tieringBudget: PGLITE_TIERING_BUDGET });
  const conn = new Connection();
  // On PGlite an escape waits for the transaction that waits for it: refused whenever the guard is
  // on. Off (guardMode: a runtime whose async context is costly), it fails as database_busy after
  // busyTimeoutMs, and the transaction with it.
  const guard = createTxGuard((bounds.guard ?? guardMode()) === 'off' ? 'off' : 'throw');
  let closed: Promise<void> | undefined;

  const take = async (kind: Holder['kind'], what: string, waitMs = busyTimeoutMs): Promise<Holder> => {
    if (closed) throw closing();
    const holder: Holder = { kind, what, since: 0 };
    await conn.acquire(holder, waitMs);
    return holder;
  };
  const statement = async <T>(text: string, run: () => Promise<T>): Promise<T> => {
    guard.check(text);
    await take('statement', statementHead(text));
    try {
      return await withSqlSpan(text, run);
    } finally {
      conn.release();
    }
  };
  // A transaction's BEGIN goes with its first statement (one round trip to the thread fewer); one
  // that runs no statement sends neither BEGIN nor COMMIT.
  const inTx = (state: TxState & { begun: boolean }, holder: Holder): Queryable => {
    const live = (text: string) => {
      if (!state.open) throw new Error(`the transaction is over (ended, or rolled back past its bound); not run: "${statementHead(text)}"`);
      // Its latest statement, for the log of a statement that waited too long behind it.
      holder.what = `a transaction (at "${statementHead(text)}")`;
      const begin = !state.begun;
      state.begun = true;
      return begin;
    };
    return {
      async query<R>(text: string, params?: unknown[]) {
        const begin = live(text);
        return withSqlSpan(text, () => db.query<R>(text, params, begin));
      },
      async exec(text: string) {
        const begin = live(text);
        await withSqlSpan(text, () => db.exec(text, begin));
      },
    };
  };

  return {
    kind: 'pglite',
    query: <R>(text: string, params?: unknown[]) => statement(text, () => db.query<R>(text, params)),
    exec: (text: string) => statement(text, () => db.exec(text)),
    async tx<T>(fn: (q: Queryable) => Promise<T>, options: TxOptions = {}): Promise<T> {
      guard.check('BEGIN (a transaction started inside an open transaction of the same Sql)');
      const holder = await take('transaction', 'a transaction');
      const limitMs = options.timeoutMs ?? txTimeoutMs;
      const state = { open: true, begun: false };
      let timer: NodeJS.Timeout | undefined;
      // Settles only to end the transaction early: past its bound, or when the database closes.
      const cut = new Promise<never>((_, reject) => {
        holder.abort = (err) => {
          state.open = false;
          reject(err);
        };
        timer = setTimeout(() => holder.abort!(transactionTimeout(limitMs)), limitMs);
      });
      cut.catch(() => {});
      try {
        // A rejection of `cut` rolls the transaction back and is rethrown; fn's work, if it goes
        // on, finds the transaction over at its next statement.
        return await guard.run(state, async () => {
          try {
            const result = await Promise.race([fn(inTx(state, holder)), cut]);
            if (state.begun) await db.query('COMMIT');
            return result;
          } catch (err) {
            if (state.begun) await db.query('ROLLBACK').catch(() => {});
            throw err;
          }
        });
      } finally {
        state.open = false;
        holder.abort = undefined;
        clearTimeout(timer);
        conn.release();
      }
    },
    async ping() {
      await take('health check', 'SELECT 1', Math.min(PING_WAIT_MS, busyTimeoutMs));
      try {
        await db.query('SELECT 1');
      } finally {
        conn.release();
      }
    },
    close() {
      return (closed ??= (async () => {
        const err = closing();
        conn.failAll(err);
        // A transaction still open is rolled back now; then PGlite shuts down, within the bound.
        conn.holder?.abort?.(err);
        const deadline = Date.now() + closeTimeoutMs;
        const mine: Holder = { kind: 'close', what: 'close', since: 0 };
        // Bounded by its own timer; without the connection, or past the bound, the thread is ended
        // whatever it runs (PostgreSQL recovers from its log at the next start, as after a crash).
        const held = await conn.acquire(mine, closeTimeoutMs).then(
          () => true,
          () => false,
        );
        if (!held || !(await within(db.close(), deadline - Date.now()))) await db.terminate();
      })());
    },
  };
}
