import type { OrderRow } from './store.js';

/** How the store reads rows (store.ts, group-write.ts). */

export const ORDER_COLUMNS = `id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty::text, price::text,
  stop_price::text, filled_qty::text, filled_notional::text, fees::text, hold_units::text, status, reason, triggered, seq, placed_by,
  external_id, created_at, updated_at, notional::text`;

export const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
export const orderRow = (r: OrderRow): OrderRow => ({
  ...r,
  placed_by: json(r.placed_by),
  seq: Number(r.seq),
  created_at: new Date(r.created_at),
  updated_at: new Date(r.updated_at),
});
