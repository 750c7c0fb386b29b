/**
 * A limit order book for one symbol and its matching engine: price-time priority, market, limit,
 * stop, stop-limit and trailing stop orders, time in force day/gtc/ioc/fok, partial fills, and
 * linked orders (docs/trading.md, "Linked orders"; linked.ts). Pure and in process: no I/O, no
 * clock, no randomness. Prices are integer ticks and quantities integer lots (the service converts
 * decimals); everything here is exact integer arithmetic on numbers.
 *
 * The resting orders are kept per side in price levels (levels.ts), the pending stops apart
 * (stops.ts), the order types' rules and the engine's types beside them (order.ts, types.ts): this
 * file is the engine's face, which the service imports, and the matching that drives them.
 */

import { BookSide } from './levels.js';
import { LinkedOrders } from './linked.js';
import { checkShape, isAuction, isOpen, isStopType, trailStop } from './order.js';
import { PendingStops } from './stops.js';

export { isAuction, isStopType, newBookOrder, OPEN_STATUSES, ORDER_TYPES, TIMES_IN_FORCE, trailStop } from './order.js';

import type { BookOrder, Fill, MatchHooks, MatchResult, Preview, Side } from './types.js';

export type { BookOrder, Fill, MatchHooks, MatchResult, OrderStatus, OrderType, Preview, Side, TimeInForce } from './types.js';

