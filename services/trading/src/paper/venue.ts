import { type Actor, currentTraceHeaders, DomainError, enqueueEvent, newId, type Queryable } from '@svc/kit';

import type { MatchResult } from '../engine/book.js';
import { MARKET_MAKER } from '../engine/market-maker.js';
import { type OrderRow, SCHEMA } from '../orders/store.js';
import type { Spec } from '../orders/symbols.js';
import type { BookEntry, Books } from './books.js';
import { Ledger } from './ledger.js';
import { merge } from './links.js';
import { type Job, matchGroup, nextGroup, type Outcome } from './match.js';
import type { PlaceInput } from './place-input.js';
import { guardReleases } from './releases.js';
import { PAPER, type Session, track } from './session.js';
import type { Sessions } from './sessions.js';
import { Timeline } from './timeline.js';
import { BookTransactions, type PaperDeps } from './transactions.js';

/**
 * The paper venue: orders go to its books (engine/book.ts) inside one PostgreSQL transaction per
 * change (transactions.ts), which holds the book's row lock (one writer per book across replicas),
 * settles the fills on the accounts' balances, and writes orders, fills, balances, the book's state
 * and the events together. The order is acknowledged after the commit: an acknowledged fill is
 * durable. Orders for one book are placed in groups (group commit; match.ts matches a group).
 */

export type { PlaceInput } from './place-input.js';
export { PAPER } from './session.js';
export type { PaperSettings } from './transactions.js';

/** The optimistic path gives way to the locked one (a refusal, a book or an account that moved on). */
const FALLBACK = new Error('optimistic group commit not applied');

export class PaperVenue {
  readonly books: Books;
  readonly sessions: Sessions | null;
  private readonly tx: BookTransactions;
  private readonly queues = new Map<string, Job[]>();
  private readonly draining = new Set<string>();

  constructor(private readonly deps: PaperDeps) {
    this.tx = new BookTransactions(deps);
    this.books = this.tx.books;
    this.sessions = this.tx.sessions;
  }

  /**
   * Places an order; `replayed` when the client order id names an order already placed (the same
   * one). Orders for one book wait in a queue here and go in groups (group commit): one
   * transaction takes the book's lock, matches every order of the group in arrival order and
   * writes them all; each is answered after that commit.
   */
  place(input: PlaceInput): Promise<{ row: OrderRow; replayed: boolean }> {
    return new Promise((resolve, reject) => {
      const symbol = input.spec.symbol;
      let queue = this.queues.get(symbol);
      if (!queue) this.queues.set(symbol, (queue = []));
      queue.push({ input, headers: currentTraceHeaders(), resolve, reject });
      if (!this.draining.has(symbol)) void this.drain(symbol);
    });
  }

  private async drain(symbol: string): Promise<void> {
    this.draining.add(symbol);
    try {
      for (;;) {
        const queue = this.queues.get(symbol);
        if (!queue?.length) break;
        await this.runGroup(nextGroup(queue));
      }
    } finally {
      this.draining.delete(symbol);
    }
  }

  /** One group in one transaction (retried as a whole); when it cannot commit, each order on its own. */
  private async runGroup(batch: Job[], optimistic = true): Promise<void> {
    const fast = optimistic ? await this.tryOptimistic(batch) : null;
    if (fast) return fast.forEach((o, i) => (o.error ? batch[i]!.reject(o.error) : batch[i]!.resolve(o.value!)));
    let outcomes: Outcome[];
    try {
      outcomes = await this.tx.retrying((taken) => this.deps.sql.tx((q) => this.placeGroup(q, batch, taken)));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      for (const job of batch) await this.runGroup([job], false);
      return;
    }
    outcomes.forEach((o, i) => (o.error ? batch[i]!.reject(o.error) : batch[i]!.resolve(o.value!)));
  }

  private async placeGroup(q: Queryable, batch: Job[], taken: BookEntry[]): Promise<Outcome[]> {
    const spec = batch[0]!.input.spec;
    const accounts = batch.map((j) => j.input.accountId);
    const keys = batch.map((j) => ({ accountId: j.input.accountId, clientOrderId: j.input.clientOrderId }));
    const s = await this.tx.open(q, spec, taken, accounts, { lock: accounts, keys, inputs: batch.map((j) => j.input) });
    const { outcomes, placed } = await matchGroup(s, batch, false);
    const rows = (await this.tx.close(s))!;
    for (const [i, id] of placed) outcomes[i] = { value: { row: rows.get(id)!, replayed: false } };
    return outcomes;
  }

