import type { BookOrder, OrderStatus, OrderType, TimeInForce } from './types.js';

/** An order as the engine (book.ts) takes it: the order types' rules, its shape, a new one, a trailing stop's trigger. */

export const ORDER_TYPES: readonly OrderType[] = ['market', 'limit', 'stop', 'stop_limit', 'trailing_stop'];
export const TIMES_IN_FORCE: readonly TimeInForce[] = ['day', 'gtc', 'ioc', 'fok', 'opg', 'cls'];
/** Orders for a session's opening (`opg`) or closing (`cls`) auction: they wait outside the book until it. */
export const isAuction = (o: Pick<BookOrder, 'tif'>) => o.tif === 'opg' || o.tif === 'cls';
export const OPEN_STATUSES: readonly OrderStatus[] = ['new', 'partially_filled'];

export const isStopType = (o: Pick<BookOrder, 'type'>) => o.type === 'stop' || o.type === 'stop_limit' || o.type === 'trailing_stop';

/** Not closed yet (OPEN_STATUSES): resting, waiting for its trigger or its auction, or partly filled; a held leg is not open until it is activated. */
export const isOpen = (o: BookOrder) => o.status === 'new' || o.status === 'partially_filled';
export const remaining = (o: BookOrder) => o.qty - o.filled;

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
