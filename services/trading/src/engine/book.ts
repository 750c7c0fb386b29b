/**
 * A limit order book for one symbol and its matching engine: price-time priority, market, limit,
 * stop, stop-limit and trailing stop orders, time in force day/gtc/ioc/fok, partial fills, and
 * linked orders (docs/trading.md, "Linked orders"): OCO legs (the first fill of one, its trigger
 * or its close cancels the other in the same submission) and the held exit legs of a bracket or
 * OTO entry (activated for what the entry filled when it closes). Pure and in process:
 * no I/O, no clock, no randomness. Prices are integer ticks and quantities integer lots (the
 * service converts decimals); everything here is exact integer arithmetic on numbers.
 *
 * The levels of each side are kept in an array sorted so that the best price is last (bids
 * ascending, asks descending): taking the best level is `at(-1)` and removing it is `pop()`. Each
 * level is a FIFO queue of resting orders; a cancelled order is unlinked lazily (skipped when its
 * turn comes), so a cancel is O(1) plus the level's bookkeeping.
 */

import { checkShape, trailStop } from './order.js';
import { StopHeap } from './stops.js';
import { TrailingStops } from './trailing.js';

export { newBookOrder, trailStop } from './order.js';

import type { BookOrder, OrderStatus, OrderType, Side, TimeInForce } from './types.js';

export type { BookOrder, OrderStatus, OrderType, Side, TimeInForce } from './types.js';

export const ORDER_TYPES: readonly OrderType[] = ['market', 'limit', 'stop', 'stop_limit', 'trailing_stop'];
export const TIMES_IN_FORCE: readonly TimeInForce[] = ['day', 'gtc', 'ioc', 'fok', 'opg', 'cls'];
/** Orders for a session's opening (`opg`) or closing (`cls`) auction: they wait outside the book until it. */
export const isAuction = (o: Pick<BookOrder, 'tif'>) => o.tif === 'opg' || o.tif === 'cls';
export const OPEN_STATUSES: readonly OrderStatus[] = ['new', 'partially_filled'];

export const isStopType = (o: Pick<BookOrder, 'type'>) => o.type === 'stop' || o.type === 'stop_limit' || o.type === 'trailing_stop';

export interface Fill {
  /** The book's sequence number of this fill (unique within the book). */
  seq: number;
  taker: BookOrder;
  maker: BookOrder;
  /** The maker's price, in ticks. */
  price: number;
  qty: number;
}

/** The immediate part of an order if it were submitted now: lots and tick·lots it would fill. */
export interface Preview {
  qty: number;
  notional: number;
  /** The last price it would reach (the last trade price when the other side is empty): what the rest would cost at least. */
  worst: number;
}

export interface MatchHooks {
  /**
   * Asked before an order (incoming, or a stop whose trigger was reached) touches the book: a
   * reason to reject it (`insufficient_balance`), or null to let it in. The preview says what it
   * would fill right away.
   */
  admit?(order: BookOrder, preview: Preview): string | null;
  /** Told of each fill as it happens (the caller's ledger follows along). */
  fill?(fill: Fill): void;
  /** Told when the engine closes an order itself (a linked order's other leg): its hold can go at once. */
  closed?(order: BookOrder): void;
  /**
   * Asked when an order that waited goes on — a held leg going live, a stop whose trigger was
   * reached, an order at its auction — before it touches the book: a reason to reject it (an
   * agent's limits, checked again), or null. `notional` is what it stands for now, in tick·lots
   * (its limit price's; without one, what it would fill now when it trades now, else its trigger's).
   */
  release?(order: BookOrder, notional: () => number): string | null;
}

/** What one submission (or cancel, or expiry) changed: the fills, and every order whose state changed. */
export interface MatchResult {
  fills: Fill[];
  changed: BookOrder[];
  /** Held legs that became live (their entry closed having filled). */
  activated?: BookOrder[];
}

interface Level {
  price: number;
  /** Its orders in time priority from `head` on (those before it are gone: undefined). */
  orders: Array<BookOrder | undefined>;
  head: number;
  /** Live (unfilled, uncancelled) lots resting at this price. */
  qty: number;
  /** Orders cancelled off it since its list was last compacted (still in the list until their turn, or the next compaction). */
  dead: number;
}

