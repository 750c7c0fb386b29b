import { trailStop } from './order.js';
import type { BookOrder } from './types.js';

/**
 * A book's pending trailing stops (book.ts): their water marks follow the last price, and those
 * whose trigger it reached are taken out to fire. Bounds over them — the lowest water mark of a
 * sell's and the highest of a buy's, the highest trigger of a sell's and the lowest of a buy's —
 * let a trade that moves none of them, and a sweep that fires none, skip the list (most trades
 * and sweeps). They are made exact by each pass over the list and go stale only on the safe side
 * (a stop taken out leaves them wider: one more pass, never a move or a trigger missed).
 */
export class TrailingStops {
  private list: BookOrder[] = [];
  private sellHwm = Infinity;
  private buyHwm = -Infinity;
  private sellStop = -Infinity;
  private buyStop = Infinity;
  /** Stops whose water mark moved since the last `takeMoved` (each once). */
  private readonly moved = new Set<BookOrder>();

  get length(): number {
    return this.list.length;
  }

  add(t: BookOrder): void {
    this.list.push(t);
    this.bound(t);
  }

  remove(t: BookOrder): void {
    const i = this.list.indexOf(t);
    if (i >= 0) this.list.splice(i, 1);
  }

  /** The last price is `p`: a sell's water mark up to it, a buy's down, and their triggers with them. */
  follow(p: number): void {
    if (p <= this.sellHwm && p >= this.buyHwm) return;
    this.reset();
    for (const t of this.list) {
      if (t.side === 'sell' ? p > t.hwm! : p < t.hwm!) {
        t.hwm = p;
        t.stopPrice = trailStop(t);
        this.moved.add(t);
      }
      this.bound(t);
    }
  }

  /** Takes out into `out` the stops whose trigger the last price `p` reached. */
  due(p: number, out: BookOrder[]): void {
    if (p > this.sellStop && p < this.buyStop) return;
    this.reset();
    const kept: BookOrder[] = [];
    for (const t of this.list) {
      if (t.side === 'sell' ? p <= t.stopPrice! : p >= t.stopPrice!) out.push(t);
      else {
        kept.push(t);
        this.bound(t);
      }
    }
    this.list = kept;
  }

  /** Adds to `into` the stops whose water mark moved since the last call (their rows are written). */
  takeMoved(into: BookOrder[]): void {
    for (const t of this.moved) into.push(t);
    this.moved.clear();
  }

  private reset(): void {
    this.sellHwm = Infinity;
    this.buyHwm = -Infinity;
    this.sellStop = -Infinity;
    this.buyStop = Infinity;
  }

  private bound(t: BookOrder): void {
    if (t.side === 'sell') {
      if (t.hwm! < this.sellHwm) this.sellHwm = t.hwm!;
      if (t.stopPrice! > this.sellStop) this.sellStop = t.stopPrice!;
    } else {
      if (t.hwm! > this.buyHwm) this.buyHwm = t.hwm!;
      if (t.stopPrice! < this.buyStop) this.buyStop = t.stopPrice!;
    }
  }
}