  /**
   * The optimistic group commit: the group matched against the book this replica holds and the
   * balances it last saw, written in one statement outside a transaction that applies only if
   * the book's row is still at that version and every account it touches at its epoch (store's
   * writeGroup guard: the accounts share-locked, then the book's row, as the locked path takes
   * them). One round trip instead of five (BEGIN, lock, read, write, COMMIT). Any doubt — no
   * cached book or balances, an agent's limits (counted in a savepoint), a refused order (decided
   * on fresh balances only), a client order id already used (the unique index), a balance that
   * does not cover it (the CHECK), a book or an account that moved on — and the group runs on the
   * locked path instead; nothing of the attempt was written. Null then.
   */
  private async tryOptimistic(batch: Job[]): Promise<Outcome[] | null> {
    const spec = batch[0]!.input.spec;
    if (batch.some((j) => j.input.limits)) return null;
    const entry = this.tx.books.peek(spec.symbol);
    if (!entry || entry.busy) return null;
    const owners = new Set(batch.map((j) => j.input.accountId));
    for (const o of entry.book.openOrders()) if (o.owner !== MARKET_MAKER) owners.add(o.owner);
    const ledger = new Ledger(spec, this.deps.settings.fees, entry.holds);
    const epochs = this.tx.balances.load(owners, ledger);
    if (!epochs) return null;
    entry.busy = true;
    const s: Session = {
      q: this.deps.sql,
      entry,
      ledger,
      timeline: new Timeline(spec, ledger),
      changed: new Set(),
      inserted: new Map(),
      epochs,
      existing: [],
    };
    try {
      // The limits of agents whose orders wait on the book, read as the statement will find them (no agent places in this group).
      await guardReleases(this.deps.sql, spec, entry.book, ledger, []);
      this.tx.passTime(s);
      const { outcomes, placed } = await matchGroup(s, batch, true);
      const accounts = [...owners].sort();
      const rows = await this.tx.close(s, { expectedVersion: entry.version, accounts, epochs: accounts.map((a) => epochs.get(a)!) });
      if (!rows) throw FALLBACK;
      this.tx.committed([entry]);
      for (const [i, id] of placed) outcomes[i] = { value: { row: rows.get(id)!, replayed: false } };
      return outcomes;
    } catch (err) {
      if (process.env.TRADING_DEBUG) console.error('optimistic group fell back', (err as Error).message);
      // The book in memory went ahead of what is stored: rebuilt by the locked path.
      this.tx.books.dropped(entry);
      entry.deltas = undefined;
      entry.seqs = undefined;
      entry.busy = false;
      this.tx.balances.clear();
      return null;
    }
  }

  /** Cancels one open order of the account (already known to be its own and at this venue). */
  async cancel(spec: Spec, accountId: string, orderId: string): Promise<OrderRow | null> {
    return this.tx.retrying(async (taken) =>
      this.deps.sql.tx(async (q) => {
        const s = await this.tx.open(q, spec, taken, [accountId]);
        const o = s.entry.book.get(orderId);
        // With what it is linked to (an OCO's other leg, a bracket's held legs; a held leg takes its bracket).
        const r = o && o.owner === accountId ? s.entry.book.cancel(orderId, undefined, undefined, s.ledger) : null;
        for (const x of r?.changed ?? []) track(s, x);
        s.timeline.step(r?.changed ?? [], { activated: r?.activated });
        const rows = (await this.tx.close(s))!;
        return r ? rows.get(orderId)! : null;
      }),
    );
  }

  /**
   * Replaces an open order of the account in one transaction: the old one cancelled (its fills
   * stay, its hold released) and the new one placed on the same book. When the new one is refused
   * (the balance, an agent's limits) or its client order id is taken, neither happens.
   */
  async replace(spec: Spec, accountId: string, orderId: string, input: PlaceInput): Promise<{ row: OrderRow; replaced: OrderRow }> {
    return this.tx.retrying(async (taken) =>
      this.deps.sql.tx(async (q) => {
        const keys = [{ accountId, clientOrderId: input.clientOrderId }];
        const s = await this.tx.open(q, spec, taken, [accountId], { lock: [accountId], keys, inputs: [input] });
        const old = s.entry.book.get(orderId);
        const cancelled = old && old.owner === accountId ? (s.entry.book.cancel(orderId, undefined, undefined, s.ledger)?.changed[0] ?? null) : null;
        if (!cancelled) throw new DomainError('conflict', 'order_not_open', 'The order is no longer open; only an open order can be replaced.');
        track(s, cancelled);
        // Its hold is released now (the step), so that the new order is checked against what the account has without it.
        const replaced = s.timeline.step([cancelled], { replaced: cancelled })!;
        const job: Job = { input, headers: currentTraceHeaders(), resolve: () => {}, reject: () => {} };
        const { outcomes, placed } = await matchGroup(s, [job], false);
        const outcome = outcomes[0]!;
        // Thrown, the transaction rolls back: the old order is still open (retrying drops this book's state).
        if (outcome.error) throw outcome.error;
        const id = placed.get(0);
        if (!id)
          throw new DomainError(
            'conflict',
            'client_order_id_conflict',
            `clientOrderId "${input.clientOrderId}" already names an order; use a new one.`,
          );
        replaced.replacedBy = id;
        const rows = (await this.tx.close(s))!;
        return { row: rows.get(id)!, replaced: rows.get(orderId)! };
      }),
    );
  }

