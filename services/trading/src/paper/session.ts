import { type Actor, currentTraceHeaders, DomainError, eventRows, newId, type Queryable } from '@svc/kit';

import type { BookOrder } from '../engine/book.js';
import { MARKET_MAKER } from '../engine/market-maker.js';
import type { GroupWrite, OrderRow, TradingStore } from '../orders/store.js';
import { formatScaled, formatUnits, lotsToString, notionalToUnits, type Spec, ticksToString } from '../orders/symbols.js';
import type { BookEntry } from './books.js';
import type { Ledger } from './ledger.js';
import type { Timeline } from './timeline.js';

/**
 * One book transaction of the paper venue (paper/venue.ts): what it changed on the book and the
 * ledger, the accounts' order updates, and the one write of it all (store.writeGroup); and the
 * refusals of an order that the book decides.
 */

export const PAPER = 'paper';

export interface Session {
  q: Queryable;
  entry: BookEntry;
  ledger: Ledger;
  /** The accounts' order updates of this transaction, step by step. */
  timeline: Timeline;
  changed: Set<BookOrder>;
  inserted: Map<
    string,
    {
      clientOrderId: string;
      requestHash: string;
      actor: Actor;
      headers?: Record<string, string>;
      notional: string | null;
      /** Linked orders (docs/trading.md): the class, and a leg's entry. */
      orderClass?: string;
      parentId?: string;
    }
  >;
  epochs: Map<string, number>;
  /** Orders the group's client order ids already name. */
  existing: OrderRow[];
}

/** Counts an order among what the session changed and writes (the market maker's quotes are kept with the book, not as orders). */
export function track(s: Session, o: BookOrder | null): void {
  if (o && o.owner !== MARKET_MAKER) s.changed.add(o);
}

/**
 * Writes what the session changed: new and changed orders, fills, balances, the book; their
 * events. With `guard` (the optimistic path), null when the statement wrote nothing.
 */
export async function writeSession(
  s: Session,
  store: TradingStore,
  state: unknown,
  guard?: GroupWrite['guard'],
): Promise<Map<string, OrderRow> | null> {
  const { q, entry, ledger } = s;
  const spec = entry.spec;
  const rows = new Map<string, OrderRow>();
  for (const o of s.changed) ledger.syncHold(o);
  const price = (ticks: number | undefined) => (ticks === undefined ? null : ticksToString(spec, ticks));
  const fields = (o: BookOrder) => ({
    qty: lotsToString(spec, o.qty),
    stop_price: price(o.stopPrice),
    hwm: price(o.hwm),
    filled_qty: lotsToString(spec, o.filled),
    filled_notional: formatUnits(notionalToUnits(spec, o.notional)),
    hold_units: (ledger.holds.get(o.id) ?? 0n).toString(),
    status: o.status,
    reason: o.reason,
    triggered: o.triggered,
    seq: o.seq,
  });
  const byId = new Map([...s.changed].map((o) => [o.id, o]));
  const inserts = [...s.inserted].map(([id, meta]) => {
    const o = byId.get(id)!;
    return {
      id,
      account_id: o.owner,
      venue: PAPER,
      symbol: spec.symbol,
      client_order_id: meta.clientOrderId,
      request_hash: meta.requestHash,
      side: o.side,
      type: o.type,
      time_in_force: o.tif,
      notional: meta.notional,
      price: price(o.price),
      order_class: meta.orderClass ?? 'simple',
      parent_id: meta.parentId ?? null,
      sibling_id: o.sibling?.id ?? null,
      trail_price: price(o.trailTicks),
      trail_percent: o.trailBps === undefined ? null : formatScaled(BigInt(o.trailBps), 2),
      ...fields(o),
      fees: formatUnits(ledger.feesAdded.get(id) ?? 0n),
      placed_by: meta.actor,
      external_id: null,
    };
  });
  const fills = ledger.fills.map((f) => ({
    id: newId('fill'),
    account_id: f.accountId,
    order_id: f.order.id,
    venue: PAPER,
    symbol: spec.symbol,
    side: f.order.side,
    price: ticksToString(spec, f.price),
    qty: lotsToString(spec, f.qty),
    notional: formatUnits(f.notional),
    fee: formatUnits(f.fee),
    liquidity: f.liquidity,
    seq: f.seq,
    epoch: s.epochs.get(f.accountId) ?? 0,
  }));
  const events = eventRows([
    ...inserts.map((o) => ({
      subject: 'trading.order.placed',
      accountId: o.account_id,
      data: orderEvent(o),
      headers: s.inserted.get(o.id)!.headers,
    })),
    ...fills.map((f) => ({ subject: 'trading.fill.executed', accountId: f.account_id, data: f })),
  ]);
  // Every account with order updates has its quote balance in the write (read afresh there for the updates' balances).
  const accounts = s.timeline.accounts();
  for (const a of accounts) ledger.touch(a, spec.quote);
  const orderEvents = s.timeline.rows(() => newId('evt'));
  const deltas = ledger.deltas().sort((a, b) => (a.accountId + '\u0000' + a.asset < b.accountId + '\u0000' + b.asset ? -1 : 1));
  entry.deltas = deltas;
  const written = await store.writeGroup(q, {
    venue: PAPER,
    symbol: spec.symbol,
    inserts,
    updates: [...s.changed]
      .filter((o) => !s.inserted.has(o.id))
      .map((o) => ({ id: o.id, ...fields(o), feesAdded: formatUnits(ledger.feesAdded.get(o.id) ?? 0n), eventId: newId('evt') })),
    fills,
    events,
    orderEvents,
    occurredAt: new Date().toISOString(),
    headers: JSON.stringify(currentTraceHeaders()),
    balanceUpdates: deltas.filter((d) => d.stored),
    balanceInserts: deltas.filter((d) => !d.stored),
    version: entry.version + 1,
    state,
    // Under the book's lock (the locked path) the version is the row's and no reset can run.
    guard: guard ?? { expectedVersion: entry.version, accounts: [], epochs: [] },
  });
  if (!written.applied) return null;
  entry.seqs = written.seqs;
  // What a quote or the tape shows moved (the market maker's requote sets it too, paper/venue.ts passTime).
  if (s.changed.size) entry.moved = true;
  for (const row of [...written.inserted, ...written.updated]) rows.set(row.id, row);
  return rows;
}

