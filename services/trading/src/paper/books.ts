import type { Queryable } from '@svc/kit';

import { type BookOrder, OrderBook } from '../engine/book.js';
import { initialMakerState, type MakerState, MARKET_MAKER } from '../engine/market-maker.js';
import type { OrderRow, TradingStore } from '../orders/store.js';
import { parseUnits, scaled, type Spec } from '../orders/symbols.js';

/**
 * The paper venue's books in memory, one per symbol, each a cache of what PostgreSQL holds. A
 * transaction that changes a book first takes the book's row lock (`SELECT … FOR UPDATE`: one
 * writer per book across every replica), then uses the cached book only if its version is the
 * row's; otherwise (another replica wrote since, or a transaction here failed) it rebuilds the book
 * from the open orders and the market maker's saved quotes.
 */

/** The market maker's quote as saved with the book. */
interface SavedQuote {
  id: string;
  side: 'buy' | 'sell';
  qty: number;
  price: number;
  filled: number;
  notional: number;
  seq: number;
}

/** What the book row keeps besides the open orders. */
export interface BookState {
  seq: number;
  lastPrice: number;
  maker: Omit<MakerState, 'quotes'> & { quotes: SavedQuote[] };
  /** The UTC day (YYYY-MM-DD) of the book's last write: day orders expire when it changes. */
  day: string;
  /** When the book last let its sessions pass (ms): the auctions after it run on its next use. */
  sessionAt?: number;
  /** The lot size the saved quotes count in (absent before lot sizes changed: such quotes are dropped and requoted). */
  lotSize?: string;
}

export interface BookEntry {
  spec: Spec;
  book: OrderBook;
  maker: MakerState;
  /** The row's version this entry reflects. */
  version: number;
  /** The book row's creation time: the market maker's steps count from it. */
  createdAt: number;
  day: string;
  /** When the book last let its sessions pass (ms; paper/sessions.ts). */
  sessionAt: number;
  /** The hold each open order backs (order id → units). */
  holds: Map<string, bigint>;
  /** Set while a transaction changes it: another one that gets the lock then rebuilds instead. */
  busy: boolean;
  /** The balance changes the running transaction writes, for the venue's cache once it commits. */
  deltas?: Array<{ accountId: string; asset: string; total: bigint; held: bigint }>;
  /** The accounts whose order updates the running transaction numbered, with their last seq, for the live streams once it commits. */
  seqs?: Array<{ accountId: string; seq: number }>;
  /** Whether the running transaction changed what the book shows (orders, the market maker's quotes), for the market data streams once it commits. */
  moved?: boolean;
}

/** An amount column as lots or ticks (zero allowed). */
function count(value: string, decimals: number, units: bigint): number {
  const v = scaled(value.replace(/^(\d+)\.?$/, '$1'), decimals);
  if (v === null || v % units !== 0n) throw new Error(`stored amount ${value} is off its increment`);
  return Number(v / units);
}

export function rowToBookOrder(spec: Spec, r: OrderRow): BookOrder {
  return {
    id: r.id,
    owner: r.account_id,
    agent: r.placed_by?.kind === 'agent' ? r.placed_by.id : undefined,
    side: r.side,
    type: r.type,
    tif: r.time_in_force,
    qty: count(r.qty, spec.qtyDecimals, spec.lotUnits),
    price: r.price === null ? undefined : count(r.price, spec.priceDecimals, spec.tickUnits),
    stopPrice: r.stop_price === null ? undefined : count(r.stop_price, spec.priceDecimals, spec.tickUnits),
    filled: count(r.filled_qty, spec.qtyDecimals, spec.lotUnits),
    notional: Number(parseUnits(r.filled_notional) / spec.notionalUnits),
    status: r.status as BookOrder['status'],
    reason: r.reason,
    seq: r.seq,
    triggered: r.triggered,
    trailTicks: r.trail_price === null ? undefined : count(r.trail_price, spec.priceDecimals, spec.tickUnits),
    trailBps: r.trail_percent === null ? undefined : Number(scaled(r.trail_percent.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, ''), 2)),
    hwm: r.hwm === null ? undefined : count(r.hwm, spec.priceDecimals, spec.tickUnits),
    sibling: undefined,
    legs: undefined,
    parent: undefined,
  };
}

