import { DomainError, invalid, type Principal, type Sql, toIso } from '@svc/kit';

import type { FillRow, OrderRow } from '../orders/store.js';
import { formatUnits, type Instruments, lotsToString, ticksToString } from '../orders/symbols.js';
import type { Trading } from '../orders/trading.js';
import { PAPER, type PaperSettings, type PaperVenue } from '../paper/venue.js';
import { dec, money, mul, ratio, str } from './decimal.js';
import { INTERVALS, type Market, plain } from './market.js';
import type { ViewsStore } from './store.js';

/**
 * The account's portfolio at the paper venue (docs/trading.md, "Portfolio"): positions at average
 * cost with realised and unrealised P&L, equity history, the activity ledger, daily statistics;
 * and closing positions (market sell orders through the ordinary order path: limits apply).
 */

export interface Book {
  qty: bigint;
  cost: bigint;
  realized: bigint;
  fees: bigint;
  bought: bigint;
  sold: bigint;
  lastPrice: bigint;
}

const empty = (): Book => ({ qty: 0n, cost: 0n, realized: 0n, fees: 0n, bought: 0n, sold: 0n, lastPrice: 0n });

/** Average cost: a buy adds to the cost basis, a sell realises the difference from the average. */
export function applyFill(b: Book, f: Pick<FillRow, 'side' | 'qty' | 'price' | 'notional' | 'fee'>): void {
  const q = dec(f.qty);
  const n = dec(f.notional);
  b.fees += dec(f.fee);
  b.lastPrice = dec(f.price);
  if (f.side === 'buy') {
    b.qty += q;
    b.cost += n;
    b.bought += q;
    return;
  }
  const basis = b.qty > 0n ? (b.cost * (q < b.qty ? q : b.qty)) / b.qty : 0n;
  b.realized += n - basis;
  b.cost -= basis;
  b.qty -= q;
  b.sold += q;
  if (b.qty <= 0n) {
    b.qty = 0n;
    b.cost = 0n;
  }
}

export class Portfolio {
  constructor(
    readonly deps: {
      sql: Sql;
      views: ViewsStore;
      instruments: Instruments;
      paper: PaperVenue;
      settings: PaperSettings;
      market: Market;
      trading: Trading;
    },
  ) {}

  /** Each symbol's book of the current epoch, and the epoch's start. */
  private async books(accountId: string) {
    const { epoch, startingCash } = await this.deps.paper.balances(accountId);
    const acct = await this.deps.views.paperAccount(this.deps.sql, accountId, PAPER);
    const fills = await this.deps.views.epochFills(this.deps.sql, accountId, PAPER, epoch);
    const books = new Map<string, Book>();
    for (const f of fills) {
      if (!books.has(f.symbol)) books.set(f.symbol, empty());
      applyFill(books.get(f.symbol)!, f);
    }
    return { books, fills, since: acct!.reset_at, startingCash: BigInt(startingCash.split('.')[0]!) };
  }

  /** A new symbol's book (performance.ts). */
  empty(): Book {
    return empty();
  }

  baseOf(symbol: string): string {
    return this.deps.instruments.get(symbol)!.base;
  }

  /** Everything the views of the current epoch need: books, fills, cash (10⁻¹⁸, as `dec`) and marks. */
  async state(accountId: string) {
    const b = await this.books(accountId);
    const { rows } = await this.deps.paper.balances(accountId);
    const usd = rows.find((r) => r.asset === 'USD');
    const cash = usd ? BigInt(usd.total.split('.')[0]!) * 10n ** 9n : 0n;
    return { ...b, cash, marks: await this.marks() };
  }

