import type { Queryable } from '@svc/kit';

import { type GroupWrite, writeGroup } from './group-write.js';
import { type FillRow, json, ORDER_COLUMNS, type OrderRow, orderRow } from './rows.js';

export type { GroupWrite } from './group-write.js';
export type { FillRow, OrderRow } from './rows.js';

export const SCHEMA = 'trading';

export interface BalanceRow {
  account_id: string;
  venue: string;
  asset: string;
  total: string;
  held: string;
}

export interface BookRow {
  venue: string;
  symbol: string;
  version: number;
  state: unknown;
  created_at: Date;
}

interface LedgerJson {
  account_id: string;
  epoch: number;
  asset: string | null;
  total: string | null;
  held: string | null;
}

/** One of an account's order updates as stored, with its order's row (none for a reset). */
export interface EventRow {
  account_id: string;
  seq: number;
  id: string;
  type: string;
  venue: string;
  symbol: string | null;
  order_id: string | null;
  data: Record<string, unknown>;
  /** Units of 10⁻⁹ as integers in text: `[{asset, total, held}]`; null at an external venue. */
  balances: Array<{ asset: string; total: string; held: string }> | null;
  created_at: Date;
  order: OrderRow | null;
}

export interface OrderFilter {
  venue?: string;
  symbol?: string;
  side?: string;
  /** `open`, `closed`, or one status. */
  status?: string;
  after?: string;
  before?: string;
  /** The last id of the previous page (ids sort by creation time). */
  cursor?: string;
}

export class TradingStore {
  // Orders -------------------------------------------------------------------------------------

  async insertOrder(q: Queryable, o: Omit<OrderRow, 'created_at' | 'updated_at'>): Promise<OrderRow> {
    const rows = await q.query<OrderRow>(
      `INSERT INTO trading.orders (id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty, price,
         stop_price, filled_qty, filled_notional, fees, hold_units, status, reason, triggered, seq, placed_by, external_id, notional)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21::jsonb, $22, $23)
       RETURNING ${ORDER_COLUMNS}`,
      [
        o.id,
        o.account_id,
        o.venue,
        o.symbol,
        o.client_order_id,
        o.request_hash,
        o.side,
        o.type,
        o.time_in_force,
        o.qty,
        o.price,
        o.stop_price,
        o.filled_qty,
        o.filled_notional,
        o.fees,
        o.hold_units,
        o.status,
        o.reason,
        o.triggered,
        o.seq,
        JSON.stringify(o.placed_by),
        o.external_id,
        o.notional,
      ],
    );
    return orderRow(rows[0]!);
  }

  /** Writes an order's changed state; `feesAdded` adds to its fees. */
  async updateOrder(
    q: Queryable,
    o: Pick<OrderRow, 'id' | 'filled_qty' | 'filled_notional' | 'hold_units' | 'status' | 'reason' | 'triggered' | 'seq'>,
    feesAdded: string,
  ): Promise<OrderRow> {
    const rows = await q.query<OrderRow>(
      `UPDATE trading.orders SET filled_qty = $2, filled_notional = $3, hold_units = $4, status = $5, reason = $6, triggered = $7, seq = $8,
         fees = fees + $9::numeric, updated_at = now()
       WHERE id = $1 RETURNING ${ORDER_COLUMNS}`,
      [o.id, o.filled_qty, o.filled_notional, o.hold_units, o.status, o.reason, o.triggered, o.seq, feesAdded],
    );
    return orderRow(rows[0]!);
  }

  /** Updates an external venue's order from what the venue says. */
  async syncExternal(
    q: Queryable,
    id: string,
    s: { status: string; qty: string; filled_qty: string; filled_notional: string; reason: string | null },
  ) {
    const rows = await q.query<OrderRow>(
      `UPDATE trading.orders SET status = $2, filled_qty = $3, filled_notional = $4, reason = $5, qty = $6, updated_at = now()
       WHERE id = $1 RETURNING ${ORDER_COLUMNS}`,
      [id, s.status, s.filled_qty, s.filled_notional, s.reason, s.qty],
    );
    return orderRow(rows[0]!);
  }

