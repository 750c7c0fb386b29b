import { createHash } from 'node:crypto';

import { ClientOrderId, TradingOrderType, TradingSide, TradingTimeInForce } from '@svc/contract';
import { actorOf, DomainError, invalid, notFound, parseInput, type Principal, randomHex, requireAuthority, type Sql } from '@svc/kit';

import { ALPACA, type AlpacaVenue, notionalUnits } from '../alpaca/venue.js';
import { ORDER_TYPES, type OrderType, type Side, type TimeInForce, TIMES_IN_FORCE } from '../engine/book.js';
import { PAPER, type PaperVenue, type PlaceInput } from '../paper/venue.js';
import type { AgentLimits } from './limits.js';
import { linkedOf, linkedPrice, type LinkedRequest, paperLinks } from './linked.js';
import type { OrderFilter, OrderRow, TradingStore } from './store.js';
import {
  decimalInput,
  formatScaled,
  formatUnits,
  type Instruments,
  NOTIONAL_DECIMALS,
  scaled,
  type Spec,
  ticksToString,
  toLots,
  toNotional,
  toTicks,
} from './symbols.js';

/**
 * The trading rules (docs/trading.md): which venue an order goes to, the checks every order
 * passes (shape, instrument increments, client order id, an agent's limits), and the views of
 * accounts. The venues do the rest: paper/venue.ts and alpaca/venue.ts.
 */

export interface PlaceRequest extends LinkedRequest {
  venue: string;
  symbol: string;
  side: string;
  type: string;
  /** Exactly one of qty and notional (an amount of the quote asset, market orders only). */
  qty?: string;
  notional?: string;
  price?: string;
  stopPrice?: string;
  timeInForce?: string;
  clientOrderId?: string;
}

export interface VenueInfo {
  id: string;
  name: string;
  mode: 'paper' | 'live';
  orderTypes: readonly string[];
  timeInForce: readonly string[];
  instruments: Spec[];
  orderBook: boolean;
  reset: boolean;
}

const bad = (message: string) => invalid(message);

/** A decimal without trailing zeros, for comparing two requests of the same order. */
function canon(v: string | undefined): string | null {
  if (v === undefined) return null;
  const s = scaled(v, 18);
  return s === null ? v : formatScaled(s, 18);
}

/** Only the paper venue replaces an order in one step (its book's transaction). */
export const replaceNotSupported = (venue: string) =>
  new DomainError('invalid_argument', 'replace_not_supported', `An order at ${venue} cannot be replaced here; cancel it and place a new one.`);

export class Trading {
  constructor(
    readonly deps: {
      sql: Sql;
      store: TradingStore;
      instruments: Instruments;
      paper: PaperVenue;
      alpaca: { venue: AlpacaVenue; mode: 'paper' | 'live' } | null;
      limits: AgentLimits;
    },
  ) {}

  venues(): VenueInfo[] {
    const out: VenueInfo[] = [
      {
        id: PAPER,
        name: 'Paper (simulated market, built in)',
        mode: 'paper',
        orderTypes: ORDER_TYPES,
        timeInForce: TIMES_IN_FORCE,
        instruments: this.deps.instruments.all(),
        orderBook: true,
        reset: true,
      },
    ];
    if (this.deps.alpaca)
      out.push({
        id: ALPACA,
        name: `Alpaca (${this.deps.alpaca.mode} trading)`,
        mode: this.deps.alpaca.mode,
        // Trailing stops (and linked orders) are the paper venue's here.
        orderTypes: ORDER_TYPES.filter((t) => t !== 'trailing_stop'),
        timeInForce: TIMES_IN_FORCE,
        instruments: [],
        orderBook: false,
        reset: false,
      });
    return out;
  }

  private venue(id: string): VenueInfo {
    const v = this.venues().find((x) => x.id === id);
    if (!v) throw new DomainError('invalid_argument', 'unknown_venue', `venue: "${id}" is not a venue here (GET /trading/venues lists them).`);
    return v;
  }

  private alpaca(): AlpacaVenue {
    return this.deps.alpaca!.venue;
  }