const isOpen = (o: BookOrder) => o.status === 'new' || o.status === 'partially_filled';
const remaining = (o: BookOrder) => o.qty - o.filled;

export class OrderBook {
  /** Best last: ascending prices. */
  private readonly bids: Level[] = [];
  /** Best last: descending prices. */
  private readonly asks: Level[] = [];
  private readonly bidLevels = new Map<number, Level>();
  private readonly askLevels = new Map<number, Level>();
  /** Resting orders and pending stops, by id. */
  private readonly live = new Map<string, BookOrder>();
  /** Pending stops and stop-limits, the next to fire on top: buy stops from the lowest stop price up, sell stops from the highest down. */
  private readonly buyStops = new StopHeap(true);
  private readonly sellStops = new StopHeap(false);
  /** Pending trailing stops (their trigger moves with the last price). */
  private readonly trailing = new TrailingStops();
  /** Held legs of open bracket and OTO entries, by id. */
  private readonly held = new Map<string, BookOrder>();
  /** Orders waiting for the opening or closing auction, in arrival order. */
  private readonly auctions = new Map<string, BookOrder>();
  /** Orders closed by a link while a sweep ran: taken off their level or stop list after it. */
  private stale: BookOrder[] = [];
  /** Entries with held legs that closed: their legs are activated (or cancelled) next. */
  private closedEntries: BookOrder[] = [];
  /** Sequence numbers for time priority and fills. */
  seq: number;
  /** The last trade price in ticks (stop triggers look at it); the reference price before any trade. */
  lastPrice: number;

  constructor(opts: { seq?: number; lastPrice: number }) {
    this.seq = opts.seq ?? 0;
    this.lastPrice = opts.lastPrice;
  }

  get(id: string): BookOrder | undefined {
    // Most books hold no held legs or auction orders: an id that is not live is not looked up again.
    return this.live.get(id) ?? (this.held.size ? this.held.get(id) : undefined) ?? (this.auctions.size ? this.auctions.get(id) : undefined);
  }

  /** Resting orders, untriggered stops, held legs and orders waiting for an auction, in no particular order. */
  *openOrders(): IterableIterator<BookOrder> {
    yield* this.live.values();
    yield* this.held.values();
    yield* this.auctions.values();
  }

  /**
   * The session's opening (`opg`) or closing (`cls`) auction: the orders waiting for it trade
   * against the book in arrival order, each as an immediate-or-cancel order (a market order for
   * what the book has, a limit order up to its price); what they cannot fill expires
   * (`auction_ended`). Then the stops their trades reached fire.
   */
  auction(tif: 'opg' | 'cls', hooks: MatchHooks = {}): MatchResult {
    const result: MatchResult = { fills: [], changed: [] };
    for (const o of [...this.auctions.values()]) {
      if (o.tif !== tif) continue;
      this.auctions.delete(o.id);
      if (this.released(o, hooks, result)) this.execute(o, hooks, result);
    }
    this.fireStops(hooks, result);
    return result;
  }

  bestBid(): number | undefined {
    return this.bestLevel(this.bids)?.price;
  }

  bestAsk(): number | undefined {
    return this.bestLevel(this.asks)?.price;
  }

  /** Aggregated levels, best first: `[price, lots]`. */
  depth(side: Side, levels: number): Array<[number, number]> {
    const book = side === 'buy' ? this.bids : this.asks;
    const out: Array<[number, number]> = [];
    for (let i = book.length - 1; i >= 0 && out.length < levels; i--) if (book[i]!.qty > 0) out.push([book[i]!.price, book[i]!.qty]);
    return out;
  }

  /**
   * Puts back an order that was resting (or a pending stop) when the book is rebuilt from storage:
   * no matching, its own sequence number. Call in sequence order.
   */
  restore(o: BookOrder): void {
    if (!isOpen(o)) throw new Error(`order ${o.id} is not open`);
    this.holdLegs(o);
    if (isAuction(o)) {
      this.auctions.set(o.id, o);
      return;
    }
    if (isStopType(o)) {
      if (!o.triggered) {
        this.live.set(o.id, o);
        this.addStop(o);
        return;
      }
    }
    if (o.price === undefined) throw new Error(`order ${o.id} rests without a price`);
    this.rest(o);
    if (o.seq > this.seq) this.seq = o.seq;
  }