/** What a refusal of a notional order says of it. */
export interface Refused {
  side: 'buy' | 'sell';
  notional?: { text: string };
}

/** A notional order that buys (or sells) not even one lot at the book's best price now. */
export function notionalTooSmall(spec: Spec, book: BookEntry['book'], input: Refused, selfTrade: boolean): DomainError {
  const best = input.side === 'buy' ? book.bestAsk() : book.bestBid();
  const amount = `${input.notional!.text} ${spec.quote}`;
  if (selfTrade)
    return new DomainError(
      'unprocessable',
      'self_trade_prevented',
      `notional: the account's own order is the best ${input.side === 'buy' ? 'ask' : 'bid'}; an order never trades with its own account.`,
    );
  if (best === undefined)
    return new DomainError(
      'unprocessable',
      'no_liquidity',
      `notional: the book has no ${input.side === 'buy' ? 'asks' : 'bids'} to trade ${amount} against now.`,
    );
  return new DomainError(
    'unprocessable',
    'notional_too_small',
    `notional: ${amount} does not pay for one lot (${spec.lotSize} ${spec.base}) at the best ${input.side === 'buy' ? 'ask' : 'bid'}, ${ticksToString(spec, best)}.`,
  );
}

export function insufficient(spec: Spec, o: BookOrder, ledger: Ledger): DomainError {
  const asset = o.side === 'buy' ? spec.quote : spec.base;
  const available = formatUnits(ledger.available(o.owner, asset));
  const what = o.side === 'buy' ? `buying ${lotsToString(spec, o.qty)} ${spec.symbol}` : `selling ${lotsToString(spec, o.qty)} ${spec.base}`;
  return new DomainError('unprocessable', 'insufficient_balance', `Rejected: the available ${asset} balance (${available}) does not cover ${what}.`);
}

/** What events say of an order. */
export function orderEvent(r: Omit<OrderRow, 'created_at' | 'updated_at'>) {
  return {
    id: r.id,
    clientOrderId: r.client_order_id,
    venue: r.venue,
    symbol: r.symbol,
    side: r.side,
    type: r.type,
    timeInForce: r.time_in_force,
    qty: r.qty,
    filledQty: r.filled_qty,
    status: r.status,
    reason: r.reason,
  };
}