  /**
   * Places an order. With `replacing` (an open paper order of the caller's, checked by the caller),
   * the order replaces it in one transaction (paper/venue.ts replace): `replaced` is the old one.
   */
  async place(
    p: Principal,
    req: PlaceRequest,
    replacing?: string,
  ): Promise<{ row: OrderRow; replayed: boolean; replaced?: OrderRow; legs?: OrderRow[] }> {
    const venue = this.venue(req.venue);
    // The shared schemas (@svc/contract) the gateway validated the request with, checked again here.
    const side: Side = parseInput(TradingSide, req.side, { where: 'side' });
    const type: OrderType = parseInput(TradingOrderType, req.type, { where: 'type' });
    const tif: TimeInForce = parseInput(TradingTimeInForce, req.timeInForce ?? 'gtc', { where: 'timeInForce' });
    const { qty, notional } = sizeOf(req, type, tif);
    const linked = linkedOf(req, type, tif);
    if (tif === 'opg' || tif === 'cls') {
      if (type !== 'market' && type !== 'limit')
        throw bad(`timeInForce: an ${tif} order (for the ${tif === 'opg' ? 'opening' : 'closing'} auction) is market or limit.`);
      if (notional !== undefined) throw bad(`notional: an ${tif} order is for a quantity (qty).`);
    }
    const price = decimalInput('price', linkedPrice(linked, req.price));
    const stopPrice = decimalInput('stopPrice', req.stopPrice);
    const hasLimit = type === 'limit' || type === 'stop_limit';
    const hasStop = type === 'stop' || type === 'stop_limit';
    if (hasLimit && price === undefined) throw bad(`price: a ${type} order needs a limit price.`);
    if (!hasLimit && price !== undefined) throw bad(`price: a ${type} order takes no limit price.`);
    if (hasStop && stopPrice === undefined) throw bad(`stopPrice: a ${type} order needs a stop price.`);
    if (!hasStop && stopPrice !== undefined) throw bad(`stopPrice: a ${type} order takes no stop price.`);
    for (const [field, v] of [
      ['qty', qty],
      ['notional', notional],
      ['price', price],
      ['stopPrice', stopPrice],
    ] as const) {
      if (v === undefined) continue;
      const s = scaled(v, 18);
      if (s === null) throw bad(`${field}: must be a positive decimal number.`);
      if (s <= 0n) throw bad(`${field}: must be positive.`);
    }
    const clientOrderId = parseInput(ClientOrderId, req.clientOrderId ?? `svc-${randomHex(12)}`, { where: 'clientOrderId' });
    // A notional order's amount is part of what it is (appended, so that a quantity order's hash is what it always was).
    const hashed: unknown[] = [venue.id, req.symbol, side, type, tif, canon(qty), canon(price), canon(stopPrice)];
    if (notional !== undefined) hashed.push({ notional: canon(notional) });
    // So are its links and trail (appended likewise).
    if (linked.orderClass !== 'simple' || type === 'trailing_stop')
      hashed.push({
        orderClass: linked.orderClass,
        takeProfit: canon(linked.takeProfit?.price),
        stopLoss: [
          canon(linked.stopLoss?.stopPrice),
          canon(linked.stopLoss?.price),
          // A trailing stop-loss's trail (appended, so that other orders' hashes are what they were).
          ...(linked.stopLoss?.stopPrice === undefined && linked.stopLoss
            ? [canon(linked.stopLoss.trailPrice), canon(linked.stopLoss.trailPercent)]
            : []),
        ],
        trail: [canon(linked.trailPrice), canon(linked.trailPercent)],
      });
    const requestHash = createHash('sha256').update(JSON.stringify(hashed)).digest('hex');
    const actor = actorOf(p);
    const replay = (r: { row: OrderRow; replayed: boolean }) => {
      if (r.replayed && r.row.request_hash !== requestHash)
        throw new DomainError(
          'conflict',
          'client_order_id_conflict',
          `clientOrderId "${clientOrderId}" already names a different order (${r.row.id}) at ${venue.id}; use a new clientOrderId for a new order.`,
        );
      return r;
    };

    if (venue.id === PAPER) {
      const spec = this.deps.instruments.get(req.symbol);
      if (!spec) throw new DomainError('invalid_argument', 'unknown_symbol', `symbol: "${req.symbol}" is not traded at ${venue.id}.`);
      if ((tif === 'opg' || tif === 'cls') && spec.symbol.includes('/'))
        throw bad(`timeInForce: ${spec.symbol} trades around the clock; only equities have an opening and a closing auction.`);
      const lots = qty === undefined ? 0 : toLots(spec, qty);
      if (typeof lots === 'string') throw bad(`qty: ${lots}.`);
      const amount = notional === undefined ? undefined : toNotional(spec, notional);
      if (typeof amount === 'string') throw bad(`notional: ${amount}.`);
      const ticks = price === undefined ? undefined : toTicks(spec, price);
      if (typeof ticks === 'string') throw bad(`price: ${ticks}.`);
      const stopTicks = stopPrice === undefined ? undefined : toTicks(spec, stopPrice);
      if (typeof stopTicks === 'string') throw bad(`stopPrice: ${stopTicks}.`);
      // The engine counts notional in tick·lots exactly: quantity × price must stay a safe integer.
      if (lots * Math.max(ticks ?? 0, stopTicks ?? 0) > Number.MAX_SAFE_INTEGER) throw bad('qty: is too large at this price (quantity × price).');
      const input: PlaceInput = {
        accountId: p.accountId,
        actor,
        spec,
        clientOrderId,
        requestHash,
        side,
        type,
        tif,
        qty: lots,
        notional: amount && { ...amount, text: notional! },
        price: ticks,
        stopPrice: stopTicks,
        ...paperLinks(spec, linked, side, ticks),
        limits:
          p.kind === 'agent'
            ? (q, units, leg) =>
                this.deps.limits.check(q, p, { venueMode: 'paper', symbol: spec.symbol, notionalUnits: units, currency: spec.quote, leg })
            : undefined,
      };
      if (replacing) return { ...(await this.deps.paper.replace(spec, p.accountId, replacing, input)), replayed: false };
      const placed = replay(await this.deps.paper.place(input));
      // A linked order answers its legs as they stand after matching (read after the commit).
      if (placed.row.order_class === 'simple') return placed;
      return { ...placed, legs: await this.deps.store.legs(this.deps.sql, p.accountId, placed.row.id) };
    }
    if (replacing) throw replaceNotSupported(venue.id);
    if (linked.orderClass !== 'simple' || type === 'trailing_stop')
      throw bad(`${type === 'trailing_stop' ? 'type' : 'orderClass'}: linked orders and trailing stops are placed on the paper venue only here.`);

    if (!/^[A-Z][A-Z0-9.]{0,15}(\/[A-Z]{2,6})?$/.test(req.symbol))
      throw new DomainError('invalid_argument', 'unknown_symbol', `symbol: "${req.symbol}" is not a symbol Alpaca lists.`);
    const existing = await this.deps.store.orderByClientId(this.deps.sql, p.accountId, venue.id, clientOrderId);
    if (existing) return replay({ row: existing, replayed: true });
    if (notional !== undefined && scaled(notional, NOTIONAL_DECIMALS) === null)
      throw bad(`notional: must be an amount with at most ${NOTIONAL_DECIMALS} decimals (cents).`);
    if (p.kind === 'agent') {
      // A notional order is bounded by its notional; a quantity order by its limit or stop price.
      const bound = notional !== undefined ? undefined : (price ?? stopPrice);
      await this.deps.sql.tx(async (q) => {
        if (bound === undefined && notional === undefined) {
          const l = (await this.deps.limits.list(p, q))[0];
          if (l && (l.max_notional_per_order !== null || l.max_notional_per_day !== null))
            throw new DomainError(
              'forbidden',
              'trading_limit_exceeded',
              'Trading limit maxNotionalPerOrder exceeded: a market order at an external venue has no price to bound its notional; use a limit order.',
            );
        }
        await this.deps.limits.check(q, p, {
          venueMode: venue.mode,
          symbol: req.symbol,
          notionalUnits: notional !== undefined ? scaled(notional, 9)! : bound === undefined ? 0n : notionalUnits(qty!, bound),
          currency: 'USD',
        });
      });
    }
    return replay(
      await this.alpaca().place({
        accountId: p.accountId,
        actor,
        symbol: req.symbol,
        side,
        type,
        tif,
        qty,
        notional,
        price,
        stopPrice,
        clientOrderId,
        requestHash,
      }),
    );
  }