  /** Cancels every open order of the account at the venue, book by book. */
  async cancelAll(accountId: string): Promise<OrderRow[]> {
    const out: OrderRow[] = [];
    for (const symbol of await this.deps.store.openSymbols(this.deps.sql, accountId, PAPER)) {
      const spec = this.deps.instruments.get(symbol);
      if (!spec) continue;
      out.push(...(await this.cancelIn(spec, accountId)));
    }
    return out;
  }

  private async cancelIn(spec: Spec, accountId: string, q?: Queryable, taken?: BookEntry[]): Promise<OrderRow[]> {
    const run = async (qq: Queryable, t: BookEntry[]) => {
      const s = await this.tx.open(qq, spec, t, [accountId]);
      const cancelled: MatchResult = { fills: [], changed: [] };
      for (const o of [...s.entry.book.openOrders()]) {
        if (o.owner !== accountId) continue;
        const r = s.entry.book.cancel(o.id, undefined, undefined, s.ledger);
        if (r) merge(cancelled, r);
      }
      for (const o of cancelled.changed) track(s, o);
      s.timeline.step(cancelled.changed, { activated: cancelled.activated });
      return [...(await this.tx.close(s))!.values()].filter((r) => r.account_id === accountId && r.status === 'cancelled');
    };
    if (q && taken) return run(q, taken);
    return this.tx.retrying((t) => this.deps.sql.tx((qq) => run(qq, t)));
  }

  /** Cancels the account's open orders and puts its paper balances back to the starting cash. */
  async reset(accountId: string, actor: Actor): Promise<number> {
    let resetSeq = 0;
    const epoch = await this.tx.retrying((taken) =>
      this.deps.sql.tx(async (q) => {
        await this.deps.store.paperAccount(q, accountId, PAPER, this.tx.cash, 'update');
        for (const symbol of await this.deps.store.openSymbols(q, accountId, PAPER)) {
          const spec = this.deps.instruments.get(symbol);
          if (spec) await this.cancelIn(spec, accountId, q, taken);
        }
        const epoch = await this.deps.store.resetPaper(q, accountId, PAPER, this.tx.cash);
        const seq = await this.deps.store.appendEvent(q, {
          accountId,
          id: newId('evt'),
          type: 'reset',
          venue: PAPER,
          symbol: null,
          orderId: null,
          data: { epoch, startingCash: this.deps.settings.startingCash },
          balances: [{ asset: this.tx.cash.asset, total: this.tx.cash.units, held: '0' }],
        });
        resetSeq = seq;
        await enqueueEvent(q, SCHEMA, {
          subject: 'trading.account.reset',
          accountId,
          data: { venue: PAPER, epoch, startingCash: this.deps.settings.startingCash, actor },
        });
        return epoch;
      }),
    );
    // Read again on the account's next order (the cache saw its balances before the reset).
    this.tx.balances.forget(accountId);
    this.tx.announce([{ accountId, seq: resetSeq }]);
    return epoch;
  }

  /** The book as it stands (after letting time pass), best levels first. */
  async snapshot(spec: Spec, depth: number) {
    return this.tx.retrying((taken) =>
      this.deps.sql.tx(async (q) => {
        const s = await this.tx.open(q, spec, taken, []);
        const out = {
          bids: s.entry.book.depth('buy', depth),
          asks: s.entry.book.depth('sell', depth),
          last: s.entry.book.lastPrice,
          reference: s.entry.maker.reference,
        };
        await this.tx.close(s);
        return out;
      }),
    );
  }

  /** Opens the account's paper balances on first use; answers them with its epoch. */
  async balances(accountId: string) {
    const acct = await this.deps.sql.tx((q) => this.deps.store.paperAccount(q, accountId, PAPER, this.tx.cash, 'share'));
    const rows = await this.deps.store.balances(this.deps.sql, [accountId], PAPER);
    return { epoch: Number(acct.epoch), startingCash: acct.starting_cash, rows };
  }

  /** The last trade price of each symbol's book, for valuing positions (no lock). */
  async marks(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const spec of this.deps.instruments.all()) {
      const row = await this.deps.store.readBook(this.deps.sql, PAPER, spec.symbol);
      const state = row?.state as { lastPrice?: number } | null;
      out.set(spec.symbol, state?.lastPrice ?? spec.params.startPrice);
    }
    return out;
  }
}
