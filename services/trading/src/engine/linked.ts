import { isOpen, isStopType } from './order.js';
import type { BookOrder, MatchHooks, MatchResult } from './types.js';

/**
 * A book's linked orders (book.ts; docs/trading.md, "Linked orders"): OCO legs, where the first
 * fill of one, its trigger or its close cancels the other in the same submission, and the held
 * exit legs of a bracket or OTO entry, which wait outside the book until the entry closes and are
 * then activated for what it filled. This keeps the held legs and what a change of one order sets
 * off among those linked to it; the book puts what goes live into play.
 */
export class LinkedOrders {
  /** Held legs of open bracket and OTO entries, by id. */
  private readonly held = new Map<string, BookOrder>();
  /** Orders closed by a link while a sweep ran: taken off their level or stop list after it. */
  private stale: BookOrder[] = [];
  /** Entries with held legs that closed: their legs are activated (or cancelled) next. */
  private closedEntries: BookOrder[] = [];

  /** `live` is the book's resting orders and pending stops, by id (a leg closed there is taken off later: `takeStale`). */
  constructor(private readonly live: Map<string, BookOrder>) {}

  /** A held leg by id. */
  get(id: string): BookOrder | undefined {
    // Most books hold no held legs: an id that is not live is not looked up again.
    return this.held.size ? this.held.get(id) : undefined;
  }

  heldLegs(): IterableIterator<BookOrder> {
    return this.held.values();
  }

  /** Registers an entry's held legs (they live outside the book until it closes). */
  hold(o: BookOrder): void {
    if (!o.legs) return;
    for (const l of o.legs) {
      l.parent = o;
      if (l.status === 'held') this.held.set(l.id, l);
    }
  }

  closeHeld(l: BookOrder, status: 'cancelled' | 'expired', reason: string, result: MatchResult): void {
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
  link(o: BookOrder, hooks: MatchHooks, result: MatchResult): void {
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

  /** The orders a link closed while they were still on the book (to take off their levels and stop lists), or null. */
  takeStale(): BookOrder[] | null {
    if (!this.stale.length) return null;
    const stale = this.stale;
    this.stale = [];
    return stale;
  }

  /** The next entry that closed with held legs, oldest first. */
  nextClosedEntry(): BookOrder | undefined {
    return this.closedEntries.length ? this.closedEntries.shift() : undefined;
  }

  /**
   * A closed entry's held legs: cancelled when it filled nothing (none then go live); otherwise
   * made live for the quantity it filled and answered, the stop leg first (a take-profit that
   * trades at once then cancels it). The book then asks each whether it may go on and enters it.
   */
  activate(entry: BookOrder, result: MatchResult): BookOrder[] {
    const all = entry.legs ?? [];
    entry.legs = [];
    if (entry.filled === 0) {
      const alike = entry.reason === 'cancelled_by_user' || entry.reason === 'day_ended';
      for (const l of all)
        this.closeHeld(l, alike && entry.status === 'expired' ? 'expired' : 'cancelled', alike ? entry.reason! : 'linked_order_closed', result);
      return [];
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
    return legs;
  }
}
