import { isOpen, remaining } from './order.js';
import type { BookOrder, Preview } from './types.js';

/**
 * One side of a book's resting orders (book.ts): its price levels, each a FIFO queue of the orders
 * resting at that price. The levels are kept in an array sorted so that the best price is last
 * (bids ascending, asks descending): taking the best level is `at(-1)` and removing it is `pop()`,
 * which is what matching does most. A cancelled order is unlinked lazily (skipped when its turn
 * comes), so a cancel is O(1) plus the level's bookkeeping.
 */

export interface Level {
  price: number;
  /** Its orders in time priority from `head` on (those before it are gone: undefined). */
  orders: Array<BookOrder | undefined>;
  head: number;
  /** Live (unfilled, uncancelled) lots resting at this price. */
  qty: number;
  /** Orders cancelled off it since its list was last compacted (still in the list until their turn, or the next compaction). */
  dead: number;
}

export class BookSide {
  /** Best last: ascending prices for the bids, descending for the asks. */
  readonly levels: Level[] = [];
  private readonly byPrice = new Map<number, Level>();

  /** `ascending` for the bids (their best, the highest, last), not for the asks. */
  constructor(private readonly ascending: boolean) {}

  best(): Level | undefined {
    return this.levels[this.levels.length - 1];
  }

  /** Takes off the best level (matching emptied it). */
  dropBest(): void {
    const level = this.levels.pop()!;
    this.byPrice.delete(level.price);
  }

  /** Aggregated levels, best first: `[price, lots]`. */
  depth(levels: number): Array<[number, number]> {
    const book = this.levels;
    const out: Array<[number, number]> = [];
    for (let i = book.length - 1; i >= 0 && out.length < levels; i--) if (book[i]!.qty > 0) out.push([book[i]!.price, book[i]!.qty]);
    return out;
  }

  /** Rests an order last in its price's time priority (the book keeps it among its live orders). */
  add(o: BookOrder): void {
    let level = this.byPrice.get(o.price!);
    if (!level) {
      level = { price: o.price!, orders: [], head: 0, qty: 0, dead: 0 };
      this.byPrice.set(o.price!, level);
      this.insert(level);
    }
    level.orders.push(o);
    level.qty += o.qty - o.filled;
  }

  /** Takes a resting order's lots off its level (the order itself goes when its turn comes, or at a compaction). */
  remove(o: BookOrder): void {
    const level = this.byPrice.get(o.price!);
    if (!level) return;
    level.qty -= o.qty - o.filled;
    if (level.qty === 0) {
      const levels = this.levels;
      const i = levels.indexOf(level);
      if (i >= 0) levels.splice(i, 1);
      this.byPrice.delete(level.price);
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

  /**
   * What `order`, coming from the other side, would fill against this one right away (lots,
   * tick·lots), without changing anything; `lastPrice` is its worst price when it fills nothing.
   */
  preview(order: Pick<BookOrder, 'side' | 'qty' | 'owner' | 'price' | 'type'>, lastPrice: number): Preview {
    const limit = order.type === 'market' || order.type === 'stop' ? undefined : order.price;
    const levels = this.levels;
    let want = order.qty;
    let qty = 0;
    let notional = 0;
    let worst = lastPrice;
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
   * The quantity a market order of `owner`'s, coming from the other side, for at most `cap`
   * tick·lots of notional would fill right away (docs/trading.md, "Notional orders"): this side
   * walked best first, each maker taken whole while the rest of the cap pays for it, and the first
   * maker that it does not pay for whole taken for as many lots as the rest pays, then the walk
   * stops. A market order for that quantity fills exactly these lots (the same makers in the same
   * order), so its notional never exceeds `cap`; what is left of the cap is less than one lot at
   * the last price reached, or the side ran out (`exhausted`; `selfTrade` when the caller's own
   * order stopped the walk).
   */
  fillableForNotional(owner: string, cap: number): { qty: number; notional: number; exhausted: boolean; selfTrade: boolean } {
    const levels = this.levels;
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

  /** Puts a new level in its place, keeping the best price last. */
  private insert(level: Level): void {
    const levels = this.levels;
    const ascending = this.ascending;
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
}
