import { type Actor, currentTraceHeaders, DomainError, enqueueEvent, newId, type Queryable, type Sql } from '@svc/kit';

import { type BookOrder, isAuction, isStopType, type MatchResult, newBookOrder } from '../engine/book.js';
import { MARKET_MAKER, requote } from '../engine/market-maker.js';
import { type GroupWrite, type OrderRow, SCHEMA, type TradingStore } from '../orders/store.js';
import { type Instruments, notionalToUnits, parseUnits, type Spec } from '../orders/symbols.js';
import { type BookEntry, Books, utcDay } from './books.js';
import { type Fees, Ledger } from './ledger.js';
import { linkLegs, merge } from './links.js';
import type { PlaceInput } from './place-input.js';
import { guardReleases } from './releases.js';

export type { PlaceInput } from './place-input.js';
import { insufficient, notionalTooSmall, PAPER, type Session, writeSession } from './session.js';
import { runAuctions, Sessions, type SessionSettings } from './sessions.js';
import { Timeline } from './timeline.js';

/**
 * The paper venue: orders go to its books (engine/book.ts) inside one PostgreSQL transaction per
 * change, which holds the book's row lock (one writer per book across replicas), settles the fills
 * on the accounts' balances, and writes orders, fills, balances, the book's state and the events
 * together. The order is acknowledged after the commit: an acknowledged fill is durable.
 */

export { PAPER } from './session.js';

export interface PaperSettings {
  startingCash: string;
  fees: Fees;
  seed: number;
  /** How often the market maker's reference price takes a step, in ms. */
  tickMs: number;
  /** The equities' sessions (paper/sessions.ts); absent: no auctions. */
  sessions?: SessionSettings;
}

/** An order waiting for its book's next group, with the trace headers of its request (for its events). */
interface Job {
  input: PlaceInput;
  headers: Record<string, string>;
  resolve(v: { row: OrderRow; replayed: boolean }): void;
  reject(err: unknown): void;
}

/** What a group answers one order: its result, or the error that refused it alone. */
interface Outcome {
  value?: { row: OrderRow; replayed: boolean } | null;
  error?: unknown;
}

/** The agents placing orders of a group (their legs can go live in it: paper/releases.ts). */
const placingAgents = (inputs: PlaceInput[]) =>
  inputs.filter((i) => i.actor.kind === 'agent').map((i) => ({ accountId: i.accountId, agentId: i.actor.id }));

/** At most this many orders in one transaction. */
const MAX_GROUP = 64;

/** The optimistic path gives way to the locked one (a refusal, a book or an account that moved on). */
const FALLBACK = new Error('optimistic group commit not applied');

// Deadlock, serialization, a balance another book spent meanwhile (CHECK), a row another transaction inserted first.
const RETRYABLE = new Set(['40P01', '40001', '23514', '23505']);

export class PaperVenue {
  readonly books: Books;
  readonly sessions: Sessions | null;
  private readonly queues = new Map<string, Job[]>();
  private readonly draining = new Set<string>();
  /**
   * The paper balances and epochs this replica last read or wrote, per account (asset → units):
   * what the optimistic path matches against. Possibly stale (another book, another replica): the
   * statement then writes nothing or a CHECK refuses it, and the group runs on the locked path.
   */
  private readonly cache = new Map<string, { epoch: number; rows: Map<string, { total: bigint; held: bigint }> }>();

