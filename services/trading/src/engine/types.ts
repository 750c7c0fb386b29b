/** The engine's order as the book holds it, and the words it is made of (book.ts re-exports them). */

export type Side = 'buy' | 'sell';
export type OrderType = 'market' | 'limit' | 'stop' | 'stop_limit' | 'trailing_stop';
export type TimeInForce = 'day' | 'gtc' | 'ioc' | 'fok' | 'opg' | 'cls';
export type OrderStatus = 'new' | 'partially_filled' | 'filled' | 'cancelled' | 'rejected' | 'expired' | 'held';

export interface BookOrder {
  id: string;
  /** Who owns it (an account id; the market maker's own name for its quotes). */
  owner: string;
  /** The agent that placed it, when one did (its limits are asked again when the order leaves its wait: MatchHooks.release). */
  agent?: string;
  side: Side;
  type: OrderType;
  tif: TimeInForce;
  /** Quantity in lots (> 0). */
  qty: number;
  /** Limit price in ticks (limit, stop_limit). */
  price?: number;
  /** Trigger price in ticks (stop, stop_limit). */
  stopPrice?: number;
  /** Lots filled so far. */
  filled: number;
  /** Sum of price × qty of its fills, in tick·lots (average price = notional / filled). */
  notional: number;
  status: OrderStatus;
  /** Why it was rejected, cancelled or expired; null while it lives or when it filled. */
  reason: string | null;
  /** Time priority: the book's sequence number when it rested (or was accepted). */
  seq: number;
  /** A stop order whose trigger was reached (it is then a market or limit order). */
  triggered: boolean;
  /** A trailing stop's distance: in ticks, or in hundredths of a percent of its high (low) water mark. */
  trailTicks?: number;
  trailBps?: number;
  /** A trailing stop's high water mark (a sell's highest last price since it was placed; a buy's lowest), in ticks. */
  hwm?: number;
  /** An OCO leg's other leg: the first fill of either, a trigger of either, or either closing cancels the other. */
  sibling?: BookOrder;
  /** A bracket's or OTO's entry: its exit legs, `held` until it closes, then activated for what it filled. */
  legs?: BookOrder[];
  /** A held leg's entry. */
  parent?: BookOrder;
}