export class OrderBook {
  private readonly bids = new BookSide(true);
  private readonly asks = new BookSide(false);
  /** Resting orders and pending stops, by id. */
  private readonly live = new Map<string, BookOrder>();
  private readonly stops = new PendingStops();
  /** Held legs, and what an order's change sets off among those linked to it. */
  private readonly linked = new LinkedOrders(this.live);
  /** Orders waiting for the opening or closing auction, in arrival order. */
  private readonly auctions = new Map<string, BookOrder>();
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
    return this.live.get(id) ?? this.linked.get(id) ?? (this.auctions.size ? this.auctions.get(id) : undefined);
  }

  /** Resting orders, untriggered stops, held legs and orders waiting for an auction, in no particular order. */
  *openOrders(): IterableIterator<BookOrder> {
    yield* this.live.values();
    yield* this.linked.heldLegs();
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
    return this.bids.best()?.price;
  }

  bestAsk(): number | undefined {
    return this.asks.best()?.price;
  }

  /** Aggregated levels, best first: `[price, lots]`. */
  depth(side: Side, levels: number): Array<[number, number]> {
    return (side === 'buy' ? this.bids : this.asks).depth(levels);
  }

  /**
   * Puts back an order that was resting (or a pending stop) when the book is rebuilt from storage:
   * no matching, its own sequence number. Call in sequence order.
   */
  restore(o: BookOrder): void {
    if (!isOpen(o)) throw new Error(`order ${o.id} is not open`);
    this.linked.hold(o);
    if (isAuction(o)) {
      this.auctions.set(o.id, o);
      return;
    }
    if (isStopType(o)) {
      if (!o.triggered) {
        this.live.set(o.id, o);
        this.stops.add(o);
        return;
      }
    }
    if (o.price === undefined) throw new Error(`order ${o.id} rests without a price`);
    this.rest(o);
    if (o.seq > this.seq) this.seq = o.seq;
  }

  /** What `order` would fill right away (lots, tick·lots), without changing anything. */
  preview(order: Pick<BookOrder, 'side' | 'qty' | 'owner' | 'price' | 'type'>): Preview {
    return (order.side === 'buy' ? this.asks : this.bids).preview(order, this.lastPrice);
  }

  /**
   * The quantity a market order for at most `cap` tick·lots of notional would fill right away
   * (docs/trading.md, "Notional orders"; BookSide.fillableForNotional): its notional never exceeds
   * `cap`, and `exhausted` says the book ran out (`selfTrade`: the caller's own order stopped it).
   */
  fillableForNotional(side: Side, owner: string, cap: number): { qty: number; notional: number; exhausted: boolean; selfTrade: boolean } {
    return (side === 'buy' ? this.asks : this.bids).fillableForNotional(owner, cap);
  }

  /**
   * Submits an order: validates its shape, asks `admit`, matches it, rests what may rest, then
   * fires the stops the new last price reached (and what they trade, in turn).
   */
  submit(order: BookOrder, hooks: MatchHooks = {}): MatchResult {
    checkShape(order);
    const result: MatchResult = { fills: [], changed: [] };
    order.seq = ++this.seq;
    this.linked.hold(order);
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
        this.stops.add(order);
        result.changed.push(order);
        return;
      }
      order.triggered = true;
      this.linked.link(order, hooks, result);
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
      for (const l of o.legs!) this.linked.closeHeld(l, status, reason, result);
    }
    this.unlink(o);
    o.status = status;
    o.reason = reason;
    result.changed.push(o);
    this.linked.link(o, hooks, result);
    this.fireStops(hooks, result);
    return result;
  }

  private reached(o: BookOrder): boolean {
    return o.side === 'buy' ? this.lastPrice >= o.stopPrice! : this.lastPrice <= o.stopPrice!;
  }

  /** Takes the orders a link closed off their levels and stop lists. */
  private flushStale(): void {
    const stale = this.linked.takeStale();
    if (stale) for (const s of stale) this.unlink(s);
  }

  /** A closed entry's held legs (LinkedOrders.activate): those that go live are asked whether they may, then entered. */
  private activate(entry: BookOrder, hooks: MatchHooks, result: MatchResult): void {
    const legs = this.linked.activate(entry, result);
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
    this.linked.link(o, hooks, result);
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
        this.linked.link(order, hooks, result);
        return;
      }
    }
    const limit = order.type === 'market' || order.type === 'stop' ? undefined : order.price;
    if (order.tif === 'fok' && this.preview(order).qty < order.qty) {
      order.status = 'expired';
      order.reason = 'fok_not_filled';
      result.changed.push(order);
      this.linked.link(order, hooks, result);
      return;
    }
    const other = order.side === 'buy' ? this.asks : this.bids;
    let selfTrade = false;
    while (order.filled < order.qty) {
      const level = other.best();
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
        if (maker.sibling || maker.legs?.length) this.linked.link(maker, hooks, result);
        if (order.sibling && order.filled === qty) this.linked.link(order, hooks, result);
        this.stops.follow(this.lastPrice);
      }
      if (level.head >= level.orders.length || level.qty === 0) other.dropBest();
      if (selfTrade) break;
    }
    result.changed.push(order);
    this.flushStale();
    if (order.filled === order.qty) {
      order.status = 'filled';
      this.linked.link(order, hooks, result);
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
    if (!isOpen(order)) this.linked.link(order, hooks, result);
  }

  /** Fires every pending stop the last price reached, oldest first, until none is left to fire. */
  private fireStops(hooks: MatchHooks, result: MatchResult): void {
    for (;;) {
      this.flushStale();
      const entry = this.linked.nextClosedEntry();
      if (entry) {
        this.activate(entry, hooks, result);
        continue;
      }
      const p = this.lastPrice;
      if (!this.stops.reached(p)) {
        // The trailing stops the running submission moved: changed once each, however many trades moved them.
        this.stops.takeMoved(result.changed);
        return;
      }
      for (const stop of this.stops.due(p)) {
        // Cancelled meanwhile by its OCO leg's fill or trigger.
        if (!isOpen(stop)) continue;
        this.live.delete(stop.id);
        if (!this.released(stop, hooks, result)) continue;
        stop.triggered = true;
        this.linked.link(stop, hooks, result);
        this.execute(stop, hooks, result);
      }
    }
  }

  private rest(o: BookOrder): void {
    (o.side === 'buy' ? this.bids : this.asks).add(o);
    this.live.set(o.id, o);
  }

  private unlink(o: BookOrder): void {
    if (isAuction(o) && this.auctions.get(o.id) === o) this.auctions.delete(o.id);
    if (this.live.get(o.id) !== o) return;
    this.live.delete(o.id);
    if (isStopType(o) && !o.triggered) return this.stops.remove(o);
    (o.side === 'buy' ? this.bids : this.asks).remove(o);
  }
}