  /** `signal`: the caller's, which stops a read of the venue (docs/threads.md, "Aborting a tool"). */
  async get(p: Principal, id: string, signal?: AbortSignal): Promise<OrderRow> {
    const row = await this.deps.store.order(this.deps.sql, p.accountId, id);
    if (!row) throw notFound('The order');
    return row.venue === ALPACA && this.deps.alpaca ? this.alpaca().refresh(row, signal) : row;
  }

  async list(p: Principal, f: OrderFilter, limit: number): Promise<{ rows: OrderRow[]; next: string | null }> {
    const rows = await this.deps.store.listOrders(this.deps.sql, p.accountId, f, limit);
    return page(rows, limit);
  }

  async fills(p: Principal, f: { venue?: string; symbol?: string; orderId?: string; cursor?: string }, limit: number) {
    return page(await this.deps.store.listFills(this.deps.sql, p.accountId, f, limit), limit);
  }

  /** Cancels one open order (by id, or client order id at a venue), or every open order of the account at a venue. */
  async cancel(p: Principal, req: { venue?: string; orderId?: string; clientOrderId?: string; all: boolean }): Promise<OrderRow[]> {
    const named = [req.orderId, req.clientOrderId, req.all || undefined].filter((x) => x !== undefined).length;
    if (named !== 1) throw bad('Name exactly one of orderId, clientOrderId, or all: true.');
    const venueId = req.venue ?? PAPER;
    if (req.all) {
      this.venue(venueId);
      if (venueId === PAPER) return this.deps.paper.cancelAll(p.accountId);
      const open = await this.deps.store.listOrders(this.deps.sql, p.accountId, { venue: venueId, status: 'open' }, 500);
      const out: OrderRow[] = [];
      for (const r of open) out.push(await this.alpaca().cancel(r));
      return out;
    }
    const row = req.orderId
      ? await this.deps.store.order(this.deps.sql, p.accountId, req.orderId)
      : await this.deps.store.orderByClientId(this.deps.sql, p.accountId, this.venue(venueId).id, req.clientOrderId!);
    if (!row) throw notFound('The order');
    const notOpen = () => new DomainError('conflict', 'order_not_open', `The order is ${row.status}; only an open order can be cancelled.`);
    if (row.status !== 'new' && row.status !== 'partially_filled' && row.status !== 'held') throw notOpen();
    if (row.venue === ALPACA) return [await this.alpaca().cancel(row)];
    const spec = this.deps.instruments.get(row.symbol)!;
    const done = await this.deps.paper.cancel(spec, p.accountId, row.id);
    if (!done) throw notOpen();
    return [done];
  }

