import { DomainError } from './errors.js';

/**
 * Per-account concurrency caps on heavy work (docs/reliability.md, "Fair shares"): how many
 * operations of one kind an account may have running at once in this process, and, for an agent,
 * how many that agent may (an agent counts under its owner's account and on its own). One more
 * is refused at once, never queued: 429 `concurrency_limit` with `Retry-After`, naming the limit.
 *
 * The counts are this process's (a service replica's, or a gateway replica's): with R replicas an
 * account may hold up to R times the cap in all. That bounds what one account takes of each
 * replica, which is what fairness between accounts needs; it is not a global quota.
 */
export interface ConcurrencyLimit {
  /** The limit's name, in the refusal's details and message: `drive_scans`. */
  name: string;
  /** What it counts, in words, plural: `drive scans (grep, find, duplicates, …)`. */
  what: string;
  /** Operations one account may run at once (at least 1). */
  perAccount: number;
  /** Operations one agent may run at once; default half the account's, rounded up. */
  perAgent?: number;
  /** The wait a refusal suggests, in seconds (default 1). */
  retryAfterSeconds?: number;
}

/** Who holds a slot: the acting account, and the agent when an agent acts. */
export interface Holder {
  kind?: string;
  accountId: string;
  agentId?: string;
}

/** Gives a slot back; calling it more than once gives it back once. */
export type Release = () => void;

/** The default cap of one agent: half its account's, rounded up (an agent never holds a whole account's share of 2 or more). */
export const agentShare = (perAccount: number) => Math.max(1, Math.ceil(perAccount / 2));

export class AccountLimiter {
  readonly perAccount: number;
  readonly perAgent: number;
  private readonly accounts = new Map<string, number>();
  private readonly agents = new Map<string, number>();

  constructor(readonly limit: ConcurrencyLimit) {
    this.perAccount = Math.max(1, Math.floor(limit.perAccount));
    this.perAgent = Math.max(1, Math.min(this.perAccount, Math.floor(limit.perAgent ?? agentShare(this.perAccount))));
  }

  /**
   * Takes a slot for `who`, or throws the 429 when the account (or the agent) already holds its
   * cap. The platform's own calls (`kind: 'system'`) are not counted.
   */
  acquire(who: Holder): Release {
    if (who.kind === 'system') return () => {};
    const account = who.accountId;
    const agent = who.kind === 'agent' || (who.kind === undefined && who.agentId) ? who.agentId : undefined;
    const held = this.accounts.get(account) ?? 0;
    if (held >= this.perAccount) throw this.refusal('account', this.perAccount);
    if (agent !== undefined && (this.agents.get(agent) ?? 0) >= this.perAgent) throw this.refusal('agent', this.perAgent);
    this.accounts.set(account, held + 1);
    if (agent !== undefined) this.agents.set(agent, (this.agents.get(agent) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.accounts, account);
      if (agent !== undefined) decrement(this.agents, agent);
    };
  }

  /** Runs `fn` holding a slot for `who` (refused at once when none is free). */
  async run<T>(who: Holder, fn: () => Promise<T>): Promise<T> {
    const release = this.acquire(who);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Slots an account holds now (for tests and metrics). */
  held(accountId: string): number {
    return this.accounts.get(accountId) ?? 0;
  }

  private refusal(scope: 'account' | 'agent', max: number): DomainError {
    const l = this.limit;
    const whose = scope === 'account' ? 'an account' : 'an agent';
    return new DomainError(
      'rate_limited',
      'concurrency_limit',
      `Too many ${l.what} at once: ${whose} may have ${max} in progress (limit ${l.name}); try again when one has finished.`,
      { retryAfterSeconds: l.retryAfterSeconds ?? 1, limit: l.name, scope, max },
    );
  }
}

function decrement(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 1) - 1;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}

/**
 * Runs `work` on each item, at most `parallel` at once, in the items' order of start; the number
 * done. The first failure stops new starts, lets those running end, and is thrown (nothing is left
 * running behind the caller's back).
 */
export async function eachAtMost<T>(parallel: number, items: readonly T[], work: (item: T) => Promise<unknown>): Promise<number> {
  let next = 0;
  let done = 0;
  let failed: { err: unknown } | undefined;
  const lane = async () => {
    while (!failed && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
        done++;
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, parallel), items.length) }, lane));
  if (failed) throw failed.err;
  return done;
}
