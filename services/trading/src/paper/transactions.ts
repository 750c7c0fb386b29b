import { DomainError, type Queryable, type Sql } from '@svc/kit';

import type { MatchResult } from '../engine/book.js';
import { MARKET_MAKER, requote } from '../engine/market-maker.js';
import type { GroupWrite, OrderRow, TradingStore } from '../orders/store.js';
import { type Instruments, parseUnits, type Spec } from '../orders/symbols.js';
import { BalanceCache } from './balance-cache.js';
import { type BookEntry, Books, utcDay } from './books.js';
import { type Fees, Ledger } from './ledger.js';
import { merge } from './links.js';
import type { PlaceInput } from './place-input.js';
import { guardReleases } from './releases.js';
import { PAPER, type Session, track, writeSession } from './session.js';
import { runAuctions, Sessions, type SessionSettings } from './sessions.js';
import { Timeline } from './timeline.js';

export interface PaperSettings {
  startingCash: string;
  fees: Fees;
  seed: number;
  /** How often the market maker's reference price takes a step, in ms. */
  tickMs: number;
  /** The equities' sessions (paper/sessions.ts); absent: no auctions. */
  sessions?: SessionSettings;
}

export interface PaperDeps {
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
}

/** The agents placing orders of a group (their legs can go live in it: paper/releases.ts). */
const placingAgents = (inputs: PlaceInput[]) =>
  inputs.filter((i) => i.actor.kind === 'agent').map((i) => ({ accountId: i.accountId, agentId: i.actor.id }));

// Deadlock, serialization, a balance another book spent meanwhile (CHECK), a row another transaction inserted first.
const RETRYABLE = new Set(['40P01', '40001', '23514', '23505']);

/**
 * The paper venue's book transactions (venue.ts): one PostgreSQL transaction per change, which
 * takes the book's row lock (one writer per book across replicas), loads the balances the change
 * can touch and lets time pass on the book (`open`), writes what it changed in one statement
 * (`close`), and is run again whole on a deadlock or a balance another book spent meanwhile
 * (`retrying`). Once it commits, the replica's cached books and balances take what it wrote and the
 * live streams are told (`committed`); the optimistic group commit ends the same way.
 */
export class BookTransactions {
  readonly books: Books;
  readonly sessions: Sessions | null;
  readonly balances = new BalanceCache();

  constructor(private readonly deps: PaperDeps) {
    this.books = new Books(deps.store, PAPER);
    this.sessions = deps.settings.sessions ? new Sessions(deps.settings.sessions) : null;
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** A new paper account's starting balance. */
  get cash() {
    return { asset: 'USD', units: parseUnits(this.deps.settings.startingCash).toString() };
  }

  /** Runs a transaction that changes books; retries it on a deadlock or a balance another book spent meanwhile. */
  async retrying<T>(run: (taken: BookEntry[]) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const taken: BookEntry[] = [];
      try {
        const out = await run(taken);
        this.committed(taken);
        return out;
      } catch (err) {
        for (const e of taken) {
          e.seqs = undefined;
          this.books.dropped(e);
        }
        this.balances.clear();
        const code = (err as { code?: string }).code;
        if (process.env.TRADING_DEBUG) console.error('retrying', code, (err as Error).message, (err as { constraint?: string }).constraint);
        if (code && RETRYABLE.has(code) && attempt < 5) continue;
        if (code === '23514') throw new DomainError('unprocessable', 'insufficient_balance', 'The balance does not cover this order.');
        throw err;
      }
    }
  }

  /** What follows a commit of the books `taken`: the cached balances and books move on, the streams are told. */
  committed(taken: BookEntry[]): void {
    for (const e of taken) {
      this.balances.apply(e.deltas);
      e.deltas = undefined;
      this.books.committed(e, e.version + 1);
    }
    this.deps.kick();
    this.announce(taken.flatMap((e) => e.seqs ?? []));
    const moved = taken.filter((e) => e.moved).map((e) => e.spec.symbol);
    for (const e of taken) e.moved = false;
    if (moved.length) this.deps.moved?.(moved);
    for (const e of taken) e.seqs = undefined;
  }

  /** Tells the live streams which accounts' order updates moved on (after a commit). */
  announce(seqs: Array<{ accountId: string; seq: number }>): void {
    if (seqs.length) this.deps.published?.(seqs);
  }

  /** Takes a book for this transaction, loads the balances it can touch and lets time pass (day orders, the market maker). */
  async open(
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
    this.balances.read(epochs, balances);
    await guardReleases(q, spec, entry.book, ledger, placingAgents(group?.inputs ?? []));
    const s: Session = { q, entry, ledger, timeline: new Timeline(spec, ledger), changed: new Set(), inserted: new Map(), epochs, existing };
    this.passTime(s);
    return s;
  }

  /** Lets time pass on the book: day orders expire after midnight UTC, the market maker takes its steps. */
  passTime(s: Session): void {
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
      for (const o of expired.changed) track(s, o);
      s.timeline.step(expired.changed, { activated: expired.activated });
      entry.day = today;
    }
    const step = Math.max(0, Math.floor((now - entry.createdAt) / this.deps.settings.tickMs));
    const r = requote(entry.book, entry.maker, { seed: this.deps.settings.seed, symbol: spec.symbol, params: spec.params, step, hooks: ledger });
    for (const o of r?.changed ?? []) track(s, o);
    if (r) {
      s.timeline.step(r.changed, { activated: r.activated });
      entry.moved = true;
    }
    if (this.sessions) runAuctions(this.sessions, s, now, (o) => track(s, o));
  }

  /** Writes what the session changed (session.ts); null when the optimistic statement wrote nothing. */
  close(s: Session, guard?: GroupWrite['guard']): Promise<Map<string, OrderRow> | null> {
    return writeSession(s, this.deps.store, this.books.state(s.entry), guard);
  }
}