  async account(p: Principal, venueId: string, signal?: AbortSignal) {
    const venue = this.venue(venueId);
    if (venue.id === ALPACA) {
      const { account, positions } = await this.alpaca().account(p.accountId, signal);
      const open = await this.deps.store.listOrders(this.deps.sql, p.accountId, { venue: ALPACA, status: 'open' }, 200);
      return {
        venue: ALPACA,
        currency: account.currency,
        cash: account.cash,
        equity: account.equity,
        balances: [{ asset: account.currency, total: account.cash, held: '0', available: account.buying_power }],
        positions: positions.map((x) => ({ symbol: x.symbol, qty: x.qty, markPrice: x.current_price ?? '0', marketValue: x.market_value ?? '0' })),
        openOrders: open,
      };
    }
    const { rows, startingCash } = await this.deps.paper.balances(p.accountId);
    const marks = await this.deps.paper.marks();
    let cash = 0n;
    let equity = 0n;
    const positions = [];
    for (const b of rows) {
      const total = BigInt(b.total.split('.')[0]!);
      if (b.asset === 'USD') {
        cash = total;
        equity += total;
        continue;
      }
      const spec = this.deps.instruments.all().find((s) => s.base === b.asset);
      if (!spec || total === 0n) continue;
      const mark = ticksToString(spec, marks.get(spec.symbol)!);
      const value = (total * scaled(mark, 9)!) / 10n ** 9n;
      equity += value;
      positions.push({ symbol: spec.symbol, qty: formatUnits(total), markPrice: mark, marketValue: formatUnits(value) });
    }
    const open = await this.deps.store.listOrders(this.deps.sql, p.accountId, { venue: PAPER, status: 'open' }, 200);
    return {
      venue: PAPER,
      currency: 'USD',
      cash: formatUnits(cash),
      equity: formatUnits(equity),
      startingCash: formatUnits(BigInt(startingCash.split('.')[0]!)),
      balances: rows.map((b) => {
        const total = BigInt(b.total.split('.')[0]!);
        const held = BigInt(b.held.split('.')[0]!);
        return { asset: b.asset, total: formatUnits(total), held: formatUnits(held), available: formatUnits(total - held) };
      }),
      positions,
      openOrders: open,
    };
  }

