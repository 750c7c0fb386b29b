import type { Actor, Queryable } from '@svc/kit';

import type { OrderType, Side, TimeInForce } from '../engine/types.js';
import type { Spec } from '../orders/symbols.js';

/** What placing an order on the paper venue takes (venue.ts; links.ts makes a linked order's legs from it). */

export interface PlaceInput {
  accountId: string;
  actor: Actor;
  spec: Spec;
  clientOrderId: string;
  requestHash: string;
  side: Side;
  type: OrderType;
  tif: TimeInForce;
  /** Lots; for a notional order, found under the book's lock as the book stands (0 here). */
  qty: number;
  /** A notional order's amount (docs/trading.md, "Notional orders"): tick·lots, quote units and as given. */
  notional?: { tickLots: number; units: bigint; text: string };
  price?: number;
  stopPrice?: number;
  /** A trailing stop's distance: ticks, or hundredths of a percent. */
  trailTicks?: number;
  trailBps?: number;
  /**
   * Linked orders (docs/trading.md, "Linked orders"): a bracket's or OTO's exit legs (held until the
   * entry fills), or an OCO's stop leg (this order is its take-profit leg).
   */
  orderClass?: 'bracket' | 'oco' | 'oto';
  legs?: Array<{ role: 'takeProfit' | 'stopLoss'; type: OrderType; price?: number; stopPrice?: number; trailTicks?: number; trailBps?: number }>;
  /**
   * Checks an agent's limits for an order (or, with `leg`, one of its legs) of this notional (quote
   * units) inside the transaction; a leg is checked, not counted into the day's usage.
   */
  limits?: (q: Queryable, notionalUnits: bigint, leg?: string) => Promise<void>;
}
