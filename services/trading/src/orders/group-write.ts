import type { Queryable } from '@svc/kit';

import { type FillRow, json, ORDER_COLUMNS, type OrderRow, orderRow } from './rows.js';

/**
 * The one statement that writes a book transaction of the paper venue (paper/session.ts): orders,
 * fills, events, balances, the book's state and the accounts' order updates, all or nothing.
 */

type Delta = { accountId: string; asset: string; total: bigint; held: bigint };

/** What one book transaction writes (store.writeGroup). */
export interface GroupWrite {
  venue: string;
  symbol: string;
  inserts: Array<Omit<OrderRow, 'created_at' | 'updated_at'>>;
  /** Changed orders; each gets a `trading.order.<status>` event with `eventId`. */
  updates: Array<
    Pick<
      OrderRow,
      'id' | 'qty' | 'stop_price' | 'hwm' | 'filled_qty' | 'filled_notional' | 'hold_units' | 'status' | 'reason' | 'triggered' | 'seq'
    > & {
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

/**
 * Writes what one book transaction changed with one statement: new orders, changed orders and
 * an event for each, fills, the other events, balance deltas (rows that exist updated in key
 * order, new ones inserted) and the book's state. Answers the new and changed orders as stored.
 * Everything depends on the book's row update (`k`), which happens only if `guard` holds (the
 * accounts share-locked and at their epochs, the book at the expected version): otherwise
 * nothing is written and `applied` is false.
 */
export async function writeGroup(
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
         stop_price, filled_qty, filled_notional, fees, hold_units, status, reason, triggered, seq, placed_by, external_id, notional,
         order_class, parent_id, sibling_id, trail_price, trail_percent, hwm)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
         $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[], $15::numeric[], $16::numeric[], $17::text[],
         $18::text[], $19::boolean[], $20::bigint[], $21::jsonb[], $22::text[], $67::numeric[], $82::text[], $83::text[], $84::text[],
         $85::numeric[], $86::numeric[], $87::numeric[]) WHERE EXISTS (SELECT 1 FROM k)
       RETURNING ${ORDER_COLUMNS}),
     u AS (
       UPDATE trading.orders t SET filled_qty = x.u_filled, filled_notional = x.u_notional, hold_units = x.u_hold, status = x.u_status,
         reason = x.u_reason, triggered = x.u_triggered, seq = x.u_seq, fees = t.fees + x.u_fees, updated_at = now(),
         qty = x.u_qty, stop_price = x.u_stop, hwm = x.u_hwm
       FROM unnest($23::text[], $24::numeric[], $25::numeric[], $26::numeric[], $27::text[], $28::text[], $29::boolean[], $30::bigint[],
         $31::numeric[], $32::text[], $88::numeric[], $89::numeric[], $90::numeric[])
         AS x(u_id, u_filled, u_notional, u_hold, u_status, u_reason, u_triggered, u_seq, u_fees, u_evt, u_qty, u_stop, u_hwm)
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
      ins('order_class'),
      ins('parent_id'),
      ins('sibling_id'),
      ins('trail_price'),
      ins('trail_percent'),
      ins('hwm'),
      upd('qty'),
      upd('stop_price'),
      upd('hwm'),
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
    seqs: (json<Array<{ account_id: string; last_seq: number }> | null>(r.seqs) ?? []).map((x) => ({
      accountId: x.account_id,
      seq: Number(x.last_seq),
    })),
  };
}