  async reset(p: Principal, venueId: string) {
    requireAuthority(p, 'Paper balances are reset');
    const venue = this.venue(venueId);
    if (venue.id !== PAPER) throw new DomainError('invalid_argument', 'reset_not_supported', `${venue.id} has no paper balances to reset here.`);
    await this.deps.paper.reset(p.accountId, actorOf(p));
    return this.account(p, PAPER);
  }

  async book(venueId: string, symbol: string, depth: number) {
    const venue = this.venue(venueId);
    if (!venue.orderBook) throw new DomainError('invalid_argument', 'order_book_not_supported', `${venue.id} has no order book here.`);
    const spec = this.deps.instruments.get(symbol);
    if (!spec) throw new DomainError('invalid_argument', 'unknown_symbol', `symbol: "${symbol}" is not traded at ${venue.id}.`);
    const b = await this.deps.paper.snapshot(spec, depth);
    const level = ([price, lots]: [number, number]) => ({
      price: ticksToString(spec, price),
      qty: formatScaled(BigInt(lots) * spec.lotUnits, spec.qtyDecimals),
    });
    return {
      venue: venue.id,
      symbol,
      bids: b.bids.map(level),
      asks: b.asks.map(level),
      last: ticksToString(spec, b.last),
      reference: ticksToString(spec, Math.round(b.reference)),
    };
  }
}

/**
 * An order's size: exactly one of `qty` (a quantity of the base asset) and `notional` (an amount of
 * the quote asset, docs/trading.md "Notional orders"), which only a market order that is not fok takes.
 */
function sizeOf(req: PlaceRequest, type: OrderType, tif: TimeInForce): { qty?: string; notional?: string } {
  const qty = decimalInput('qty', req.qty === '' ? undefined : req.qty);
  const notional = decimalInput('notional', req.notional === '' ? undefined : req.notional);
  if (qty === undefined && notional === undefined)
    throw bad('qty: an order needs a quantity (qty), or, for a market order, an amount of the quote asset to trade (notional).');
  if (qty !== undefined && notional !== undefined) throw bad('notional: give either qty or notional, not both.');
  if (notional !== undefined && type !== 'market') throw bad(`notional: only a market order takes a notional; give qty for a ${type} order.`);
  if (notional !== undefined && tif === 'fok')
    throw bad('timeInForce: a notional order cannot be fok (the quantity it buys is found as it fills); use day, gtc or ioc.');
  return { qty, notional };
}

function page<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next: string | null } {
  const more = rows.length > limit;
  const out = more ? rows.slice(0, limit) : rows;
  return { rows: out, next: more ? Buffer.from(out[out.length - 1]!.id).toString('base64url') : null };
}

/** A list cursor back to the last id of the previous page; a malformed one is a 400. */
export function cursorId(cursor: string | undefined): string | undefined {
  if (!cursor) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[a-z]+_[0-9a-z]{26}$/.test(id)) throw bad('cursor: is not a cursor this list gave.');
  return id;
}
