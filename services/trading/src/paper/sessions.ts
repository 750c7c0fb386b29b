import type { BookOrder } from '../engine/book.js';
import type { Session } from './session.js';

/**
 * The paper venue's sessions (docs/trading.md, "Sessions"): the equities' trading day has an open
 * and a close, each with an auction where the orders for it (`opg`, `cls`) trade; crypto trades
 * around the clock and has none. Continuous trading is not stopped outside the session (the venue
 * is an extended-hours one). The schedule is a function of the wall clock, the same on every
 * replica: each UTC day, or — the clock tests drive, `SVC_TRADING_PAPER_SESSION_CYCLE_MS` — a
 * compressed day of that many milliseconds that opens at its start and closes at its middle.
 */

export interface SessionSettings {
  /** Minutes after midnight UTC of the open and the close (default 13:30 and 20:00: New York's regular session, without summer time). */
  openMinute: number;
  closeMinute: number;
  /** A compressed day (tests, development): its length in ms; 0 for real days. */
  cycleMs: number;
}

export interface Boundary {
  kind: 'opg' | 'cls';
  at: number;
}

const DAY = 86_400_000;

export class Sessions {
  constructor(readonly settings: SessionSettings) {}

  private get day(): number {
    return this.settings.cycleMs || DAY;
  }

  /** The open's and the close's offsets in a day. */
  private offsets(): { open: number; close: number } {
    if (this.settings.cycleMs) return { open: 0, close: Math.floor(this.settings.cycleMs / 2) };
    return { open: this.settings.openMinute * 60_000, close: this.settings.closeMinute * 60_000 };
  }

  /** The opens and closes in (from, to], oldest first. */
  between(from: number, to: number): Boundary[] {
    const out: Boundary[] = [];
    const { open, close } = this.offsets();
    const day = this.day;
    for (let start = Math.floor(from / day) * day; start <= to; start += day) {
      for (const [kind, off] of [
        ['opg', open],
        ['cls', close],
      ] as const) {
        const at = start + off;
        if (at > from && at <= to) out.push({ kind, at });
      }
      if (out.length > 8) return out.slice(-2); // a book unused for days: only the last open and close matter
    }
    return out.sort((a, b) => a.at - b.at);
  }

  /** Whether the session is open at `now`, and the next open and close. */
  clock(now: number): { isOpen: boolean; nextOpen: number; nextClose: number } {
    const { open, close } = this.offsets();
    const day = this.day;
    const start = Math.floor(now / day) * day;
    const next = (off: number) => (start + off > now ? start + off : start + day + off);
    const t = now - start;
    return { isOpen: open <= close ? t >= open && t < close : t >= open || t < close, nextOpen: next(open), nextClose: next(close) };
  }
}

/** An equity's opens and closes since its book was last used: their auctions, in order, against the book as it now stands. */
export function runAuctions(sessions: Sessions, s: Session, now: number, track: (o: BookOrder) => void): void {
  const entry = s.entry;
  if (!entry.spec.symbol.includes('/')) {
    for (const b of sessions.between(entry.sessionAt, now)) {
      const a = entry.book.auction(b.kind, s.ledger);
      for (const o of a.changed) track(o);
      s.timeline.step(a.changed, { activated: a.activated });
      if (a.changed.length) entry.moved = true;
    }
  }
  entry.sessionAt = Math.max(entry.sessionAt, now);
}
