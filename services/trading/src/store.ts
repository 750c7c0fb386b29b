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
  external_id, created_at, updated_at, notional::text`;

const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const orderRow = (r: OrderRow): OrderRow => ({
  ...r,
  placed_by: json(r.placed_by),
  seq: Number(r.seq),
  created_at: new Date(r.created_at),
  updated_at: new Date(r.updated_at),
});

interface LedgerJson {
  account_id: string;
  epoch: number;
  asset: string | null;
  total: string | null;
  held: string | null;
}

type Delta = { accountId: string; asset: string; total: bigint; held: bigint };

/** What one book transaction writes (store.writeGroup). */
export interface GroupWrite {
  venue: string;
  symbol: string;
  inserts: Array<Omit<OrderRow, 'created_at' | 'updated_at'>>;
  /** Changed orders; each gets a `trading.order.<status>` event with `eventId`. */
  updates: Array<
    Pick<OrderRow, 'id' | 'filled_qty' | 'filled_notional' | 'hold_units' | 'status' | 'reason' | 'triggered' | 'seq'> & {
      feesAdded: string;
      eventId: string;
    }
  >;
  fills: Array<Omit<FillRow, 'created_at'>>;
  /** The other events, as outbox columns (kit's eventRows). */
  events: { ids: string[]; subjects: string[]; payloads: string[]; headers: string[] };
  /**
   * The accounts' order updates (paper/timeline.ts), in order: each numbered by its rank among its
   * account's in this write after the account's last seq (`seqAccounts` in account order, with how
   * many each has), with the account's balances of `base` and `quote` as this write leaves them
   * less what changed them after the event (`later…`).
   */
  orderEvents: {
    base: string;
    quote: string;
    accounts: string[];
    ranks: number[];
    ids: string[];
    types: string[];
    orderIds: string[];
    data: string[];
    laterBaseTotal: string[];
    laterBaseHeld: string[];
    laterQuoteTotal: string[];
    laterQuoteHeld: string[];
    seqAccounts: string[];
    seqCounts: number[];
  };
  occurredAt: string;
  /** The trace headers of the changed orders' events. */
  headers: string;
  /** Deltas to balance rows that exist (in key order) and to rows to create. */
  balanceUpdates: Delta[];
  balanceInserts: Delta[];
  version: number;
  state: unknown;
  /**
   * Written only if the book's row is still at `expectedVersion` and each of `accounts` still at
   * its epoch (share-locked, in account order, before the book): the optimistic group commit
   * (paper/venue.ts), one statement outside a transaction. Under the book's lock both hold.
   */
  guard: { expectedVersion: number; accounts: string[]; epochs: number[] };
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
  async syncExternal(q: Queryable, id: string, s: { status: string; qty: string; filled_qty: string; filled_notional: string; reason: string | null }) {
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

  /**
   * Writes what one book transaction changed with one statement: new orders, changed orders and
   * an event for each, fills, the other events, balance deltas (rows that exist updated in key
   * order, new ones inserted) and the book's state. Answers the new and changed orders as stored.
   * Everything depends on the book's row update (`k`), which happens only if `guard` holds (the
   * accounts share-locked and at their epochs, the book at the expected version): otherwise
   * nothing is written and `applied` is false.
   */
  async writeGroup(
    q: Queryable,
    w: GroupWrite,
  ): Promise<{ applied: boolean; inserted: OrderRow[]; updated: OrderRow[]; seqs: Array<{ accountId: string; seq: number }> }> {
    const ins = <K extends keyof GroupWrite['inserts'][number]>(k: K) => w.inserts.map((o) => o[k]);
    const upd = <K extends keyof GroupWrite['updates'][number]>(k: K) => w.updates.map((o) => o[k]);
    const fil = <K extends keyof GroupWrite['fills'][number]>(k: K) => w.fills.map((f) => f[k]);
    const bal = (ds: GroupWrite['balanceUpdates']) => [
      ds.map((d) => d.accountId),
      ds.map((d) => d.asset),
      ds.map((d) => d.total.toString()),
      ds.map((d) => d.held.toString()),
    ];
    const ev = w.orderEvents;
    const rows = await q.query<{
      applied: number;
      balances: number;
      inserted: OrderRow[] | null;
      updated: OrderRow[] | null;
      seqs: Array<{ account_id: string; last_seq: number }> | null;
    }>(
      `WITH g0 AS MATERIALIZED (
         SELECT account_id, epoch FROM trading.paper_accounts WHERE venue = $56 AND account_id = ANY($65::text[]) ORDER BY account_id FOR SHARE),
       g AS (
         SELECT count(*) = cardinality($65::text[]) AS ok FROM g0 JOIN unnest($65::text[], $66::integer[]) AS e(a, ep) ON g0.account_id = e.a AND g0.epoch = e.ep),
       k AS (
         UPDATE trading.books SET version = $61, state = $62::jsonb, updated_at = now()
         WHERE venue = $56 AND symbol = $63 AND version = $64 AND (SELECT ok FROM g)
         RETURNING 1),
       o AS (
         INSERT INTO trading.orders (id, account_id, venue, symbol, client_order_id, request_hash, side, type, time_in_force, qty, price,
           stop_price, filled_qty, filled_notional, fees, hold_units, status, reason, triggered, seq, placed_by, external_id, notional)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
           $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[], $15::numeric[], $16::numeric[], $17::text[],
           $18::text[], $19::boolean[], $20::bigint[], $21::jsonb[], $22::text[], $67::numeric[]) WHERE EXISTS (SELECT 1 FROM k)
         RETURNING ${ORDER_COLUMNS}),
       u AS (
         UPDATE trading.orders t SET filled_qty = x.u_filled, filled_notional = x.u_notional, hold_units = x.u_hold, status = x.u_status,
           reason = x.u_reason, triggered = x.u_triggered, seq = x.u_seq, fees = t.fees + x.u_fees, updated_at = now()
         FROM unnest($23::text[], $24::numeric[], $25::numeric[], $26::numeric[], $27::text[], $28::text[], $29::boolean[], $30::bigint[],
           $31::numeric[], $32::text[]) AS x(u_id, u_filled, u_notional, u_hold, u_status, u_reason, u_triggered, u_seq, u_fees, u_evt)
         WHERE t.id = x.u_id AND EXISTS (SELECT 1 FROM k)
         RETURNING x.u_evt AS evt, ${ORDER_COLUMNS.replace(/(^|,\s*)(\w+)/g, '$1t.$2')}),
       eu AS (
         INSERT INTO trading.outbox (id, subject, payload, headers)
         SELECT u.evt, 'trading.order.' || u.status, jsonb_build_object('id', u.evt, 'type', 'trading.order.' || u.status, 'occurredAt', $33::text,
           'accountId', u.account_id, 'data', jsonb_build_object('id', u.id, 'clientOrderId', u.client_order_id, 'venue', u.venue, 'symbol',
           u.symbol, 'side', u.side, 'type', u.type, 'timeInForce', u.time_in_force, 'qty', u.qty, 'filledQty', u.filled_qty, 'status',
           u.status, 'reason', u.reason)), $34::jsonb
         FROM u),
       f AS (
         INSERT INTO trading.fills (id, account_id, order_id, venue, symbol, side, price, qty, notional, fee, liquidity, seq, epoch)
         SELECT * FROM unnest($35::text[], $36::text[], $37::text[], $38::text[], $39::text[], $40::text[], $41::numeric[], $42::numeric[],
           $43::numeric[], $44::numeric[], $45::text[], $46::bigint[], $47::integer[]) WHERE EXISTS (SELECT 1 FROM k)),
       e AS (
         INSERT INTO trading.outbox (id, subject, payload, headers) SELECT * FROM unnest($48::text[], $49::text[], $50::jsonb[], $51::jsonb[]) WHERE EXISTS (SELECT 1 FROM k)),
       bu AS (
         UPDATE trading.balances b SET total = b.total + d.d_total, held = b.held + d.d_held
         FROM (SELECT * FROM unnest($52::text[], $53::text[], $54::numeric[], $55::numeric[]) WITH ORDINALITY AS x(d_account, d_asset, d_total, d_held, n)
           ORDER BY n) d
         WHERE b.account_id = d.d_account AND b.venue = $56 AND b.asset = d.d_asset AND EXISTS (SELECT 1 FROM k)
         RETURNING b.account_id, b.asset, b.total, b.held),
       bi AS (
         INSERT INTO trading.balances (account_id, venue, asset, total, held)
         SELECT a, $56, s, t, h FROM unnest($57::text[], $58::text[], $59::numeric[], $60::numeric[]) AS x(a, s, t, h) WHERE EXISTS (SELECT 1 FROM k)
         RETURNING account_id, asset, total, held),
       -- Each account's sequence moves on by its events here: after the balance rows (every account
       -- with events has its quote row there), in account order, so that writers wait in one order.
       es AS (
         INSERT INTO trading.event_seqs AS s (account_id, last_seq)
         SELECT a, n FROM unnest($68::text[], $69::bigint[]) AS c(a, n) WHERE EXISTS (SELECT 1 FROM k) AND (SELECT count(*) FROM bu) >= 0 ORDER BY a
         ON CONFLICT (account_id) DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq
         RETURNING s.account_id, s.last_seq),
       -- The balances this write leaves (rows it changed or touched as committed last; the base asset's
       -- other rows are this book's alone, as the statement read them).
       fb AS (
         SELECT account_id, asset, total, held FROM bu
         UNION ALL SELECT account_id, asset, total, held FROM bi
         UNION ALL SELECT b.account_id, b.asset, b.total, b.held FROM trading.balances b
           WHERE b.venue = $56 AND b.account_id = ANY($68::text[]) AND b.asset IN ($80, $81)
             AND NOT EXISTS (SELECT 1 FROM unnest($52::text[], $53::text[]) AS d(a, s) WHERE d.a = b.account_id AND d.s = b.asset)
             AND NOT EXISTS (SELECT 1 FROM unnest($57::text[], $58::text[]) AS d(a, s) WHERE d.a = b.account_id AND d.s = b.asset)),
       ev AS (
         INSERT INTO trading.events (account_id, seq, id, type, venue, symbol, order_id, data, balances, created_at)
         SELECT x.a, es.last_seq - c.n + x.r, x.id, x.t, $56, $63, x.o, x.d,
           (SELECT jsonb_agg(jsonb_build_object('asset', z.asset,
               'total', (coalesce(f.total, 0) - CASE WHEN z.asset = $80 THEN x.bt ELSE x.qt END)::text,
               'held', (coalesce(f.held, 0) - CASE WHEN z.asset = $80 THEN x.bh ELSE x.qh END)::text) ORDER BY z.asset)
            FROM (VALUES ($80::text), ($81::text)) AS z(asset) LEFT JOIN fb f ON f.account_id = x.a AND f.asset = z.asset),
           $33::timestamptz
         FROM unnest($70::text[], $71::integer[], $72::text[], $73::text[], $74::text[], $75::jsonb[], $76::numeric[], $77::numeric[],
           $78::numeric[], $79::numeric[]) AS x(a, r, id, t, o, d, bt, bh, qt, qh)
         JOIN es ON es.account_id = x.a JOIN unnest($68::text[], $69::bigint[]) AS c(a, n) ON c.a = x.a)
       SELECT (SELECT count(*) FROM k)::int AS applied, (SELECT count(*) FROM bu)::int AS balances, (SELECT json_agg(o) FROM o) AS inserted,
         (SELECT json_agg(u) FROM u) AS updated, (SELECT json_agg(es) FROM es) AS seqs`,
      [
        ins('id'),
        ins('account_id'),
        ins('venue'),
        ins('symbol'),
        ins('client_order_id'),
        ins('request_hash'),
        ins('side'),
        ins('type'),
        ins('time_in_force'),
        ins('qty'),
        ins('price'),
        ins('stop_price'),
        ins('filled_qty'),
        ins('filled_notional'),
        ins('fees'),
        ins('hold_units'),
        ins('status'),
        ins('reason'),
        ins('triggered'),
        ins('seq'),
        w.inserts.map((o) => JSON.stringify(o.placed_by)),
        ins('external_id'),
        upd('id'),
        upd('filled_qty'),
        upd('filled_notional'),
        upd('hold_units'),
        upd('status'),
        upd('reason'),
        upd('triggered'),
        upd('seq'),
        upd('feesAdded'),
        upd('eventId'),
        w.occurredAt,
        w.headers,
        fil('id'),
        fil('account_id'),
        fil('order_id'),
        fil('venue'),
        fil('symbol'),
        fil('side'),
        fil('price'),
        fil('qty'),
        fil('notional'),
        fil('fee'),
        fil('liquidity'),
        fil('seq'),
        fil('epoch'),
        w.events.ids,
        w.events.subjects,
        w.events.payloads,
        w.events.headers,
        ...bal(w.balanceUpdates),
        w.venue,
        ...bal(w.balanceInserts),
        w.version,
        JSON.stringify(w.state),
        w.symbol,
        w.guard.expectedVersion,
        w.guard.accounts,
        w.guard.epochs,
        ins('notional'),
        ev.seqAccounts,
        ev.seqCounts,
        ev.accounts,
        ev.ranks,
        ev.ids,
        ev.types,
        ev.orderIds,
        ev.data,
        ev.laterBaseTotal,
        ev.laterBaseHeld,
        ev.laterQuoteTotal,
        ev.laterQuoteHeld,
        ev.base,
        ev.quote,
      ],
    );
    const r = rows[0]!;
    // The book moved on, or an account was reset, since what the caller matched against: nothing written.
    if (!Number(r.applied)) return { applied: false, inserted: [], updated: [], seqs: [] };
    // A balance row this transaction read is gone (a reset meanwhile): run the transaction again.
    if (Number(r.balances) !== w.balanceUpdates.length)
      throw Object.assign(new Error('a balance row changed under the transaction'), { code: '40001' });
    const byId = new Map((json<OrderRow[] | null>(r.inserted) ?? []).map((x) => [x.id, orderRow(x)]));
    return {
      applied: true,
      inserted: w.inserts.map((o) => byId.get(o.id)!),
      updated: (json<OrderRow[] | null>(r.updated) ?? []).map(orderRow),
      seqs: (json<Array<{ account_id: string; last_seq: number }> | null>(r.seqs) ?? []).map((x) => ({ accountId: x.account_id, seq: Number(x.last_seq) })),
    };
  }

  // Order updates (docs/trading.md, "Order updates") --------------------------------------------

  /**
   * Appends one event to the account's sequence outside a book's write (a reset, an external
   * venue's order), in the caller's transaction; answers its seq.
   */
  async appendEvent(
    q: Queryable,
    e: { accountId: string; id: string; type: string; venue: string; symbol: string | null; orderId: string | null; data: unknown; balances: unknown },
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
