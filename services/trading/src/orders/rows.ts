import type { Actor } from '@svc/kit';

/** How the store reads rows (store.ts, group-write.ts). */

/** An order as stored (decimals as strings, as PostgreSQL's numeric gives them). */
export interface OrderRow {
  id: string;
  account_id: string;
  venue: string;
  symbol: string;
  client_order_id: string;
  request_hash: string;
  side: 'buy' | 'sell';
  type: 'market' | 'limit' | 'stop' | 'stop_limit' | 'trailing_stop';
  time_in_force: 'day' | 'gtc' | 'ioc' | 'fok' | 'opg' | 'cls';
  qty: string;
  /** A notional order's amount of the quote asset (its qty is what that bought); null for a quantity order. */
  notional: string | null;
  price: string | null;
  stop_price: string | null;
  filled_qty: string;
  filled_notional: string;
  fees: string;
  hold_units: string;
  status: string;
  reason: string | null;
  triggered: boolean;
  seq: number;
  placed_by: Actor;
  external_id: string | null;
  created_at: Date;
  updated_at: Date;
  /** `simple`, `bracket`, `oco` or `oto` (docs/trading.md, "Linked orders"). */
  order_class: string;
  /** A leg's entry (an OCO's stop leg: its take-profit leg). */
  parent_id: string | null;
  /** An OCO leg's other leg. */
  sibling_id: string | null;
  /** A trailing stop's distance: a price, or a percent; its high (low) water mark. */
  trail_price: string | null;
  trail_percent: string | null;
  hwm: string | null;
}

export interface FillRow {
  id: string;
  account_id: string;
  order_id: string;
  venue: string;
  symbol: string;
  side: string;
  price: string;
  qty: string;
  notional: string;
  fee: string;
  liquidity: 'maker' | 'taker';
  seq: number;
  epoch: number;
  created_at: Date;
}

export const ORDER_COLUMNS = `id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty::text, price::text,
  stop_price::text, filled_qty::text, filled_notional::text, fees::text, hold_units::text, status, reason, triggered, seq, placed_by,
  external_id, created_at, updated_at, notional::text, order_class, parent_id, sibling_id, trail_price::text, trail_percent::text, hwm::text`;

export const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
export const orderRow = (r: OrderRow): OrderRow => ({
  ...r,
  placed_by: json(r.placed_by),
  seq: Number(r.seq),
  created_at: new Date(r.created_at),
  updated_at: new Date(r.updated_at),
});
