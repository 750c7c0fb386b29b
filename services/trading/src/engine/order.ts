import type { BookOrder } from './types.js';

/** An order as the engine (book.ts) takes it: its shape, a new one, a trailing stop's trigger. */

/** A trailing stop's trigger price from its water mark (the distance rounded up to a whole tick). */
export function trailStop(o: Pick<BookOrder, 'side' | 'hwm' | 'trailTicks' | 'trailBps'>): number {
  const d = o.trailTicks ?? Math.max(1, Math.ceil((o.hwm! * o.trailBps!) / 10_000));
  return o.side === 'sell' ? o.hwm! - d : o.hwm! + d;
}

/** The engine's own guard: the service validates input first, so this only catches a bug. */
export function checkShape(o: BookOrder): void {
  const posInt = (n: number | undefined) => n !== undefined && Number.isSafeInteger(n) && n > 0;
  if (!posInt(o.qty)) throw new RangeError(`order ${o.id}: qty must be a positive integer of lots`);
  if ((o.type === 'limit' || o.type === 'stop_limit') && !posInt(o.price)) throw new RangeError(`order ${o.id}: a limit price is required`);
  if ((o.type === 'stop' || o.type === 'stop_limit') && !posInt(o.stopPrice)) throw new RangeError(`order ${o.id}: a stop price is required`);
  if (o.type === 'trailing_stop' && posInt(o.trailTicks) === posInt(o.trailBps))
    throw new RangeError(`order ${o.id}: a trailing stop needs one of a trail in ticks and in hundredths of a percent`);
  if (o.type === 'market' && o.price !== undefined) throw new RangeError(`order ${o.id}: a market order has no price`);
}

/** A fresh order in the shape the book takes (every field set, in one order: one hidden class). */
export function newBookOrder(
  o: Omit<BookOrder, 'filled' | 'notional' | 'status' | 'reason' | 'seq' | 'triggered' | 'hwm' | 'sibling' | 'legs' | 'parent'>,
): BookOrder {
  return {
    id: o.id,
    owner: o.owner,
    agent: o.agent,
    side: o.side,
    type: o.type,
    tif: o.tif,
    qty: o.qty,
    price: o.price,
    stopPrice: o.stopPrice,
    filled: 0,
    notional: 0,
    status: 'new',
    reason: null,
    seq: 0,
    triggered: false,
    trailTicks: o.trailTicks,
    trailBps: o.trailBps,
    hwm: undefined,
    sibling: undefined,
    legs: undefined,
    parent: undefined,
  };
}
