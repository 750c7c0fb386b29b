import type { Queryable } from '@svc/kit';

import type { FillRow } from '../orders/store.js';

/** SQL of the market data and portfolio views (docs/trading.md): reads only. */

/** One trade of a paper book: the fills of one match, with the side that took liquidity. */
export interface TradeRow {
  symbol: string;
  seq: number;
  price: string;
  qty: string;
  notional: string;
  taker_side: 'buy' | 'sell';
  at: Date;
}

export interface ActivityRow {
  id: string;
  kind: 'fill' | 'reset';
  at: Date;
  symbol: string | null;
  side: string | null;
  qty: string | null;
  price: string | null;
  cash_delta: string;
  fee: string;
  order_id: string | null;
  epoch: number;
}

export interface DayOrders {
  day: string;
  placed: number;
  filled: number;
  cancelled: number;
  other: number;
}

export interface DayFills {
  day: string;
  fills: number;
  buy_notional: string;
  sell_notional: string;
  fees: string;
}

// The fills of one match (a book's seq) are one trade: both sides when two accounts traded, one
// row when the market maker was the other side (its side is then the row's opposite).
const TRADES = `SELECT symbol, seq, min(price)::text AS price, min(qty)::text AS qty, min(notional)::text AS notional,
    coalesce(max(side) FILTER (WHERE liquidity = 'taker'), CASE WHEN max(side) = 'buy' THEN 'sell' ELSE 'buy' END) AS taker_side,
    min(created_at) AS at
  FROM trading.fills`;

export interface OhlcRow {
  symbol: string;
  trades: number;
  volume: string;
  notional: string;
  open: string;
  high: string;
  low: string;
  close: string;
}

// Over TRADES' rows, whose amounts are text.
const OHLC = `count(*)::int AS trades, sum(qty::numeric)::text AS volume, sum(notional::numeric)::text AS notional,
  (array_agg(price ORDER BY seq))[1] AS open, max(price::numeric)::text AS high, min(price::numeric)::text AS low,
  (array_agg(price ORDER BY seq DESC))[1] AS close`;

const trade = (r: TradeRow): TradeRow => ({ ...r, seq: Number(r.seq), at: new Date(r.at) });

export class ViewsStore {
  /** A book's trades after a seq, oldest first (a live tape reads on from where it is). */
  async tapeAfter(q: Queryable, venue: string, symbol: string, afterSeq: number, limit: number): Promise<TradeRow[]> {
    const rows = await q.query<TradeRow>(`${TRADES} WHERE venue = $1 AND symbol = $2 AND seq > $3 GROUP BY symbol, seq ORDER BY seq LIMIT $4`, [
      venue,
      symbol,
      afterSeq,
      limit,
    ]);
    return rows.map(trade);
  }

  /** The seq of a book's latest trade (0 before any). */
  async lastTradeSeq(q: Queryable, venue: string, symbol: string): Promise<number> {
    const rows = await q.query<{ seq: string | null }>(`SELECT max(seq) AS seq FROM trading.fills WHERE venue = $1 AND symbol = $2`, [venue, symbol]);
    return Number(rows[0]?.seq ?? 0);
  }

  /** The newest trades of a book, before a seq. */
  async tape(q: Queryable, venue: string, symbol: string, beforeSeq: number | undefined, limit: number): Promise<TradeRow[]> {
    const rows = await q.query<TradeRow>(
      `${TRADES} WHERE venue = $1 AND symbol = $2 AND ($3::bigint IS NULL OR seq < $3) GROUP BY symbol, seq ORDER BY seq DESC LIMIT $4`,
      [venue, symbol, beforeSeq ?? null, limit],
    );
    return rows.map(trade);
  }

  /** Per symbol of a venue, the trades since a time: count, volume, notional, open, high, low, close. */
  async tradeStats(q: Queryable, venue: string, since: Date): Promise<OhlcRow[]> {
    const rows = await q.query<OhlcRow & { symbol: string }>(
      `WITH t AS (${TRADES} WHERE venue = $1 AND created_at >= $2 GROUP BY symbol, seq)
       SELECT symbol, ${OHLC} FROM t GROUP BY symbol`,
      [venue, since],
    );
    return rows.map((r) => ({ ...r, trades: Number(r.trades) }));
  }

  /** A book's trades in a time range as OHLCV candles of `ms` milliseconds, the newest `limit`, newest first. */
  async candles(
    q: Queryable,
    venue: string,
    symbol: string,
    ms: number,
    from: Date,
    to: Date,
    limit: number,
  ): Promise<Array<OhlcRow & { start: Date }>> {
    const rows = await q.query<OhlcRow & { bucket: string }>(
      `WITH t AS (${TRADES} WHERE venue = $1 AND symbol = $2 AND created_at >= $3 AND created_at < $4 GROUP BY symbol, seq)
       SELECT floor(extract(epoch FROM at) * 1000 / $5)::bigint AS bucket, ${OHLC} FROM t GROUP BY 1 ORDER BY 1 DESC LIMIT $6`,
      [venue, symbol, from, to, ms, limit],
    );
    return rows.map((r) => ({ ...r, trades: Number(r.trades), start: new Date(Number(r.bucket) * ms) }));
  }

