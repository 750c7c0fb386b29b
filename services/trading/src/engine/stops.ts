import { isOpen } from './order.js';
import { TrailingStops } from './trailing.js';
import type { BookOrder } from './types.js';

/**
 * A book's pending stops (book.ts): its stop and stop-limit orders in a heap per side, its trailing
 * stops apart (their triggers move with the last price). The book asks whether the last price
 * reached any, takes out those it did, and tells them each trade's price.
 */
export class PendingStops {
  /** The next to fire on top: buy stops from the lowest stop price up, sell stops from the highest down. */
  private readonly buys = new StopHeap(true);
  private readonly sells = new StopHeap(false);
  private readonly trailing = new TrailingStops();

  add(o: BookOrder): void {
    if (o.type === 'trailing_stop') {
      this.trailing.add(o);
      return;
    }
    (o.side === 'buy' ? this.buys : this.sells).add(o);
  }

  /** `o` waits no more (cancelled, or closed by its linked order): the caller has closed it already. */
  remove(o: BookOrder): void {
    if (o.type === 'trailing_stop') return this.trailing.remove(o);
    return (o.side === 'buy' ? this.buys : this.sells).remove();
  }

  /** A trade at `p`: the trailing stops' water marks follow it (called on every fill: nothing to do without trailing stops). */
  follow(p: number): void {
    if (this.trailing.length) this.trailing.follow(p);
  }

  /** Whether the last price `p` reached a pending stop (or, for the trailing stops, their bound: `due` then makes it exact). */
  reached(p: number): boolean {
    return this.buys.reached(p) || this.sells.reached(p) || this.trailing.reached(p);
  }

  /** Takes out the stops the last price `p` reached, oldest first (the order they fire in). */
  due(p: number): BookOrder[] {
    const due: BookOrder[] = [];
    this.buys.due(p, due);
    this.sells.due(p, due);
    this.trailing.due(p, due);
    if (due.length > 1) due.sort((a, b) => a.seq - b.seq);
    return due;
  }

  /** Adds to `into` the trailing stops whose water mark moved since the last call (TrailingStops.takeMoved). */
  takeMoved(into: BookOrder[]): void {
    this.trailing.takeMoved(into);
  }
}

/**
 * One side's pending stop and stop-limit orders (PendingStops), as a binary heap on the stop price,
 * the next to fire on top: buy stops fire from the lowest stop price up, sell stops from the highest
 * down (a stop's price does not move while it waits). Adding one and taking out those the last
 * price reached cost O(log n) each, where a sorted list moved half of itself on every stop placed.
 *
 * A stop that leaves otherwise (cancelled by its owner or by its OCO leg) is dropped lazily: it is
 * closed by then, and skipped when it comes to the top; the heap is rebuilt without such stops once
 * they are half of it, so it never holds more than twice the pending stops.
 */
export class StopHeap {
  private heap: BookOrder[] = [];
  /** Stops taken out by `remove` that are still in the heap. */
  private removed = 0;

  constructor(private readonly buy: boolean) {}

  /** Pending stops, those removed but not yet dropped included. */
  get size(): number {
    return this.heap.length;
  }

  /** Whether the last price `p` reached the top stop (a removed one too: `due` then drops it). */
  reached(p: number): boolean {
    const top = this.heap[0];
    return top !== undefined && (this.buy ? p >= top.stopPrice! : p <= top.stopPrice!);
  }

  add(o: BookOrder): void {
    if (this.removed > 32 && this.removed * 2 > this.heap.length) this.compact();
    const heap = this.heap;
    let i = heap.length;
    heap.push(o);
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!this.before(o, heap[up]!)) break;
      heap[i] = heap[up]!;
      i = up;
    }
    heap[i] = o;
  }

  /** `o` (which its caller closes) is no longer pending: it goes when it reaches the top, or at the next rebuild. */
  remove(): void {
    this.removed++;
  }

  /** Takes out into `out` the pending stops the last price `p` reached (dropping removed ones met on the way). */
  due(p: number, out: BookOrder[]): void {
    while (this.reached(p)) {
      const o = this.pop();
      if (isOpen(o)) out.push(o);
      else this.removed--;
    }
  }

  private pop(): BookOrder {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length) this.sift(last, 0);
    return top;
  }

  /** Puts `o` at hole `i` and moves it down to its place. */
  private sift(o: BookOrder, i: number): void {
    const heap = this.heap;
    const n = heap.length;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && this.before(heap[c + 1]!, heap[c]!)) c++;
      if (!this.before(heap[c]!, o)) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = o;
  }

  private compact(): void {
    const heap = this.heap.filter(isOpen);
    this.heap = heap;
    this.removed = 0;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.sift(heap[i]!, i);
  }

  /** Whether `a` fires before `b`. */
  private before(a: BookOrder, b: BookOrder): boolean {
    return this.buy ? a.stopPrice! < b.stopPrice! : a.stopPrice! > b.stopPrice!;
  }
}