/** Links restored orders as they were: an OCO's legs to each other, a bracket's held legs to their entry. */
export function relink(rows: OrderRow[], orders: Map<string, BookOrder>): void {
  for (const r of rows) {
    const o = orders.get(r.id)!;
    if (r.sibling_id) o.sibling = orders.get(r.sibling_id);
    if (r.parent_id && r.status === 'held') {
      const parent = orders.get(r.parent_id);
      if (parent) (parent.legs ??= []).push(o);
    }
  }
}

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export class Books {
  private readonly entries = new Map<string, BookEntry>();

  constructor(
    private readonly store: TradingStore,
    readonly venue: string,
  ) {}

  /**
   * Locks the book's row (after share-locking `accounts`, opened on first use) and answers the
   * book as of that row, cached or rebuilt; marks it busy.
   * Call inside a transaction, then `committed` after it commits or `dropped` when it fails.
   */
  async take(q: Queryable, spec: Spec, accounts?: { ids: string[]; cash: { asset: string; units: string } }): Promise<BookEntry> {
    const row = await this.store.lockBook(q, this.venue, spec.symbol, accounts);
    const cached = this.entries.get(spec.symbol);
    if (cached && !cached.busy && cached.version === row.version) {
      cached.busy = true;
      return cached;
    }
    const state = row.state as BookState | null;
    const maker: MakerState = state
      ? { step: state.maker.step, reference: state.maker.reference, placed: state.maker.placed, quotes: [] }
      : initialMakerState(spec.params);
    const book = new OrderBook({ seq: state?.seq ?? 0, lastPrice: state?.lastPrice ?? spec.params.startPrice });
    const entry: BookEntry = {
      spec,
      book,
      maker,
      version: row.version,
      createdAt: row.created_at.getTime(),
      day: state?.day ?? utcDay(Date.now()),
      sessionAt: state?.sessionAt ?? Date.now(),
      holds: new Map(),
      busy: true,
    };
    const restored: BookOrder[] = [];
    const rows = await this.store.openOrders(q, this.venue, spec.symbol);
    const byId = new Map<string, BookOrder>();
    for (const r of rows) {
      const o = rowToBookOrder(spec, r);
      byId.set(o.id, o);
      // Held legs come back with their entry (book.restore registers them).
      if (r.status !== 'held') restored.push(o);
      const hold = BigInt(r.hold_units.split('.')[0]!);
      if (hold) entry.holds.set(r.id, hold);
    }
    relink(rows, byId);
    // The market maker's quotes count in lots: saved under another lot size, they are withdrawn (it requotes at once).
    for (const s of state?.lotSize === spec.lotSize ? state.maker.quotes : []) {
      restored.push({
        ...s,
        owner: MARKET_MAKER,
        agent: undefined,
        type: 'limit',
        tif: 'gtc',
        status: s.filled ? 'partially_filled' : 'new',
        reason: null,
        triggered: false,
      });
      maker.quotes.push(s.id);
    }
    restored.sort((a, b) => a.seq - b.seq);
    for (const o of restored) book.restore(o);
    book.seq = Math.max(book.seq, state?.seq ?? 0);
    this.entries.set(spec.symbol, entry);
    return entry;
  }

  /** What the book row saves: the engine's counters, the market maker and its quotes. */
  state(entry: BookEntry): BookState {
    const quotes: SavedQuote[] = [];
    for (const id of entry.maker.quotes) {
      const o = entry.book.get(id);
      if (o) quotes.push({ id: o.id, side: o.side, qty: o.qty, price: o.price!, filled: o.filled, notional: o.notional, seq: o.seq });
    }
    return {
      seq: entry.book.seq,
      lastPrice: entry.book.lastPrice,
      maker: { step: entry.maker.step, reference: entry.maker.reference, placed: entry.maker.placed, quotes },
      day: entry.day,
      sessionAt: entry.sessionAt,
      lotSize: entry.spec.lotSize,
    };
  }

  committed(entry: BookEntry, version: number): void {
    entry.version = version;
    entry.busy = false;
  }

  dropped(entry: BookEntry | undefined): void {
    if (entry && this.entries.get(entry.spec.symbol) === entry) this.entries.delete(entry.spec.symbol);
  }

  /** The cached entry, for read-only views (the book snapshot); may be stale by a moment. */
  peek(symbol: string): BookEntry | undefined {
    return this.entries.get(symbol);
  }
}