  /** The account's fills at a venue in one epoch (since its last reset), oldest first. */
  async epochFills(q: Queryable, accountId: string, venue: string, epoch: number): Promise<FillRow[]> {
    const rows = await q.query<FillRow>(
      `SELECT id, account_id, order_id, venue, symbol, side, price::text, qty::text, notional::text, fee::text, liquidity, seq, epoch, created_at
       FROM trading.fills WHERE account_id = $1 AND venue = $2 AND epoch = $3 ORDER BY id`,
      [accountId, venue, epoch],
    );
    return rows.map((r) => ({ ...r, seq: Number(r.seq), created_at: new Date(r.created_at) }));
  }

  async paperAccount(q: Queryable, accountId: string, venue: string): Promise<{ epoch: number; starting_cash: string; reset_at: Date } | null> {
    const rows = await q.query<{ epoch: number; starting_cash: string; reset_at: Date }>(
      `SELECT epoch, starting_cash::text, reset_at FROM trading.paper_accounts WHERE account_id = $1 AND venue = $2`,
      [accountId, venue],
    );
    return rows[0] ? { ...rows[0], epoch: Number(rows[0].epoch), reset_at: new Date(rows[0].reset_at) } : null;
  }

  /** The account's fees, notional and fill count at a venue since a time. */
  async feeTotals(q: Queryable, accountId: string, venue: string, since: Date): Promise<{ fees: string; notional: string; fills: number }> {
    const rows = await q.query<{ fees: string; notional: string; fills: number }>(
      `SELECT coalesce(sum(fee), 0)::text AS fees, coalesce(sum(notional), 0)::text AS notional, count(*)::int AS fills
       FROM trading.fills WHERE account_id = $1 AND venue = $2 AND created_at >= $3`,
      [accountId, venue, since],
    );
    return rows[0]!;
  }

  /**
   * The account's activity at a venue, newest first: each fill with the cash it moved (a buy pays
   * notional and fee, a sell receives notional less the fee), and the last reset.
   */
  async activities(
    q: Queryable,
    accountId: string,
    venue: string,
    f: { kind?: string; cursor?: { at: Date; id: string } },
    limit: number,
  ): Promise<ActivityRow[]> {
    const rows = await q.query<ActivityRow>(
      `SELECT * FROM (
         SELECT id, 'fill' AS kind, created_at AS at, symbol, side, qty::text, price::text,
           (CASE WHEN side = 'buy' THEN -(notional + fee) ELSE notional - fee END)::text AS cash_delta, fee::text, order_id, epoch
         FROM trading.fills WHERE account_id = $1 AND venue = $2
         UNION ALL
         SELECT 'reset_' || account_id || '_' || epoch, 'reset', reset_at, NULL, NULL, NULL, NULL, '0', '0', NULL, epoch
         FROM trading.paper_accounts WHERE account_id = $1 AND venue = $2 AND epoch > 0
       ) a
       WHERE ($3::text IS NULL OR kind = $3) AND ($4::timestamptz IS NULL OR (at, id) < ($4, $5))
       ORDER BY at DESC, id DESC LIMIT $6`,
      [accountId, venue, f.kind ?? null, f.cursor?.at ?? null, f.cursor?.id ?? null, limit + 1],
    );
    return rows.map((r) => ({ ...r, at: new Date(r.at), epoch: Number(r.epoch) }));
  }

  /** Orders placed per UTC day, with how many of them ended filled, cancelled, or otherwise (rejected, expired). */
  async ordersByDay(q: Queryable, accountId: string, venue: string, from: Date, to: Date): Promise<DayOrders[]> {
    return q.query<DayOrders>(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS placed,
         count(*) FILTER (WHERE status = 'filled')::int AS filled, count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
         count(*) FILTER (WHERE status IN ('rejected', 'expired'))::int AS other
       FROM trading.orders WHERE account_id = $1 AND venue = $2 AND created_at >= $3 AND created_at < $4 GROUP BY 1 ORDER BY 1`,
      [accountId, venue, from, to],
    );
  }

  async fillsByDay(q: Queryable, accountId: string, venue: string, from: Date, to: Date): Promise<DayFills[]> {
    return q.query<DayFills>(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS fills,
         coalesce(sum(notional) FILTER (WHERE side = 'buy'), 0)::text AS buy_notional,
         coalesce(sum(notional) FILTER (WHERE side = 'sell'), 0)::text AS sell_notional, coalesce(sum(fee), 0)::text AS fees
       FROM trading.fills WHERE account_id = $1 AND venue = $2 AND created_at >= $3 AND created_at < $4 GROUP BY 1 ORDER BY 1`,
      [accountId, venue, from, to],
    );
  }

  /** One fill of the account. */
  async fill(q: Queryable, accountId: string, id: string): Promise<FillRow | null> {
    const rows = await q.query<FillRow>(
      `SELECT id, account_id, order_id, venue, symbol, side, price::text, qty::text, notional::text, fee::text, liquidity, seq, epoch, created_at
       FROM trading.fills WHERE account_id = $1 AND id = $2`,
      [accountId, id],
    );
    return rows[0] ? { ...rows[0], seq: Number(rows[0].seq), created_at: new Date(rows[0].created_at) } : null;
  }

  /** An order's fills, oldest first. */
  async orderFills(q: Queryable, accountId: string, orderId: string): Promise<FillRow[]> {
    const rows = await q.query<FillRow>(
      `SELECT id, account_id, order_id, venue, symbol, side, price::text, qty::text, notional::text, fee::text, liquidity, seq, epoch, created_at
       FROM trading.fills WHERE account_id = $1 AND order_id = $2 ORDER BY id`,
      [accountId, orderId],
    );
    return rows.map((r) => ({ ...r, seq: Number(r.seq), created_at: new Date(r.created_at) }));
  }
}