  /** What `order` would fill right away (lots, tick·lots), without changing anything. */
  preview(order: Pick<BookOrder, 'side' | 'qty' | 'owner' | 'price' | 'type'>): Preview {
    const limit = order.type === 'market' || order.type === 'stop' ? undefined : order.price;
    const levels = order.side === 'buy' ? this.asks : this.bids;
    let want = order.qty;
    let qty = 0;
    let notional = 0;
    let worst = this.lastPrice;
    for (let i = levels.length - 1; i >= 0 && want > 0; i--) {
      const level = levels[i]!;
      if (limit !== undefined && (order.side === 'buy' ? level.price > limit : level.price < limit)) break;
      for (let j = level.head; j < level.orders.length && want > 0; j++) {
        const m = level.orders[j]!;
        if (!isOpen(m)) continue;
        if (m.owner === order.owner) return { qty, notional, worst }; // self-trade prevention stops here
        const q = Math.min(want, remaining(m));
        want -= q;
        qty += q;
        notional += q * level.price;
        worst = level.price;
      }
    }
    return { qty, notional, worst };
  }

  /**
   * The quantity a market order for at most `cap` tick·lots of notional would fill right away
   * (docs/trading.md, "Notional orders"): the book walked best first, each maker taken whole while
   * the rest of the cap pays for it, and the first maker that it does not pay for whole taken for as
   * many lots as the rest pays, then the walk stops. A market order for that quantity fills exactly
   * these lots (the same makers in the same order), so its notional never exceeds `cap`; what is
   * left of the cap is less than one lot at the last price reached, or the book ran out
   * (`exhausted`; `selfTrade` when the caller's own order stopped the walk).
   */
  fillableForNotional(side: Side, owner: string, cap: number): { qty: number; notional: number; exhausted: boolean; selfTrade: boolean } {
    const levels = side === 'buy' ? this.asks : this.bids;
    let qty = 0;
    let notional = 0;
    for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      for (let j = level.head; j < level.orders.length; j++) {
        const m = level.orders[j]!;
        if (!isOpen(m)) continue;
        if (m.owner === owner) return { qty, notional, exhausted: true, selfTrade: true }; // self-trade prevention stops a market order here
        const affordable = Math.floor((cap - notional) / level.price);
        const q = Math.min(affordable, remaining(m));
        qty += q;
        notional += q * level.price;
        if (q < remaining(m)) return { qty, notional, exhausted: false, selfTrade: false };
      }
    }
    return { qty, notional, exhausted: true, selfTrade: false };
  }

  /**
   * Submits an order: validates its shape, asks `admit`, matches it, rests what may rest, then
   * fires the stops the new last price reached (and what they trade, in turn).
   */
  submit(order: BookOrder, hooks: MatchHooks = {}): MatchResult {
    checkShape(order);
    const result: MatchResult = { fills: [], changed: [] };
    order.seq = ++this.seq;
    this.holdLegs(order);
    if (order.legs) for (const l of order.legs) result.changed.push(l);
    // An OCO: its stop leg goes in first, so that the other leg trading at once finds it to cancel (and a stop already reached cancels it).
    const sibling = order.sibling;
    if (sibling && sibling.status === 'new' && !this.live.has(sibling.id)) {
      checkShape(sibling);
      sibling.seq = ++this.seq;
      this.enter(sibling, hooks, result);
    }
    if (isAuction(order)) {
      this.auctions.set(order.id, order);
      result.changed.push(order);
      return result;
    }
    if (isOpen(order)) this.enter(order, hooks, result);
    else result.changed.push(order);
    this.fireStops(hooks, result);
    return result;
  }

  /** An order goes into the book: a stop waits (or fires), anything else matches and may rest. */
  private enter(order: BookOrder, hooks: MatchHooks, result: MatchResult): void {
    if (isStopType(order)) {
      if (order.type === 'trailing_stop') {
        order.hwm ??= this.lastPrice;
        order.stopPrice = trailStop(order);
      }
      if (!this.reached(order)) {
        this.live.set(order.id, order);
        this.addStop(order);
        result.changed.push(order);
        return;
      }
      order.triggered = true;
      this.link(order, hooks, result);
    }
    this.execute(order, hooks, result);
  }

  /**
   * Cancels an open order (resting, a pending stop, or a held leg) with what it is linked to: an
   * OCO's other leg, a bracket's held legs when the entry filled nothing (they are activated for
   * what it filled otherwise, and may trade then), and a held leg takes its whole bracket with it.
   * Null when it is not open in this book.
   */
  cancel(id: string, reason = 'cancelled_by_user', status: 'cancelled' | 'expired' = 'cancelled', hooks: MatchHooks = {}): MatchResult | null {
    let o = this.get(id);
    if (!o || (!isOpen(o) && o.status !== 'held')) return null;
    const result: MatchResult = { fills: [], changed: [] };
    if (o.status === 'held') {
      o = o.parent!;
      for (const l of o.legs!) this.closeHeld(l, status, reason, result);
    }
    this.unlink(o);
    o.status = status;
    o.reason = reason;
    result.changed.push(o);
    this.link(o, hooks, result);
    this.fireStops(hooks, result);
    return result;
  }

  private reached(o: BookOrder): boolean {
    return o.side === 'buy' ? this.lastPrice >= o.stopPrice! : this.lastPrice <= o.stopPrice!;
  }

  /** Registers an entry's held legs (they live outside the book until it closes). */
  private holdLegs(o: BookOrder): void {
    if (!o.legs) return;
    for (const l of o.legs) {
      l.parent = o;
      if (l.status === 'held') this.held.set(l.id, l);
    }
  }

  private closeHeld(l: BookOrder, status: 'cancelled' | 'expired', reason: string, result: MatchResult): void {
    if (l.status !== 'held') return;
    this.held.delete(l.id);
    l.status = status;
    l.reason = reason;
    result.changed.push(l);
  }

  /**
   * What an order's change sets off among the orders linked to it: an OCO leg that filled (even in
   * part), triggered or closed cancels its other leg at once (lazily: taken off the book after the
   * running sweep); an entry that closed has its held legs activated next.
   */
  private link(o: BookOrder, hooks: MatchHooks, result: MatchResult): void {
    const s = o.sibling;
    if (s && (isOpen(s) || s.status === 'held') && (o.filled > 0 || o.triggered || !isOpen(o))) {
      const closedAlike = !isOpen(o) && o.filled === 0 && (o.reason === 'cancelled_by_user' || o.reason === 'day_ended');
      s.status = closedAlike && o.status === 'expired' ? 'expired' : 'cancelled';
      s.reason = o.filled > 0 ? 'linked_order_filled' : o.triggered ? 'linked_order_triggered' : closedAlike ? o.reason! : 'linked_order_closed';
      if (this.live.get(s.id) === s) this.stale.push(s);
      this.held.delete(s.id);
      result.changed.push(s);
      hooks.closed?.(s);
    }
    if (o.legs?.length && !isOpen(o)) this.closedEntries.push(o);
  }

  /** Takes the orders a link closed off their levels and stop lists. */
  private flushStale(): void {
    if (!this.stale.length) return;
    const stale = this.stale;
    this.stale = [];
    for (const s of stale) this.unlink(s);
  }

  /**
   * A closed entry's held legs: cancelled when it filled nothing; otherwise live for the quantity
   * it filled, the stop leg first (a take-profit that trades at once then cancels it).
   */
  private activate(entry: BookOrder, hooks: MatchHooks, result: MatchResult): void {
    const all = entry.legs ?? [];
    entry.legs = [];
    if (entry.filled === 0) {
      const alike = entry.reason === 'cancelled_by_user' || entry.reason === 'day_ended';
      for (const l of all)
        this.closeHeld(l, alike && entry.status === 'expired' ? 'expired' : 'cancelled', alike ? entry.reason! : 'linked_order_closed', result);
      return;
    }
    // The held ones, stop legs first (each kind in its order).
    const legs: BookOrder[] = [];
    for (const l of all) if (l.status === 'held' && isStopType(l)) legs.push(l);
    for (const l of all) if (l.status === 'held' && !isStopType(l)) legs.push(l);
    for (const l of legs) {
      this.held.delete(l.id);
      l.qty = entry.filled;
      l.status = 'new';
      (result.activated ??= []).push(l);
    }
    // Each is asked whether it may go on (MatchHooks.release) before either trades: one refused takes its partner with it.
    for (const l of legs) {
      l.seq = ++this.seq;
      if (isOpen(l)) this.released(l, hooks, result);
    }
    for (const l of legs) {
      if (!isOpen(l)) {
        result.changed.push(l);
        continue;
      }
      // A lone sell stop waits holding what it sells: it must be there (the entry bought it; a leg never sells what is gone).
      if (isStopType(l) && !l.sibling && l.side === 'sell' && hooks.admit?.(l, { qty: 0, notional: 0, worst: this.lastPrice })) {
        l.status = 'rejected';
        l.reason = 'insufficient_balance';
        result.changed.push(l);
        continue;
      }
      this.enter(l, hooks, result);
    }
  }

  /**
   * Whether an order that waited may go on (`release`); refused, it is rejected with the reason, and
   * what is linked to it follows (an OCO's other leg is cancelled).
   */
  private released(o: BookOrder, hooks: MatchHooks, result: MatchResult): boolean {
    const reason = hooks.release?.(o, () => this.exposure(o));
    if (!reason) return true;
    o.status = 'rejected';
    o.reason = reason;
    result.changed.push(o);
    this.link(o, hooks, result);
    return false;
  }

  /** What an order stands for now, in tick·lots (MatchHooks.release). */
  private exposure(o: BookOrder): number {
    const left = o.qty - o.filled;
    if (o.price !== undefined) return left * o.price;
    if (o.type === 'market' || (o.stopPrice !== undefined && this.reached(o))) return this.preview({ ...o, qty: left }).notional;
    return left * (o.stopPrice ?? this.lastPrice);
  }

  private execute(order: BookOrder, hooks: MatchHooks, result: MatchResult): void {
    if (hooks.admit) {
      const reason = hooks.admit(order, this.preview(order));
      if (reason) {
        order.status = 'rejected';
        order.reason = reason;
        result.changed.push(order);
        this.link(order, hooks, result);
        return;
      }
    }
    const limit = order.type === 'market' || order.type === 'stop' ? undefined : order.price;
    if (order.tif === 'fok' && this.preview(order).qty < order.qty) {
      order.status = 'expired';
      order.reason = 'fok_not_filled';
      result.changed.push(order);
      this.link(order, hooks, result);
      return;
    }
    const levels = order.side === 'buy' ? this.asks : this.bids;
    const index = order.side === 'buy' ? this.askLevels : this.bidLevels;
    let selfTrade = false;
    while (order.filled < order.qty) {
      const level = this.bestLevel(levels);
      if (!level) break;
      if (limit !== undefined && (order.side === 'buy' ? level.price > limit : level.price < limit)) break;
      while (level.head < level.orders.length && order.filled < order.qty) {
        const maker = level.orders[level.head]!;
        if (!isOpen(maker)) {
          // Passed: let it go (the level keeps no order it no longer holds).
          level.orders[level.head++] = undefined;
          continue;
        }
        if (maker.owner === order.owner) {
          selfTrade = true;
          break;
        }
        const qty = Math.min(order.qty - order.filled, maker.qty - maker.filled);
        const fill: Fill = { seq: ++this.seq, taker: order, maker, price: level.price, qty };
        order.filled += qty;
        order.notional += qty * level.price;
        maker.filled += qty;
        maker.notional += qty * level.price;
        level.qty -= qty;
        if (maker.filled === maker.qty) {
          maker.status = 'filled';
          this.live.delete(maker.id);
          level.orders[level.head++] = undefined;
        } else maker.status = 'partially_filled';
        this.lastPrice = level.price;
        result.fills.push(fill);
        result.changed.push(maker);
        hooks.fill?.(fill);
        if (maker.sibling || maker.legs?.length) this.link(maker, hooks, result);
        if (order.sibling && order.filled === qty) this.link(order, hooks, result);
        if (this.trailing.length) this.trailing.follow(this.lastPrice);
      }
      if (level.head >= level.orders.length || level.qty === 0) {
        levels.pop();
        index.delete(level.price);
      }
      if (selfTrade) break;
    }
    result.changed.push(order);
    this.flushStale();
    if (order.filled === order.qty) {
      order.status = 'filled';
      this.link(order, hooks, result);
      return;
    }
    order.status = order.filled > 0 ? 'partially_filled' : 'new';
    if (selfTrade) {
      order.status = 'expired';
      order.reason = 'self_trade_prevented';
    } else if (limit === undefined || order.tif === 'ioc' || order.tif === 'fok' || isAuction(order)) {
      order.status = 'expired';
      order.reason = limit === undefined ? 'no_liquidity' : isAuction(order) ? 'auction_ended' : 'ioc_remainder';
    } else {
      order.seq = ++this.seq;
      this.rest(order);
    }
    if (!isOpen(order)) this.link(order, hooks, result);
  }

  /** Fires every pending stop the last price reached, oldest first, until none is left to fire. */
  private fireStops(hooks: MatchHooks, result: MatchResult): void {
    for (;;) {
      this.flushStale();
      if (this.closedEntries.length) {
        this.activate(this.closedEntries.shift()!, hooks, result);
        continue;
      }
      const p = this.lastPrice;
      if (!this.buyStops.reached(p) && !this.sellStops.reached(p) && !this.trailing.reached(p)) {
        // The trailing stops the running submission moved: changed once each, however many trades moved them.
        this.trailing.takeMoved(result.changed);
        return;
      }
      const due: BookOrder[] = [];
      this.buyStops.due(p, due);
      this.sellStops.due(p, due);
      this.trailing.due(p, due);
      if (due.length > 1) due.sort((a, b) => a.seq - b.seq);
      for (const stop of due) {
        // Cancelled meanwhile by its OCO leg's fill or trigger.
        if (!isOpen(stop)) continue;
        this.live.delete(stop.id);
        if (!this.released(stop, hooks, result)) continue;
        stop.triggered = true;
        this.link(stop, hooks, result);
        this.execute(stop, hooks, result);
      }
    }
  }

  private addStop(o: BookOrder): void {
    if (o.type === 'trailing_stop') {
      this.trailing.add(o);
      return;
    }
    (o.side === 'buy' ? this.buyStops : this.sellStops).add(o);
  }

  private rest(o: BookOrder): void {
    const buy = o.side === 'buy';
    const index = buy ? this.bidLevels : this.askLevels;
    let level = index.get(o.price!);
    if (!level) {
      level = { price: o.price!, orders: [], head: 0, qty: 0, dead: 0 };
      index.set(o.price!, level);
      insertLevel(buy ? this.bids : this.asks, level, buy);
    }
    level.orders.push(o);
    level.qty += o.qty - o.filled;
    this.live.set(o.id, o);
  }

  private unlink(o: BookOrder): void {
    if (isAuction(o) && this.auctions.get(o.id) === o) this.auctions.delete(o.id);
    if (this.live.get(o.id) !== o) return;
    this.live.delete(o.id);
    if (isStopType(o) && !o.triggered) {
      if (o.type === 'trailing_stop') return this.trailing.remove(o);
      return (o.side === 'buy' ? this.buyStops : this.sellStops).remove();
    }
    const buy = o.side === 'buy';
    const index = buy ? this.bidLevels : this.askLevels;
    const level = index.get(o.price!);
    if (!level) return;
    level.qty -= o.qty - o.filled;
    if (level.qty === 0) {
      const levels = buy ? this.bids : this.asks;
      const i = levels.indexOf(level);
      if (i >= 0) levels.splice(i, 1);
      index.delete(level.price);
    } else if (++level.dead > 16 && level.dead * 2 > level.orders.length - level.head) {
      // Mostly cancelled orders (a level far from the trades keeps them otherwise, and what they link to): only the open ones stay.
      level.orders = level.orders.filter((m, i) => i >= level.head && m !== o && isOpen(m!));
      level.head = 0;
      level.dead = 0;
    } else if (level.head > 32 && level.head * 2 > level.orders.length) {
      level.orders = level.orders.slice(level.head);
      level.head = 0;
    }
  }

  private bestLevel(levels: Level[]): Level | undefined {
    return levels[levels.length - 1];
  }
}

/** Keeps `levels` sorted with the best price last (bids ascending, asks descending). */
function insertLevel(levels: Level[], level: Level, ascending: boolean): void {
  let lo = 0;
  let hi = levels.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const p = levels[mid]!.price;
    if (ascending ? p < level.price : p > level.price) lo = mid + 1;
    else hi = mid;
  }
  levels.splice(lo, 0, level);
}