  async order(q: Queryable, accountId: string, id: string): Promise<OrderRow | null> {
    const rows = await q.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] ? orderRow(rows[0]) : null;
  }

  async orderByClientId(q: Queryable, accountId: string, venue: string, clientOrderId: string): Promise<OrderRow | null> {
    const rows = await q.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE account_id = $1 AND venue = $2 AND client_order_id = $3`,
      [accountId, venue, clientOrderId],
    );
    return rows[0] ? orderRow(rows[0]) : null;
  }

  /** The open orders of a book (resting and pending stops) in time priority, then the held legs of its entries. */
  async openOrders(q: Queryable, venue: string, symbol: string): Promise<OrderRow[]> {
    const rows = await q.query<OrderRow>(
      `(SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE venue = $1 AND symbol = $2 AND status IN ('new', 'partially_filled') ORDER BY seq, id)
       UNION ALL (SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE venue = $1 AND symbol = $2 AND status = 'held' ORDER BY id)`,
      [venue, symbol],
    );
    return rows.map(orderRow);
  }

  /** The legs placed with an order (a bracket's, an OTO's, an OCO's other leg), oldest first. */
  async legs(q: Queryable, accountId: string, parentId: string): Promise<OrderRow[]> {
    const rows = await q.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE parent_id = $1 AND account_id = $2 ORDER BY id`, [
      parentId,
      accountId,
    ]);
    return rows.map(orderRow);
  }

  /** The symbols where an account has open orders at a venue. */
  async openSymbols(q: Queryable, accountId: string, venue: string): Promise<string[]> {
    const rows = await q.query<{ symbol: string }>(
      `SELECT DISTINCT symbol FROM trading.orders WHERE account_id = $1 AND venue = $2 AND status IN ('new', 'partially_filled') ORDER BY symbol`,
      [accountId, venue],
    );
    return rows.map((r) => r.symbol);
  }

  /** An account's orders, newest first, `limit + 1` rows (the extra one says there is more). */
  async listOrders(q: Queryable, accountId: string, f: OrderFilter, limit: number): Promise<OrderRow[]> {
    const where = ['account_id = $1'];
    const params: unknown[] = [accountId];
    const add = (sql: string, v: unknown) => {
      params.push(v);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.venue) add('venue = ?', f.venue);
    if (f.symbol) add('symbol = ?', f.symbol);
    if (f.side) add('side = ?', f.side);
    if (f.status === 'open') where.push(`status IN ('new', 'partially_filled', 'held')`);
    else if (f.status === 'closed') where.push(`status NOT IN ('new', 'partially_filled', 'held')`);
    else if (f.status) add('status = ?', f.status);
    if (f.after) add('created_at >= ?', f.after);
    if (f.before) add('created_at < ?', f.before);
    if (f.cursor) add('id < ?', f.cursor);
    params.push(limit + 1);
    const rows = await q.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(orderRow);
  }

  // Fills --------------------------------------------------------------------------------------

  async listFills(
    q: Queryable,
    accountId: string,
    f: { venue?: string; symbol?: string; orderId?: string; cursor?: string },
    limit: number,
  ): Promise<FillRow[]> {
    const where = ['account_id = $1'];
    const params: unknown[] = [accountId];
    const add = (sql: string, v: unknown) => {
      params.push(v);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.venue) add('venue = ?', f.venue);
    if (f.symbol) add('symbol = ?', f.symbol);
    if (f.orderId) add('order_id = ?', f.orderId);
    if (f.cursor) add('id < ?', f.cursor);
    params.push(limit + 1);
    const rows = await q.query<FillRow>(
      `SELECT id, account_id, order_id, venue, symbol, side, price::text, qty::text, notional::text, fee::text, liquidity, seq, epoch, created_at
       FROM trading.fills WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  }

  // Books --------------------------------------------------------------------------------------

  /**
   * Takes the book's row lock (the one writer of the book) and answers its row. With `accounts`,
   * first opens them on first use (their starting cash) and takes a share lock on each, in account
   * order, in the same statement (a reset holds its account's lock for update).
   */
  async lockBook(
    q: Queryable,
    venue: string,
    symbol: string,
    accounts?: { ids: string[]; cash: { asset: string; units: string } },
  ): Promise<BookRow> {
    const ids = [...new Set(accounts?.ids ?? [])].sort();
    const lock = () =>
      q.query<BookRow & { accounts: number }>(
        `WITH a AS MATERIALIZED (SELECT account_id FROM trading.paper_accounts WHERE venue = $1 AND account_id = ANY($3) ORDER BY account_id FOR SHARE)
         SELECT b.venue, b.symbol, b.version, b.state, b.created_at, (SELECT count(*) FROM a)::int AS accounts
         FROM trading.books b WHERE b.venue = $1 AND b.symbol = $2 FOR UPDATE OF b`,
        [venue, symbol, ids],
      );
    let rows = await lock();
    if (!rows.length || Number(rows[0]!.accounts) < ids.length) {
      if (ids.length)
        await q.query(
          `WITH c AS (INSERT INTO trading.paper_accounts (account_id, venue, starting_cash) SELECT a, $2, $3 FROM unnest($1::text[]) a
             ON CONFLICT DO NOTHING RETURNING account_id)
           INSERT INTO trading.balances (account_id, venue, asset, total) SELECT account_id, $2, $4, $3 FROM c`,
          [ids, venue, accounts!.cash.units, accounts!.cash.asset],
        );
      await q.query(`INSERT INTO trading.books (venue, symbol) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [venue, symbol]);
      rows = await lock();
    }
    const r = rows[0]!;
    return { venue: r.venue, symbol: r.symbol, version: Number(r.version), state: json(r.state), created_at: r.created_at };
  }

  async readBook(q: Queryable, venue: string, symbol: string): Promise<BookRow | null> {
    const rows = await q.query<BookRow>(`SELECT venue, symbol, version, state, created_at FROM trading.books WHERE venue = $1 AND symbol = $2`, [
      venue,
      symbol,
    ]);
    const r = rows[0];
    return r ? { ...r, version: Number(r.version), state: json(r.state) } : null;
  }

  // Group commits: a few statements per transaction, whatever the number of orders ------------

  /**
   * What a group transaction reads once it holds the book's lock: the balances and epochs of the
   * accounts the book can touch, and the orders some (account, client order id) pairs already name.
   */
  async groupState(
    q: Queryable,
    venue: string,
    accountIds: string[],
    keys: Array<{ accountId: string; clientOrderId: string }>,
  ): Promise<{ balances: BalanceRow[]; epochs: Map<string, number>; existing: OrderRow[] }> {
    const rows = await q.query<{ ledger: LedgerJson[] | null; existing: OrderRow[] | null }>(
      `SELECT (SELECT json_agg(x) FROM (SELECT a.account_id, a.epoch, b.asset, b.total::text AS total, b.held::text AS held
                 FROM trading.paper_accounts a LEFT JOIN trading.balances b ON b.account_id = a.account_id AND b.venue = a.venue
                 WHERE a.venue = $1 AND a.account_id = ANY($2)) x) AS ledger,
              (SELECT json_agg(y) FROM (SELECT ${ORDER_COLUMNS} FROM trading.orders
                 WHERE venue = $1 AND (account_id, client_order_id) IN (SELECT * FROM unnest($3::text[], $4::text[]))) y) AS existing`,
      [venue, accountIds, keys.map((k) => k.accountId), keys.map((k) => k.clientOrderId)],
    );
    const balances: BalanceRow[] = [];
    const epochs = new Map<string, number>();
    for (const r of json<LedgerJson[] | null>(rows[0]!.ledger) ?? []) {
      epochs.set(r.account_id, Number(r.epoch));
      if (r.asset !== null) balances.push({ account_id: r.account_id, venue, asset: r.asset, total: r.total!, held: r.held! });
    }
    return { balances, epochs, existing: (json<OrderRow[] | null>(rows[0]!.existing) ?? []).map(orderRow) };
  }

  /** Writes what one book transaction changed with one statement (group-write.ts). */
  writeGroup(q: Queryable, w: GroupWrite) {
    return writeGroup(q, w);
  }

  // Order updates (docs/trading.md, "Order updates") --------------------------------------------

  /**
   * Appends one event to the account's sequence outside a book's write (a reset, an external
   * venue's order), in the caller's transaction; answers its seq.
   */
  async appendEvent(
    q: Queryable,
    e: {
      accountId: string;
      id: string;
      type: string;
      venue: string;
      symbol: string | null;
      orderId: string | null;
      data: unknown;
      balances: unknown;
    },
  ): Promise<number> {
    const rows = await q.query<{ seq: number }>(
      `WITH s AS (
         INSERT INTO trading.event_seqs AS s (account_id, last_seq) VALUES ($1, 1)
         ON CONFLICT (account_id) DO UPDATE SET last_seq = s.last_seq + 1 RETURNING last_seq)
       INSERT INTO trading.events (account_id, seq, id, type, venue, symbol, order_id, data, balances)
       SELECT $1, s.last_seq, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb FROM s RETURNING seq`,
      [e.accountId, e.id, e.type, e.venue, e.symbol, e.orderId, JSON.stringify(e.data), e.balances === null ? null : JSON.stringify(e.balances)],
    );
    return Number(rows[0]!.seq);
  }

  /** The account's events after `after`, oldest first, each with its order. */
  async events(q: Queryable, accountId: string, after: number, limit: number): Promise<EventRow[]> {
    const rows = await q.query<Omit<EventRow, 'order'> & { order: OrderRow | null }>(
      `SELECT e.account_id, e.seq, e.id, e.type, e.venue, e.symbol, e.order_id, e.data, e.balances, e.created_at,
         (SELECT row_to_json(o) FROM (SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE id = e.order_id) o) AS order
       FROM trading.events e WHERE e.account_id = $1 AND e.seq > $2 ORDER BY e.seq LIMIT $3`,
      [accountId, after, limit],
    );
    return rows.map((r) => ({
      ...r,
      seq: Number(r.seq),
      data: json(r.data),
      balances: json(r.balances),
      created_at: new Date(r.created_at),
      order: r.order ? orderRow(json(r.order)) : null,
    }));
  }

  /** The account's last seq (0 before its first event). */
  async lastEventSeq(q: Queryable, accountId: string): Promise<number> {
    const rows = await q.query<{ last_seq: number }>(`SELECT last_seq FROM trading.event_seqs WHERE account_id = $1`, [accountId]);
    return rows[0] ? Number(rows[0].last_seq) : 0;
  }

  // Paper accounts and balances ----------------------------------------------------------------

  /** Opens the paper account on first use (its starting cash) and takes a share lock on it. */
  async paperAccount(q: Queryable, accountId: string, venue: string, cash: { asset: string; units: string }, lock: 'share' | 'update') {
    const created = await q.query(
      `INSERT INTO trading.paper_accounts (account_id, venue, starting_cash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING epoch`,
      [accountId, venue, cash.units],
    );
    if (created.length) {
      await q.query(`INSERT INTO trading.balances (account_id, venue, asset, total) VALUES ($1, $2, $3, $4)`, [
        accountId,
        venue,
        cash.asset,
        cash.units,
      ]);
    }
    const rows = await q.query<{ epoch: number; starting_cash: string }>(
      `SELECT epoch, starting_cash::text FROM trading.paper_accounts WHERE account_id = $1 AND venue = $2 FOR ${lock === 'share' ? 'SHARE' : 'UPDATE'}`,
      [accountId, venue],
    );
    return rows[0]!;
  }

  async balances(q: Queryable, accountIds: string[], venue: string): Promise<BalanceRow[]> {
    return q.query<BalanceRow>(
      `SELECT account_id, venue, asset, total::text, held::text FROM trading.balances WHERE account_id = ANY($1) AND venue = $2 ORDER BY account_id, asset`,
      [accountIds, venue],
    );
  }

  /** Puts a paper account back to its starting cash (a new epoch). */
  async resetPaper(q: Queryable, accountId: string, venue: string, cash: { asset: string; units: string }): Promise<number> {
    await q.query(`DELETE FROM trading.balances WHERE account_id = $1 AND venue = $2`, [accountId, venue]);
    await q.query(`INSERT INTO trading.balances (account_id, venue, asset, total) VALUES ($1, $2, $3, $4)`, [
      accountId,
      venue,
      cash.asset,
      cash.units,
    ]);
    const rows = await q.query<{ epoch: number }>(
      `UPDATE trading.paper_accounts SET epoch = epoch + 1, starting_cash = $3, reset_at = now() WHERE account_id = $1 AND venue = $2 RETURNING epoch`,
      [accountId, venue, cash.units],
    );
    return rows[0]!.epoch;
  }
}