  private async marks(): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>();
    for (const [symbol, ticks] of await this.deps.paper.marks()) out.set(symbol, dec(ticksToString(this.deps.instruments.get(symbol)!, ticks)));
    return out;
  }

  private detail(symbol: string, b: Book, mark: bigint) {
    const value = mul(b.qty, mark);
    const unrealized = value - b.cost;
    return {
      symbol,
      qty: str(b.qty),
      avgCost: b.qty > 0n ? str((b.cost * 10n ** 18n) / b.qty, 9) : '0',
      costBasis: money(b.cost),
      markPrice: str(mark),
      marketValue: money(value),
      unrealizedPnl: money(unrealized),
      unrealizedPnlPct: b.cost > 0n ? Math.round(ratio(unrealized, b.cost) * 100 * 10_000) / 10_000 : undefined,
      realizedPnl: money(b.realized),
    };
  }

  async positions(p: Principal, venue: string) {
    this.deps.market.venue(venue);
    const { books } = await this.books(p.accountId);
    const marks = await this.marks();
    return [...books.entries()].filter(([, b]) => b.qty > 0n).map(([s, b]) => this.detail(s, b, marks.get(s)!));
  }

  async position(p: Principal, venue: string, symbol: string) {
    this.deps.market.spec(venue, symbol);
    const { books } = await this.books(p.accountId);
    const b = books.get(symbol);
    if (!b || b.qty <= 0n) throw new DomainError('not_found', 'position_not_found', `The account holds no ${symbol} at ${PAPER}.`);
    return this.detail(symbol, b, (await this.marks()).get(symbol)!);
  }

  async pnl(p: Principal, venue: string, symbol?: string) {
    if (symbol) this.deps.market.spec(venue, symbol);
    else this.deps.market.venue(venue);
    const { books, since } = await this.books(p.accountId);
    const marks = await this.marks();
    const t = { realized: 0n, unrealized: 0n, fees: 0n };
    const rows = [...books.entries()]
      .filter(([s]) => !symbol || s === symbol)
      .map(([s, b]) => {
        const unrealized = mul(b.qty, marks.get(s)!) - b.cost;
        t.realized += b.realized;
        t.unrealized += unrealized;
        t.fees += b.fees;
        return {
          symbol: s,
          realized: money(b.realized),
          unrealized: money(unrealized),
          fees: money(b.fees),
          total: money(b.realized + unrealized - b.fees),
          boughtQty: str(b.bought),
          soldQty: str(b.sold),
        };
      });
    return {
      symbols: rows,
      realized: money(t.realized),
      unrealized: money(t.unrealized),
      fees: money(t.fees),
      total: money(t.realized + t.unrealized - t.fees),
      currency: 'USD',
      since: since.toISOString(),
    };
  }

  /**
   * Equity at each interval since the last reset (or `start`): cash moved by the fills before the
   * point, and positions at the account's last fill price of the symbol then; the last point values
   * them at the market's last price.
   */
  async history(p: Principal, venue: string, interval: string, start?: string, end?: string) {
    this.deps.market.venue(venue);
    const ms = INTERVALS[interval];
    if (!ms) throw invalid(`interval: must be one of ${Object.keys(INTERVALS).join(', ')}.`);
    const { fills, since, startingCash } = await this.books(p.accountId);
    const now = Date.now();
    const to = Math.min(end ? Date.parse(end) : now, now);
    const from = Math.max(start ? Date.parse(start) : since.getTime(), since.getTime());
    if (from > to) throw invalid('start: must be before end (and not before the last reset).');
    const first = Math.ceil(from / ms) * ms;
    const count = Math.floor((to - first) / ms) + 1;
    if (count > 1000) throw invalid(`interval: ${count} points; choose a larger interval or a shorter range (at most 1000 points).`);
    const times = [from];
    for (let t = first; t <= to; t += ms) if (t > from) times.push(t);
    if (times[times.length - 1] !== to) times.push(to);
    const marks = await this.marks();
    const books = new Map<string, Book>();
    let cash = startingCash * 10n ** 9n;
    let i = 0;
    const points = times.map((t, n) => {
      for (; i < fills.length && fills[i]!.created_at.getTime() <= t; i++) {
        const f = fills[i]!;
        if (!books.has(f.symbol)) books.set(f.symbol, empty());
        applyFill(books.get(f.symbol)!, f);
        const delta = dec(f.notional);
        cash += f.side === 'buy' ? -delta - dec(f.fee) : delta - dec(f.fee);
      }
      let value = 0n;
      for (const [s, b] of books) value += mul(b.qty, n === times.length - 1 ? marks.get(s)! : b.lastPrice);
      return { at: new Date(t).toISOString(), equity: money(cash + value), cash: money(cash), positionsValue: money(value) };
    });
    return { points, startingCash: formatUnits(startingCash), interval };
  }

  async activities(p: Principal, venue: string, kind: string | undefined, limit: number, cursor?: string) {
    this.deps.market.venue(venue);
    if (kind && kind !== 'fill' && kind !== 'reset') throw invalid('kind: must be "fill" or "reset".');
    let at: { at: Date; id: string } | undefined;
    if (cursor) {
      const [t, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
      if (!t || !id || Number.isNaN(Date.parse(t))) throw invalid('cursor: is not a cursor this list gave.');
      at = { at: new Date(t), id };
    }
    const rows = await this.deps.views.activities(this.deps.sql, p.accountId, PAPER, { kind, cursor: at }, limit);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const last = page[page.length - 1];
    return {
      activities: page.map((r) => ({
        id: r.id,
        kind: r.kind,
        at: toIso(r.at)!,
        symbol: r.symbol ?? undefined,
        side: r.side ?? undefined,
        qty: r.qty === null ? undefined : plain(r.qty),
        price: r.price === null ? undefined : plain(r.price),
        cashDelta: plain(r.cash_delta),
        fee: plain(r.fee),
        orderId: r.order_id ?? undefined,
        epoch: r.epoch,
      })),
      nextCursor: more && last ? Buffer.from(`${last.at.toISOString()}|${last.id}`).toString('base64url') : undefined,
    };
  }

  async stats(p: Principal, venue: string, start?: string, end?: string) {
    this.deps.market.venue(venue);
    const to = end ? new Date(end) : new Date(Date.now() + 1000);
    const from = start ? new Date(start) : new Date(to.getTime() - 30 * 86_400_000);
    if (from >= to) throw invalid('start: must be before end.');
    const orders = await this.deps.views.ordersByDay(this.deps.sql, p.accountId, PAPER, from, to);
    const fills = await this.deps.views.fillsByDay(this.deps.sql, p.accountId, PAPER, from, to);
    const days = [...new Set([...orders.map((o) => o.day), ...fills.map((f) => f.day)])].sort();
    const total = { ordersPlaced: 0, ordersFilled: 0, ordersCancelled: 0, ordersOther: 0, fills: 0, buy: 0n, sell: 0n, fees: 0n };
    const out = days.map((day) => {
      const o = orders.find((x) => x.day === day);
      const f = fills.find((x) => x.day === day);
      total.ordersPlaced += o?.placed ?? 0;
      total.ordersFilled += o?.filled ?? 0;
      total.ordersCancelled += o?.cancelled ?? 0;
      total.ordersOther += o?.other ?? 0;
      total.fills += f?.fills ?? 0;
      total.buy += dec(f?.buy_notional ?? '0');
      total.sell += dec(f?.sell_notional ?? '0');
      total.fees += dec(f?.fees ?? '0');
      return {
        day,
        ordersPlaced: o?.placed ?? 0,
        ordersFilled: o?.filled ?? 0,
        ordersCancelled: o?.cancelled ?? 0,
        ordersOther: o?.other ?? 0,
        fills: f?.fills ?? 0,
        buyNotional: plain(f?.buy_notional ?? '0'),
        sellNotional: plain(f?.sell_notional ?? '0'),
        fees: plain(f?.fees ?? '0'),
      };
    });
    return {
      days: out,
      totals: {
        day: 'total',
        ordersPlaced: total.ordersPlaced,
        ordersFilled: total.ordersFilled,
        ordersCancelled: total.ordersCancelled,
        ordersOther: total.ordersOther,
        fills: total.fills,
        buyNotional: money(total.buy),
        sellNotional: money(total.sell),
        fees: money(total.fees),
      },
    };
  }

  /** What the account may sell of a symbol now (its base balance less what open orders hold), as units. */
  async sellable(accountId: string, base: string): Promise<{ total: bigint; available: bigint }> {
    const { rows } = await this.deps.paper.balances(accountId);
    const b = rows.find((r) => r.asset === base);
    const total = b ? BigInt(b.total.split('.')[0]!) : 0n;
    const held = b ? BigInt(b.held.split('.')[0]!) : 0n;
    return { total, available: total - held };
  }

  /** Sells (at market) all of a position or `qty` of it. */
  async close(p: Principal, venue: string, symbol: string, qty?: string, clientOrderId?: string): Promise<OrderRow> {
    const spec = this.deps.market.spec(venue, symbol);
    const { total, available } = await this.sellable(p.accountId, spec.base);
    if (total <= 0n) throw new DomainError('not_found', 'position_not_found', `The account holds no ${symbol} at ${PAPER}.`);
    if (available <= 0n)
      throw new DomainError('conflict', 'position_held', `All of the ${symbol} position is held by open sell orders; cancel them first.`);
    const lots = available / spec.lotAmount;
    const sell = qty ?? lotsToString(spec, lots);
    if (lots <= 0n) throw new DomainError('conflict', 'position_below_lot', `The ${symbol} position is smaller than one lot (${spec.lotSize}).`);
    const r = await this.deps.trading.place(p, { venue: PAPER, symbol, side: 'sell', type: 'market', qty: sell, clientOrderId });
    return r.row;
  }

  /** Cancels the account's open paper orders, then sells every position at market. */
  async closeAll(p: Principal, venue: string) {
    this.deps.market.venue(venue);
    const cancelled = await this.deps.trading.cancel(p, { venue: PAPER, all: true });
    const orders: OrderRow[] = [];
    for (const spec of this.deps.instruments.all()) {
      const { available } = await this.sellable(p.accountId, spec.base);
      const lots = available / spec.lotAmount;
      if (lots <= 0n) continue;
      orders.push(
        (await this.deps.trading.place(p, { venue: PAPER, symbol: spec.symbol, side: 'sell', type: 'market', qty: lotsToString(spec, lots) })).row,
      );
    }
    return { orders, cancelled };
  }

  /** An order's life: placed, each fill, and how it ended. */
  async orderHistory(p: Principal, id: string) {
    const order = await this.deps.trading.get(p, id);
    const fills = await this.deps.views.orderFills(this.deps.sql, p.accountId, id);
    const events: Array<{
      at: string;
      kind: string;
      status: string;
      qty?: string;
      price?: string;
      filledQty: string;
      fillId?: string;
      reason?: string;
    }> = [
      {
        at: toIso(order.created_at)!,
        kind: 'placed',
        status: 'new',
        qty: plain(order.qty),
        price: order.price ? plain(order.price) : undefined,
        filledQty: '0',
      },
    ];
    let filled = 0n;
    const qty = dec(plain(order.qty));
    for (const f of fills) {
      filled += dec(plain(f.qty));
      events.push({
        at: toIso(f.created_at)!,
        kind: 'fill',
        status: filled >= qty ? 'filled' : 'partially_filled',
        qty: plain(f.qty),
        price: plain(f.price),
        filledQty: str(filled),
        fillId: f.id,
      });
    }
    if (['cancelled', 'expired', 'rejected'].includes(order.status))
      events.push({
        at: toIso(order.updated_at)!,
        kind: order.status,
        status: order.status,
        filledQty: str(filled),
        reason: order.reason ?? undefined,
      });
    else if (order.status === 'filled' && !fills.length)
      events.push({ at: toIso(order.updated_at)!, kind: 'filled', status: 'filled', filledQty: plain(order.filled_qty) });
    return { orderId: id, events };
  }
}