  constructor(
    private readonly deps: {
      sql: Sql;
      store: TradingStore;
      instruments: Instruments;
      settings: PaperSettings;
      kick(): void;
      /** Told after a commit of each account whose order updates moved on, with its last seq (the live streams). */
      published?(seqs: Array<{ accountId: string; seq: number }>): void;
      /** Told after a commit of the books it wrote (the market data streams). */
      moved?(symbols: string[]): void;
      now?: () => number;
    },
  ) {
    this.books = new Books(deps.store, PAPER);
    this.sessions = deps.settings.sessions ? new Sessions(deps.settings.sessions) : null;
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  private get cash() {
    return { asset: 'USD', units: parseUnits(this.deps.settings.startingCash).toString() };
  }

  /** Runs a transaction that changes books; retries it on a deadlock or a balance another book spent meanwhile. */
  private async retrying<T>(run: (taken: BookEntry[]) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const taken: BookEntry[] = [];
      try {
        const out = await run(taken);
        for (const e of taken) {
          this.cached(e.deltas);
          e.deltas = undefined;
          this.books.committed(e, e.version + 1);
        }
        this.deps.kick();
        this.announce(taken.flatMap((e) => e.seqs ?? []));
        const moved = taken.filter((e) => e.moved).map((e) => e.spec.symbol);
        for (const e of taken) e.moved = false;
        if (moved.length) this.deps.moved?.(moved);
        for (const e of taken) e.seqs = undefined;
        return out;
      } catch (err) {
        for (const e of taken) {
          e.seqs = undefined;
          this.books.dropped(e);
        }
        this.cache.clear();
        const code = (err as { code?: string }).code;
        if (process.env.TRADING_DEBUG) console.error('retrying', code, (err as Error).message, (err as { constraint?: string }).constraint);
        if (code && RETRYABLE.has(code) && attempt < 5) continue;
        if (code === '23514') throw new DomainError('unprocessable', 'insufficient_balance', 'The balance does not cover this order.');
        throw err;
      }
    }
  }

  /** Takes a book for this transaction, loads the balances it can touch and lets time pass (day orders, the market maker). */
  private async open(
    q: Queryable,
    spec: Spec,
    taken: BookEntry[],
    accounts: string[],
    group?: { lock: string[]; keys: Array<{ accountId: string; clientOrderId: string }>; inputs: PlaceInput[] },
  ): Promise<Session> {
    const entry = await this.books.take(q, spec, group && { ids: group.lock, cash: this.cash });
    taken.push(entry);
    const owners = new Set(accounts);
    for (const o of entry.book.openOrders()) if (o.owner !== MARKET_MAKER) owners.add(o.owner);
    const ledger = new Ledger(spec, this.deps.settings.fees, entry.holds);
    // After the book's lock: what another replica wrote before it (balances, a client order id) is visible.
    const { balances, epochs, existing } = await this.deps.store.groupState(q, PAPER, [...owners], group?.keys ?? []);
    ledger.load(balances);
    for (const [accountId, epoch] of epochs) this.cache.set(accountId, { epoch, rows: new Map() });
    for (const b of balances) this.cache.get(b.account_id)?.rows.set(b.asset, { total: BigInt(b.total), held: BigInt(b.held) });
    await guardReleases(q, spec, entry.book, ledger, placingAgents(group?.inputs ?? []));
    const s: Session = { q, entry, ledger, timeline: new Timeline(spec, ledger), changed: new Set(), inserted: new Map(), epochs, existing };
    this.passTime(s);
    return s;
  }

  /** Tells the live streams which accounts' order updates moved on (after a commit). */
  private announce(seqs: Array<{ accountId: string; seq: number }>): void {
    if (seqs.length) this.deps.published?.(seqs);
  }

  /** Lets time pass on the book: day orders expire after midnight UTC, the market maker takes its steps. */
  private passTime(s: Session): void {
    const { entry, ledger } = s;
    const spec = entry.spec;
    const now = this.now();
    const today = utcDay(now);
    if (today !== entry.day) {
      const expired: MatchResult = { fills: [], changed: [] };
      for (const o of [...entry.book.openOrders()]) {
        if (o.tif !== 'day' || o.owner === MARKET_MAKER) continue;
        const r = entry.book.cancel(o.id, 'day_ended', 'expired', ledger);
        if (r) merge(expired, r);
      }
      for (const o of expired.changed) this.track(s, o);
      s.timeline.step(expired.changed, { activated: expired.activated });
      entry.day = today;
    }
    const step = Math.max(0, Math.floor((now - entry.createdAt) / this.deps.settings.tickMs));
    const r = requote(entry.book, entry.maker, { seed: this.deps.settings.seed, symbol: spec.symbol, params: spec.params, step, hooks: ledger });
    for (const o of r?.changed ?? []) this.track(s, o);
    if (r) {
      s.timeline.step(r.changed, { activated: r.activated });
      entry.moved = true;
    }
    if (this.sessions) runAuctions(this.sessions, s, now, (o) => this.track(s, o));
  }

