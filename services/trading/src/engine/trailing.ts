import { trailStop } from './order.js';
import type { BookOrder } from './types.js';

/** A pending trailing stop and the submission that last moved it (TrailingStops.takeMoved). */
interface Entry {
  o: BookOrder;
  mark: number;
}

/**
 * A book's pending trailing stops (book.ts): their water marks follow the last price, and those
 * whose trigger it reached are taken out to fire.
 *
 * Each side is kept sorted by water mark, the next to move last: sells descending (a sell's mark
 * goes up to a higher last price), buys ascending. A sell's mark is never below the last price
 * (it is the highest since the stop was placed), so a new one goes last, and the last price
 * reaching `p` moves exactly the tail whose mark passed `p`, all to `p`: the order holds, and a
 * trade costs the stops it moves, not a walk over them all. Triggers are bounded — the highest of a
 * sell's, the lowest of a buy's — so a sweep that fires none skips the list; the bound is made
 * exact by each pass that fires, and goes stale only on the safe side (a stop taken out leaves it
 * wider: one more pass, never a trigger missed).
 */
export class TrailingStops {
  /** Sells by water mark descending, buys ascending: the next to move last. */
  private sells: Entry[] = [];
  private buys: Entry[] = [];
  private sellStop = -Infinity;
  private buyStop = Infinity;
  /** The running submission's mark, and the stops it moved (each once). */
  private mark = 1;
  private moved: BookOrder[] = [];

  get length(): number {
    return this.sells.length + this.buys.length;
  }

  add(t: BookOrder): void {
    const sell = t.side === 'sell';
    const list = sell ? this.sells : this.buys;
    // Where it goes: after every stop whose mark moves no sooner than its own (for a new stop, at the end).
    let lo = 0;
    let hi = list.length;
    if (hi && (sell ? list[hi - 1]!.o.hwm! < t.hwm! : list[hi - 1]!.o.hwm! > t.hwm!))
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const m = list[mid]!.o.hwm!;
        if (sell ? m >= t.hwm! : m <= t.hwm!) lo = mid + 1;
        else hi = mid;
      }
    const e = { o: t, mark: 0 };
    if (hi === list.length) list.push(e);
    else list.splice(hi, 0, e);
    this.bound(t);
  }

  remove(t: BookOrder): void {
    const list = t.side === 'sell' ? this.sells : this.buys;
    const i = this.indexOf(list, t);
    if (i >= 0) list.splice(i, 1);
  }

  /** The last price is `p`: a sell's water mark up to it, a buy's down, and their triggers with them. */
  follow(p: number): void {
    const start = this.moved.length;
    const sells = this.sells;
    for (let i = sells.length - 1; i >= 0 && sells[i]!.o.hwm! < p; i--) this.move(sells[i]!, p);
    const buys = this.buys;
    for (let i = buys.length - 1; i >= 0 && buys[i]!.o.hwm! > p; i--) this.move(buys[i]!, p);
    if (this.moved.length - start > 1) bySeq(this.moved, start);
  }

  /** Takes out into `out` the stops whose trigger the last price `p` reached. */
  due(p: number, out: BookOrder[]): void {
    if (p <= this.sellStop) {
      this.sellStop = -Infinity;
      this.sells = this.sells.filter((e) => {
        if (p <= e.o.stopPrice!) return !out.push(e.o);
        if (e.o.stopPrice! > this.sellStop) this.sellStop = e.o.stopPrice!;
        return true;
      });
    }
    if (p >= this.buyStop) {
      this.buyStop = Infinity;
      this.buys = this.buys.filter((e) => {
        if (p >= e.o.stopPrice!) return !out.push(e.o);
        if (e.o.stopPrice! < this.buyStop) this.buyStop = e.o.stopPrice!;
        return true;
      });
    }
  }

  /** Whether the last price `p` reached any trigger (`due` would take something out, or make its bounds exact). */
  reached(p: number): boolean {
    return p <= this.sellStop || p >= this.buyStop;
  }

  /** Adds to `into` the stops whose water mark moved since the last call (their rows are written). */
  takeMoved(into: BookOrder[]): void {
    if (!this.moved.length) return;
    for (const t of this.moved) into.push(t);
    this.moved = [];
    this.mark++;
  }

  private move(e: Entry, p: number): void {
    const t = e.o;
    t.hwm = p;
    t.stopPrice = trailStop(t);
    this.bound(t);
    if (e.mark !== this.mark) {
      e.mark = this.mark;
      this.moved.push(t);
    }
  }

  private bound(t: BookOrder): void {
    if (t.side === 'sell') {
      if (t.stopPrice! > this.sellStop) this.sellStop = t.stopPrice!;
    } else if (t.stopPrice! < this.buyStop) this.buyStop = t.stopPrice!;
  }

  /** Where `t` is in its side's list (found by its water mark), or -1. */
  private indexOf(list: Entry[], t: BookOrder): number {
    const sell = t.side === 'sell';
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = list[mid]!.o.hwm!;
      if (sell ? m > t.hwm! : m < t.hwm!) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < list.length && list[i]!.o.hwm === t.hwm; i++) if (list[i]!.o === t) return i;
    return -1;
  }
}

/**
 * Sorts `list` from `start` on by sequence number, oldest first: the stops one trade moved are
 * changed in the order they were placed, as when every trade walked them all in that order.
 */
function bySeq(list: BookOrder[], start: number): void {
  let up = true;
  let down = true;
  for (let i = start + 1; i < list.length && (up || down); i++) {
    if (list[i - 1]!.seq < list[i]!.seq) down = false;
    else up = false;
  }
  if (up) return;
  // Walked from the end of a side's list, the stops come newest first: most often just reversed.
  if (down) {
    for (let i = start, j = list.length - 1; i < j; i++, j--) {
      const t = list[i]!;
      list[i] = list[j]!;
      list[j] = t;
    }
    return;
  }
  const part = list.slice(start).sort((a, b) => a.seq - b.seq);
  for (let i = 0; i < part.length; i++) list[start + i] = part[i]!;
}
