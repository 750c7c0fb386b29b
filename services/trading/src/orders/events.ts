import { type Bus, follow, LiveSignals, type Principal, type Sql } from '@svc/kit';

import type { EventRow, TradingStore } from './store.js';

/**
 * The account's order updates (docs/trading.md, "Order updates"): written by the venues with the
 * change they record (paper/timeline.ts, store.writeGroup, store.appendEvent), numbered in one
 * gap-free sequence per account. After each commit the venue signals the accounts whose sequence
 * moved on (kit's LiveSignals, subjects `trading.events.<account>`); a watcher reads what it has not
 * sent from the store (kit's follow), so a lost signal only delays an update, never loses it.
 */

/** What crosses replicas: the account's sequence reached `seq`. */
interface Moved {
  seq: number;
}

export class OrderUpdates {
  readonly live: LiveSignals<Moved>;

  constructor(private readonly deps: { sql: Sql; store: TradingStore; bus: () => Promise<Bus>; onError?: (err: unknown) => void }) {
    this.live = new LiveSignals<Moved>(deps.bus, 'trading.events');
  }

  /** After a commit: tells every replica's watchers of these accounts (best effort: they also read the store every few seconds). */
  published(seqs: Array<{ accountId: string; seq: number }>): void {
    for (const { accountId, seq } of seqs) this.live.signal(accountId, { seq }).catch((err: unknown) => this.deps.onError?.(err));
  }

  /** A page of the acting account's updates after `after`, oldest first. */
  async list(p: Principal, after: number, limit: number): Promise<{ rows: EventRow[]; nextAfter?: number }> {
    const rows = await this.deps.store.events(this.deps.sql, p.accountId, after, limit + 1);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    return { rows: page, nextAfter: more ? page[page.length - 1]!.seq : undefined };
  }

  /** Every update of the acting account after `after`, then the live ones, until `signal` aborts. */
  watch(p: Principal, after: number, signal: AbortSignal): AsyncGenerator<{ kind: 'event'; event: EventRow } | { kind: 'extra'; item: never }> {
    return follow<EventRow, never, Moved>(this.live, p.accountId, after, signal, {
      read: (from, limit) => this.deps.store.events(this.deps.sql, p.accountId, from, limit),
      meaning: (s) => ({ kind: 'more', seq: s.seq }),
    });
  }
}
