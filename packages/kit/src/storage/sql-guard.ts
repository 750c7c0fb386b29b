import { AsyncLocalStorage } from 'node:async_hooks';

import { DATABASE_RETRY_AFTER_SECONDS, DomainError } from '../errors.js';

/**
 * Keeps statements inside their transaction. While `sql.tx(fn)` runs, a statement sent through
 * the same Sql's own `query`/`exec`/`tx` from fn's async context (instead of through the
 * transaction's Queryable `q`) escapes it: it runs on another connection, outside the
 * transaction's view and atomicity, and on the embedded database (one connection) it waits for
 * the transaction that waits for it, forever. The guard notices such a statement and refuses it.
 *
 * Each transaction has its own state, whose `open` flag is cleared when it ends: work started
 * inside a transaction that runs after it has ended (a timer, a background loop that inherited
 * the context) is not refused.
 */
export interface TxState {
  open: boolean;
}

/** A statement sent through the pool while its own transaction was open (a bug at the call site). */
export class TransactionEscapeError extends Error {
  override name = 'TransactionEscapeError';
  constructor(readonly statement: string) {
    super(
      `statement escapes its transaction: "${statement}" was sent through the Sql (the pool) while a transaction of that ` +
        `Sql is open in this call; pass the transaction's Queryable (the q of sql.tx(async (q) => ...)) to the store instead`,
    );
  }
}

/** The first ~80 characters of a statement, on one line: what an error or a warning names. */
export function statementHead(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
}

/**
 * What the guard does with an escaping statement: refuse it, warn once per statement text (it
 * runs), or nothing at all: 'off' never tracks transactions in async context, which on most
 * runtimes is the only way to have no per-promise cost (asyncContextIsCostly).
 */
export type GuardMode = 'throw' | 'warn' | 'off';

/**
 * Whether this runtime's AsyncLocalStorage rides on async_hooks (Node before 24, unless started
 * with --experimental-async-context-frame): once any store is run, a hook fires on every promise
 * the process makes. On Node 20 that took 13-20% off the throughput of a cached GET /me and of a
 * GET /api/api-keys (scripts/bench/auth.js, 2026-11-29). The async-context-frame implementation
 * has no such hook (nor its `_propagate`).
 */
export const asyncContextIsCostly = typeof (AsyncLocalStorage.prototype as { _propagate?: unknown })._propagate === 'function';

const GUARD_MODES: readonly GuardMode[] = ['throw', 'warn', 'off'];

/**
 * The guard's mode: SVC_SQL_GUARD when set; 'throw' under tests (NODE_ENV=test, as jest sets it);
 * else 'off' where async context is costly (the guard is a check for code that has a bug, the
 * tests run it), and where it is cheap 'throw' in development and 'warn' in production (on
 * PostgreSQL an escaping statement works; PGlite refuses it whenever the guard is on).
 */
export function guardMode(env: NodeJS.ProcessEnv = process.env, costly = asyncContextIsCostly): GuardMode {
  const set = env.SVC_SQL_GUARD;
  if (set !== undefined && set !== '') {
    if (!GUARD_MODES.includes(set as GuardMode)) throw new Error(`SVC_SQL_GUARD must be one of ${GUARD_MODES.join(', ')} (got "${set}")`);
    return set as GuardMode;
  }
  if (env.NODE_ENV === 'test') return 'throw';
  if (costly) return 'off';
  return env.NODE_ENV === 'production' ? 'warn' : 'throw';
}

export interface TxGuard {
  /** Runs fn as the body of a transaction whose state is `state`. */
  run<T>(state: TxState, fn: () => Promise<T>): Promise<T>;
  /** Throws (or, in 'warn' mode, warns once per statement text) when a transaction of this Sql is open here. */
  check(text: string): void;
}

/** The transactions whose work this async context is part of, innermost first (one Sql's inside another's is rare, but seen). */
interface Frame {
  guard: object;
  state: TxState;
  parent: Frame | undefined;
}
const frames = new AsyncLocalStorage<Frame>();

/**
 * Runs fn (and what it schedules) as work of its own, outside any transaction it was started in:
 * for the in-process bus's deliveries, which the publisher does not wait for (a handler's
 * statements are not the transaction's, and wait for it at most until it ends).
 */
export function outsideTransactions<T>(fn: () => T): T {
  return frames.exit(fn);
}

export function createTxGuard(mode: GuardMode, warn: (message: string, statement: string) => void = defaultWarn): TxGuard {
  // Off: no store is ever run, so AsyncLocalStorage stays disabled (and free) for the whole process.
  if (mode === 'off') return { run: (_state, fn) => fn(), check: () => {} };
  const guard = {};
  const warned = new Set<string>();
  const openHere = () => {
    for (let f = frames.getStore(); f; f = f.parent) if (f.guard === guard && f.state.open) return true;
    return false;
  };
  return {
    run: (state, fn) => frames.run({ guard, state, parent: frames.getStore() }, fn),
    check(text) {
      if (!openHere()) return;
      const head = statementHead(text);
      const err = new TransactionEscapeError(head);
      if (mode === 'throw') throw err;
      if (warned.has(text) || warned.size >= 1000) return;
      warned.add(text);
      warn(err.message, head);
    },
  };
}

function defaultWarn(message: string): void {
  process.emitWarning(message, 'TransactionEscapeWarning');
}

/** A statement waited past its bound for the embedded database's one connection. */
export function databaseBusy(detail: string, cause?: unknown): DomainError {
  return new DomainError(
    'unavailable',
    'database_busy',
    `The database is busy; try again shortly (${detail}).`,
    { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
    { cause },
  );
}

/** A transaction ran past its bound and was rolled back. */
export function transactionTimeout(ms: number): DomainError {
  return new DomainError(
    'unavailable',
    'transaction_timeout',
    `A database transaction ran longer than ${ms} ms and was rolled back; nothing of it was kept. Try again shortly.`,
    { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
  );
}