  /** Applies committed balance changes to the cache. */
  private cached(deltas: BookEntry['deltas']): void {
    for (const d of deltas ?? []) {
      const rows = this.cache.get(d.accountId)?.rows;
      if (!rows) continue;
      const b = rows.get(d.asset) ?? { total: 0n, held: 0n };
      b.total += d.total;
      b.held += d.held;
      rows.set(d.asset, b);
    }
  }

  private track(s: Session, o: BookOrder | null): void {
    if (o && o.owner !== MARKET_MAKER) s.changed.add(o);
  }

  /** Writes what the session changed (session.ts); null when the optimistic statement wrote nothing. */
  private close(s: Session, guard?: GroupWrite['guard']): Promise<Map<string, OrderRow> | null> {
    return writeSession(s, this.deps.store, this.books.state(s.entry), guard);
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
        // A client order id twice in one group: the later one waits for the next group (and replays the first).
        const batch: Job[] = [];
        const later: Job[] = [];
        const seen = new Set<string>();
        for (const job of queue.splice(0, MAX_GROUP)) {
          const key = `${job.input.accountId}\u0000${job.input.clientOrderId}`;
          if (seen.has(key)) later.push(job);
          else {
            seen.add(key);
            batch.push(job);
          }
        }
        queue.unshift(...later);
        await this.runGroup(batch);
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
      outcomes = await this.retrying((taken) => this.deps.sql.tx((q) => this.placeGroup(q, batch, taken)));
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
    const s = await this.open(q, spec, taken, accounts, { lock: accounts, keys, inputs: batch.map((j) => j.input) });
    const { outcomes, placed } = await this.match(s, batch, false);
    const rows = (await this.close(s))!;
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
    const entry = this.books.peek(spec.symbol);
    if (!entry || entry.busy) return null;
    const owners = new Set(batch.map((j) => j.input.accountId));
    for (const o of entry.book.openOrders()) if (o.owner !== MARKET_MAKER) owners.add(o.owner);
    const ledger = new Ledger(spec, this.deps.settings.fees, entry.holds);
    const epochs = new Map<string, number>();
    for (const a of owners) {
      const c = this.cache.get(a);
      if (!c) return null;
      epochs.set(a, c.epoch);
      for (const [asset, b] of c.rows) ledger.loadUnits(a, asset, b.total, b.held);
    }
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
      this.passTime(s);
      const { outcomes, placed } = await this.match(s, batch, true);
      const accounts = [...owners].sort();
      const rows = await this.close(s, { expectedVersion: entry.version, accounts, epochs: accounts.map((a) => epochs.get(a)!) });
      if (!rows) throw FALLBACK;
      this.cached(entry.deltas);
      entry.deltas = undefined;
      this.books.committed(entry, entry.version + 1);
      this.deps.kick();
      this.announce(entry.seqs ?? []);
      if (entry.moved) this.deps.moved?.([entry.spec.symbol]);
      entry.moved = false;
      entry.seqs = undefined;
      for (const [i, id] of placed) outcomes[i] = { value: { row: rows.get(id)!, replayed: false } };
      return outcomes;
    } catch (err) {
      if (process.env.TRADING_DEBUG) console.error('optimistic group fell back', (err as Error).message);
      // The book in memory went ahead of what is stored: rebuilt by the locked path.
      this.books.dropped(entry);
      entry.deltas = undefined;
      entry.seqs = undefined;
      entry.busy = false;
      this.cache.clear();
      return null;
    }
  }

  /**
   * Matches the group's orders one after the other; an order refused on its own is answered its
   * error (on the optimistic path, `FALLBACK` is thrown instead: refusals are decided on fresh balances).
   */
  private async match(s: Session, batch: Job[], optimistic: boolean): Promise<{ outcomes: Outcome[]; placed: Map<number, string> }> {
    const { q } = s;
    const spec = s.entry.spec;
    const existing = new Map(s.existing.map((r) => [`${r.account_id}\u0000${r.client_order_id}`, r]));
    const book = s.entry.book;
    const outcomes: Outcome[] = [];
    const placed = new Map<number, string>();
    for (const [i, { input, headers }] of batch.entries()) {
      const prior = existing.get(`${input.accountId}\u0000${input.clientOrderId}`);
      if (prior) {
        outcomes.push({ value: { row: prior, replayed: true } });
        continue;
      }
      // A notional order becomes a market order for the lots its notional pays for on this book, now.
      const fillable = input.notional ? book.fillableForNotional(input.side, input.accountId, input.notional.tickLots) : null;
      const qty = fillable ? fillable.qty : input.qty;
      const o = newBookOrder({
        id: newId('ord'),
        owner: input.accountId,
        agent: input.actor.kind === 'agent' ? input.actor.id : undefined,
        side: input.side,
        type: input.type,
        tif: input.tif,
        qty,
        price: input.price,
        stopPrice: input.stopPrice,
        trailTicks: input.trailTicks,
        trailBps: input.trailBps,
      });
      const legs = linkLegs(o, input);
      // A trailing stop's trigger starts a trail away from the last price: it waits.
      const waits =
        o.type === 'trailing_stop' ||
        isAuction(o) ||
        (isStopType(o) && !(o.side === 'buy' ? book.lastPrice >= o.stopPrice! : book.lastPrice <= o.stopPrice!));
      // An agent's usage is counted in a savepoint: an order refused afterwards counts nothing.
      if (input.limits) await q.query('SAVEPOINT agent_limits');
      try {
        if (qty === 0) throw notionalTooSmall(spec, book, input, fillable!.selfTrade);
        const preview = waits ? null : book.preview(o);
        if (input.limits) {
          // A notional order counts its notional (what it may spend), whatever it fills; a trailing stop its quantity at the last price.
          const ticks = o.type === 'market' ? preview!.notional : o.qty * (o.price ?? o.stopPrice ?? book.lastPrice);
          await input.limits(q, input.notional ? input.notional.units : notionalToUnits(spec, ticks));
          // Every leg is checked against the agent's limits too, at its own price (counted once: the entry's).
          for (const [j, l] of legs.entries())
            await input.limits(q, notionalToUnits(spec, l.qty * (l.price ?? l.stopPrice ?? book.lastPrice)), input.legs![j]!.role);
        }
        if (s.ledger.check(o, preview)) throw insufficient(spec, o, s.ledger);
        const result = book.submit(o, s.ledger);
        if (o.status === 'rejected') throw insufficient(spec, o, s.ledger);
        // A notional order the book ran out for (or its own order stopped) did not spend its notional: it expires, as a market order's rest does.
        if (fillable?.exhausted && o.status === 'filled') {
          o.status = 'expired';
          o.reason = fillable.selfTrade ? 'self_trade_prevented' : 'no_liquidity';
        }
        for (const x of result.changed) this.track(s, x);
        s.timeline.step(result.changed, { accepted: [o, ...legs], activated: result.activated });
        if (input.limits) await q.query('RELEASE SAVEPOINT agent_limits');
      } catch (err) {
        if (!(err instanceof DomainError) || optimistic) throw err;
        if (input.limits) await q.query('ROLLBACK TO SAVEPOINT agent_limits');
        outcomes.push({ error: err });
        continue;
      }
      s.inserted.set(o.id, {
        clientOrderId: input.clientOrderId,
        requestHash: input.requestHash,
        actor: input.actor,
        headers,
        notional: input.notional?.text ?? null,
        orderClass: input.orderClass,
      });
      for (const l of legs)
        s.inserted.set(l.id, {
          clientOrderId: l.id,
          requestHash: input.requestHash,
          actor: input.actor,
          headers,
          notional: null,
          orderClass: input.orderClass,
          parentId: o.id,
        });
      placed.set(i, o.id);
      outcomes.push({ value: null });
    }
    return { outcomes, placed };
  }

  /** Cancels one open order of the account (already known to be its own and at this venue). */
  async cancel(spec: Spec, accountId: string, orderId: string): Promise<OrderRow | null> {
    return this.retrying(async (taken) =>
      this.deps.sql.tx(async (q) => {
        const s = await this.open(q, spec, taken, [accountId]);
        const o = s.entry.book.get(orderId);
        // With what it is linked to (an OCO's other leg, a bracket's held legs; a held leg takes its bracket).
        const r = o && o.owner === accountId ? s.entry.book.cancel(orderId, undefined, undefined, s.ledger) : null;
        for (const x of r?.changed ?? []) this.track(s, x);
        s.timeline.step(r?.changed ?? [], { activated: r?.activated });
        const rows = (await this.close(s))!;
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
    return this.retrying(async (taken) =>
      this.deps.sql.tx(async (q) => {
        const keys = [{ accountId, clientOrderId: input.clientOrderId }];
        const s = await this.open(q, spec, taken, [accountId], { lock: [accountId], keys, inputs: [input] });
        const old = s.entry.book.get(orderId);
        const cancelled = old && old.owner === accountId ? (s.entry.book.cancel(orderId, undefined, undefined, s.ledger)?.changed[0] ?? null) : null;
        if (!cancelled) throw new DomainError('conflict', 'order_not_open', 'The order is no longer open; only an open order can be replaced.');
        this.track(s, cancelled);
        // Its hold is released now (the step), so that the new order is checked against what the account has without it.
        const replaced = s.timeline.step([cancelled], { replaced: cancelled })!;
        const job: Job = { input, headers: currentTraceHeaders(), resolve: () => {}, reject: () => {} };
        const { outcomes, placed } = await this.match(s, [job], false);
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
        const rows = (await this.close(s))!;
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
      const s = await this.open(qq, spec, t, [accountId]);
      const cancelled: MatchResult = { fills: [], changed: [] };
      for (const o of [...s.entry.book.openOrders()]) {
        if (o.owner !== accountId) continue;
        const r = s.entry.book.cancel(o.id, undefined, undefined, s.ledger);
        if (r) merge(cancelled, r);
      }
      for (const o of cancelled.changed) this.track(s, o);
      s.timeline.step(cancelled.changed, { activated: cancelled.activated });
      return [...(await this.close(s))!.values()].filter((r) => r.account_id === accountId && r.status === 'cancelled');
    };
    if (q && taken) return run(q, taken);
    return this.retrying((t) => this.deps.sql.tx((qq) => run(qq, t)));
  }

  /** Cancels the account's open orders and puts its paper balances back to the starting cash. */
  async reset(accountId: string, actor: Actor): Promise<number> {
    let resetSeq = 0;
    const epoch = await this.retrying((taken) =>
      this.deps.sql.tx(async (q) => {
        await this.deps.store.paperAccount(q, accountId, PAPER, this.cash, 'update');
        for (const symbol of await this.deps.store.openSymbols(q, accountId, PAPER)) {
          const spec = this.deps.instruments.get(symbol);
          if (spec) await this.cancelIn(spec, accountId, q, taken);
        }
        const epoch = await this.deps.store.resetPaper(q, accountId, PAPER, this.cash);
        const seq = await this.deps.store.appendEvent(q, {
          accountId,
          id: newId('evt'),
          type: 'reset',
          venue: PAPER,
          symbol: null,
          orderId: null,
          data: { epoch, startingCash: this.deps.settings.startingCash },
          balances: [{ asset: this.cash.asset, total: this.cash.units, held: '0' }],
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
    this.cache.delete(accountId);
    this.announce([{ accountId, seq: resetSeq }]);
    return epoch;
  }

  /** The book as it stands (after letting time pass), best levels first. */
  async snapshot(spec: Spec, depth: number) {
    return this.retrying((taken) =>
      this.deps.sql.tx(async (q) => {
        const s = await this.open(q, spec, taken, []);
        const out = {
          bids: s.entry.book.depth('buy', depth),
          asks: s.entry.book.depth('sell', depth),
          last: s.entry.book.lastPrice,
          reference: s.entry.maker.reference,
        };
        await this.close(s);
        return out;
      }),
    );
  }

  /** Opens the account's paper balances on first use; answers them with its epoch. */
  async balances(accountId: string) {
    const acct = await this.deps.sql.tx((q) => this.deps.store.paperAccount(q, accountId, PAPER, this.cash, 'share'));
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
