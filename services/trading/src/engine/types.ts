/**
 * The engine's order as the book holds it, the words it is made of, and what a submission tells and
 * asks its caller (book.ts re-exports them).
 */

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

export interface Fill {
  /** The book's sequence number of this fill (unique within the book). */
  seq: number;
  taker: BookOrder;
  maker: BookOrder;
  /** The maker's price, in ticks. */
  price: number;
  qty: number;
}

/** The immediate part of an order if it were submitted now: lots and tick·lots it would fill. */
export interface Preview {
  qty: number;
  notional: number;
  /** The last price it would reach (the last trade price when the other side is empty): what the rest would cost at least. */
  worst: number;
}

export interface MatchHooks {
  /**
   * Asked before an order (incoming, or a stop whose trigger was reached) touches the book: a
   * reason to reject it (`insufficient_balance`), or null to let it in. The preview says what it
   * would fill right away.
   */
  admit?(order: BookOrder, preview: Preview): string | null;
  /** Told of each fill as it happens (the caller's ledger follows along). */
  fill?(fill: Fill): void;
  /** Told when the engine closes an order itself (a linked order's other leg): its hold can go at once. */
  closed?(order: BookOrder): void;
  /**
   * Asked when an order that waited goes on — a held leg going live, a stop whose trigger was
   * reached, an order at its auction — before it touches the book: a reason to reject it (an
   * agent's limits, checked again), or null. `notional` is what it stands for now, in tick·lots
   * (its limit price's; without one, what it would fill now when it trades now, else its trigger's).
   */
  release?(order: BookOrder, notional: () => number): string | null;
}

/** What one submission (or cancel, or expiry) changed: the fills, and every order whose state changed. */
export interface MatchResult {
  fills: Fill[];
  changed: BookOrder[];
  /** Held legs that became live (their entry closed having filled). */
  activated?: BookOrder[];
}
