import type { Actor, Queryable } from '@svc/kit';

export const SCHEMA = 'trading';

/** An order as stored (decimals as strings, as PostgreSQL's numeric gives them). */
export interface OrderRow {
  id: string;
  account_id: string;
  venue: string;
  symbol: string;
  client_order_id: string;
  request_hash: string;
  side: 'buy' | 'sell';
  type: 'market' | 'limit' | 'stop' | 'stop_limit';
  time_in_force: 'day' | 'gtc' | 'ioc' | 'fok';
  qty: string;
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

const ORDER_COLUMNS = `id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty::text, price::text,
  stop_price::text, filled_qty::text, filled_notional::text, fees::text, hold_units::text, status, reason, triggered, seq, placed_by,
  external_id, created_at, updated_at`;

const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const orderRow = (r: OrderRow): OrderRow => ({ ...r, placed_by: json(r.placed_by), seq: Number(r.seq) });

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
         stop_price, filled_qty, filled_notional, fees, hold_units, status, reason, triggered, seq, placed_by, external_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21::jsonb, $22)
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
  async syncExternal(q: Queryable, id: string, s: { status: string; filled_qty: string; filled_notional: string; reason: string | null }) {
    const rows = await q.query<OrderRow>(
      `UPDATE trading.orders SET status = $2, filled_qty = $3, filled_notional = $4, reason = $5, updated_at = now()
       WHERE id = $1 RETURNING ${ORDER_COLUMNS}`,
      [id, s.status, s.filled_qty, s.filled_notional, s.reason],
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

  /** The open orders of a book (resting and pending stops), in time priority. */
  async openOrders(q: Queryable, venue: string, symbol: string): Promise<OrderRow[]> {
    const rows = await q.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM trading.orders WHERE venue = $1 AND symbol = $2 AND status IN ('new', 'partially_filled') ORDER BY seq, id`,
      [venue, symbol],
    );
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
    if (f.status === 'open') where.push(`status IN ('new', 'partially_filled')`);
    else if (f.status === 'closed') where.push(`status NOT IN ('new', 'partially_filled')`);
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

  async insertFill(q: Queryable, f: Omit<FillRow, 'created_at'>): Promise<void> {
    await q.query(
      `INSERT INTO trading.fills (id, account_id, order_id, venue, symbol, side, price, qty, notional, fee, liquidity, seq, epoch)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [f.id, f.account_id, f.order_id, f.venue, f.symbol, f.side, f.price, f.qty, f.notional, f.fee, f.liquidity, f.seq, f.epoch],
    );
  }

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

  /** Takes the book's row lock (the one writer of the book) and answers its row. */
  async lockBook(q: Queryable, venue: string, symbol: string): Promise<BookRow> {
    const lock = () =>
      q.query<BookRow>(`SELECT venue, symbol, version, state, created_at FROM trading.books WHERE venue = $1 AND symbol = $2 FOR UPDATE`, [
        venue,
        symbol,
      ]);
    let rows = await lock();
    if (!rows.length) {
      await q.query(`INSERT INTO trading.books (venue, symbol) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [venue, symbol]);
      rows = await lock();
    }
    const r = rows[0]!;
    return { ...r, version: Number(r.version), state: json(r.state) };
  }

  async readBook(q: Queryable, venue: string, symbol: string): Promise<BookRow | null> {
    const rows = await q.query<BookRow>(`SELECT venue, symbol, version, state, created_at FROM trading.books WHERE venue = $1 AND symbol = $2`, [
      venue,
      symbol,
    ]);
    const r = rows[0];
    return r ? { ...r, version: Number(r.version), state: json(r.state) } : null;
  }

  async saveBook(q: Queryable, venue: string, symbol: string, version: number, state: unknown): Promise<void> {
    await q.query(`UPDATE trading.books SET version = $3, state = $4::jsonb, updated_at = now() WHERE venue = $1 AND symbol = $2`, [
      venue,
      symbol,
      version,
      JSON.stringify(state),
    ]);
  }

  // Group commits: one statement per kind of write, whatever the number of orders -------------

  /** Inserts orders with one statement; answers them as stored, in the order given. */
  async insertOrders(q: Queryable, os: Array<Omit<OrderRow, 'created_at' | 'updated_at'>>): Promise<OrderRow[]> {
    if (!os.length) return [];
    const col = <K extends keyof (typeof os)[number]>(k: K) => os.map((o) => o[k]);
    const rows = await q.query<OrderRow>(
      `INSERT INTO trading.orders (id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty, price,
         stop_price, filled_qty, filled_notional, fees, hold_units, status, reason, triggered, seq, placed_by, external_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
         $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[], $15::numeric[], $16::numeric[], $17::text[],
         $18::text[], $19::boolean[], $20::bigint[], $21::jsonb[], $22::text[])
       RETURNING ${ORDER_COLUMNS}`,
      [
        col('id'),
        col('account_id'),
        col('venue'),
        col('symbol'),
        col('client_order_id'),
        col('request_hash'),
        col('side'),
        col('type'),
        col('time_in_force'),
        col('qty'),
        col('price'),
        col('stop_price'),
        col('filled_qty'),
        col('filled_notional'),
        col('fees'),
        col('hold_units'),
        col('status'),
        col('reason'),
        col('triggered'),
        col('seq'),
        os.map((o) => JSON.stringify(o.placed_by)),
        col('external_id'),
      ],
    );
    const byId = new Map(rows.map((r) => [r.id, orderRow(r)]));
    return os.map((o) => byId.get(o.id)!);
  }

  /** Writes several orders' changed state with one statement (`feesAdded` adds to each one's fees). */
  async updateOrders(
    q: Queryable,
    os: Array<
      Pick<OrderRow, 'id' | 'filled_qty' | 'filled_notional' | 'hold_units' | 'status' | 'reason' | 'triggered' | 'seq'> & { feesAdded: string }
    >,
  ): Promise<OrderRow[]> {
    if (!os.length) return [];
    const rows = await q.query<OrderRow>(
      `UPDATE trading.orders o SET filled_qty = u.u_filled, filled_notional = u.u_notional, hold_units = u.u_hold, status = u.u_status,
         reason = u.u_reason, triggered = u.u_triggered, seq = u.u_seq, fees = o.fees + u.u_fees, updated_at = now()
       FROM unnest($1::text[], $2::numeric[], $3::numeric[], $4::numeric[], $5::text[], $6::text[], $7::boolean[], $8::bigint[], $9::numeric[])
         AS u(u_id, u_filled, u_notional, u_hold, u_status, u_reason, u_triggered, u_seq, u_fees)
       WHERE o.id = u.u_id
       RETURNING ${ORDER_COLUMNS.replace(/(^|,\s*)(\w+)/g, '$1o.$2')}`,
      [
        os.map((o) => o.id),
        os.map((o) => o.filled_qty),
        os.map((o) => o.filled_notional),
        os.map((o) => o.hold_units),
        os.map((o) => o.status),
        os.map((o) => o.reason),
        os.map((o) => o.triggered),
        os.map((o) => o.seq),
        os.map((o) => o.feesAdded),
      ],
    );
    return rows.map(orderRow);
  }

  /** Inserts fills with one statement. */
  async insertFills(q: Queryable, fs: Array<Omit<FillRow, 'created_at'>>): Promise<void> {
    if (!fs.length) return;
    const col = <K extends keyof (typeof fs)[number]>(k: K) => fs.map((f) => f[k]);
    await q.query(
      `INSERT INTO trading.fills (id, account_id, order_id, venue, symbol, side, price, qty, notional, fee, liquidity, seq, epoch)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::numeric[], $8::numeric[],
         $9::numeric[], $10::numeric[], $11::text[], $12::bigint[], $13::integer[])`,
      [
        col('id'),
        col('account_id'),
        col('order_id'),
        col('venue'),
        col('symbol'),
        col('side'),
        col('price'),
        col('qty'),
        col('notional'),
        col('fee'),
        col('liquidity'),
        col('seq'),
        col('epoch'),
      ],
    );
  }

  /** The orders some (account, client order id) pairs already name at a venue. */
  async ordersByClientIds(q: Queryable, venue: string, keys: Array<{ accountId: string; clientOrderId: string }>): Promise<OrderRow[]> {
    if (!keys.length) return [];
    const rows = await q.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM trading.orders
       WHERE venue = $1 AND (account_id, client_order_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
      [venue, keys.map((k) => k.accountId), keys.map((k) => k.clientOrderId)],
    );
    return rows.map(orderRow);
  }

  /**
   * Opens the paper accounts on first use (their starting cash) and takes a share lock on each, in
   * account order; answers their epochs. One statement when they all exist.
   */
  async paperAccounts(q: Queryable, accountIds: string[], venue: string, cash: { asset: string; units: string }): Promise<Map<string, number>> {
    const ids = [...new Set(accountIds)].sort();
    const lock = () =>
      q.query<{ account_id: string; epoch: number }>(
        `SELECT account_id, epoch FROM trading.paper_accounts WHERE venue = $1 AND account_id = ANY($2) ORDER BY account_id FOR SHARE`,
        [venue, ids],
      );
    let rows = await lock();
    if (rows.length < ids.length) {
      await q.query(
        `WITH c AS (INSERT INTO trading.paper_accounts (account_id, venue, starting_cash) SELECT a, $2, $3 FROM unnest($1::text[]) a
           ON CONFLICT DO NOTHING RETURNING account_id)
         INSERT INTO trading.balances (account_id, venue, asset, total) SELECT account_id, $2, $4, $3 FROM c`,
        [ids, venue, cash.units, cash.asset],
      );
      rows = await lock();
    }
    return new Map(rows.map((r) => [r.account_id, Number(r.epoch)]));
  }

  /** The balances of some accounts at a venue and their epochs, with one statement. */
  async ledgerRows(q: Queryable, accountIds: string[], venue: string): Promise<{ balances: BalanceRow[]; epochs: Map<string, number> }> {
    const rows = await q.query<{ account_id: string; epoch: number; asset: string | null; total: string | null; held: string | null }>(
      `SELECT a.account_id, a.epoch, b.asset, b.total::text, b.held::text FROM trading.paper_accounts a
       LEFT JOIN trading.balances b ON b.account_id = a.account_id AND b.venue = a.venue
       WHERE a.venue = $2 AND a.account_id = ANY($1)`,
      [accountIds, venue],
    );
    const balances: BalanceRow[] = [];
    const epochs = new Map<string, number>();
    for (const r of rows) {
      epochs.set(r.account_id, Number(r.epoch));
      if (r.asset !== null) balances.push({ account_id: r.account_id, venue, asset: r.asset, total: r.total!, held: r.held! });
    }
    return { balances, epochs };
  }

  /**
   * Adds to balances with one UPDATE (rows in key order, so that writers rarely deadlock; a
   * deadlock retries), then inserts the rows that did not exist.
   */
  async addBalancesAtOnce(
    q: Queryable,
    venue: string,
    deltas: Array<{ accountId: string; asset: string; total: bigint; held: bigint }>,
  ): Promise<void> {
    const ds = deltas
      .filter((d) => d.total !== 0n || d.held !== 0n)
      .sort((a, b) => (a.accountId + '\u0000' + a.asset < b.accountId + '\u0000' + b.asset ? -1 : 1));
    if (!ds.length) return;
    const updated = await q.query<{ account_id: string; asset: string }>(
      `UPDATE trading.balances b SET total = b.total + d.d_total, held = b.held + d.d_held
       FROM (SELECT * FROM unnest($2::text[], $3::text[], $4::numeric[], $5::numeric[]) WITH ORDINALITY AS x(d_account, d_asset, d_total, d_held, n) ORDER BY n) d
       WHERE b.account_id = d.d_account AND b.venue = $1 AND b.asset = d.d_asset
       RETURNING b.account_id, b.asset`,
      [venue, ds.map((d) => d.accountId), ds.map((d) => d.asset), ds.map((d) => d.total.toString()), ds.map((d) => d.held.toString())],
    );
    if (updated.length === ds.length) return;
    const done = new Set(updated.map((r) => `${r.account_id}\u0000${r.asset}`));
    const missing = ds.filter((d) => !done.has(`${d.accountId}\u0000${d.asset}`));
    await q.query(
      `INSERT INTO trading.balances (account_id, venue, asset, total, held) SELECT a, $1, s, t, h FROM unnest($2::text[], $3::text[], $4::numeric[], $5::numeric[]) AS x(a, s, t, h)`,
      [
        venue,
        missing.map((d) => d.accountId),
        missing.map((d) => d.asset),
        missing.map((d) => d.total.toString()),
        missing.map((d) => d.held.toString()),
      ],
    );
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

  /** Adds to balances (rows created as needed), in key order so that writers never deadlock. */
  async addBalances(q: Queryable, venue: string, deltas: Array<{ accountId: string; asset: string; total: bigint; held: bigint }>): Promise<void> {
    const sorted = [...deltas].sort((a, b) => (a.accountId + '\u0000' + a.asset < b.accountId + '\u0000' + b.asset ? -1 : 1));
    for (const d of sorted) {
      if (d.total === 0n && d.held === 0n) continue;
      // UPDATE first: an INSERT … ON CONFLICT checks the CHECK on the proposed row (a negative delta) before it sees the conflict.
      const updated = await q.query(
        `UPDATE trading.balances SET total = total + $4::numeric, held = held + $5::numeric WHERE account_id = $1 AND venue = $2 AND asset = $3 RETURNING asset`,
        [d.accountId, venue, d.asset, d.total.toString(), d.held.toString()],
      );
      if (updated.length) continue;
      await q.query(`INSERT INTO trading.balances (account_id, venue, asset, total, held) VALUES ($1, $2, $3, $4, $5)`, [
        d.accountId,
        venue,
        d.asset,
        d.total.toString(),
        d.held.toString(),
      ]);
    }
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
