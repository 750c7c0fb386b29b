import { DomainError, invalid, type Sql, toIso } from '@svc/kit';

import { PAPER, type PaperSettings, type PaperVenue } from '../paper/venue.js';
import { type Instruments, lotsToString, type Spec, ticksToString } from '../symbols.js';
import { dec, money, mul, ratio, str } from './decimal.js';
import type { TradeRow, ViewsStore } from './store.js';

/**
 * Market data of the paper venue (docs/trading.md, "Market data"): symbols and their rules, quotes,
 * 24-hour tickers, the trade tape, candles, the clock and the fee schedule. An external venue has
 * no market data here: 400 `market_data_not_supported`.
 */

export const INTERVALS: Record<string, number> = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000, '1d': 86_400_000 };
const DAY = 86_400_000;

export interface QuoteView {
  venue: string;
  symbol: string;
  bid?: string;
  bidQty?: string;
  ask?: string;
  askQty?: string;
  mid?: string;
  spread?: string;
  spreadBps?: number;
  last: string;
  reference: string;
  at: string;
}

export class Market {
  constructor(
    readonly deps: { sql: Sql; views: ViewsStore; instruments: Instruments; paper: PaperVenue; settings: PaperSettings; venues: () => string[] },
  ) {}

  /** The paper venue, or the error an unknown or external venue answers. */
  venue(venue: string): string {
    if (venue === PAPER) return PAPER;
    if (this.deps.venues().includes(venue))
      throw new DomainError('invalid_argument', 'market_data_not_supported', `${venue} has no market data here; the paper venue has.`);
    throw new DomainError('invalid_argument', 'unknown_venue', `venue: "${venue}" is not a venue here (GET /trading/venues lists them).`);
  }

  spec(venue: string, symbol: string): Spec {
    const v = this.venue(venue);
    const spec = this.deps.instruments.get(symbol);
    if (!spec) throw new DomainError('invalid_argument', 'unknown_symbol', `symbol: "${symbol}" is not traded at ${v}.`);
    return spec;
  }

  rules(spec: Spec) {
    const { makerBps, takerBps } = this.deps.settings.fees;
    const minNotional = mul(dec(spec.lotSize), dec(spec.maker.startPrice));
    return {
      venue: PAPER,
      symbol: spec.symbol,
      base: spec.base,
      quote: spec.quote,
      assetClass: spec.symbol.includes('/') ? 'crypto' : 'equity',
      tickSize: spec.tickSize,
      lotSize: spec.lotSize,
      minQty: spec.lotSize,
      minNotional: str(minNotional, 2),
      fractional: spec.qtyDecimals > 0,
      makerFeeBps: makerBps,
      takerFeeBps: takerBps,
      tradable: true,
    };
  }

  symbols(venue: string, assetClass?: string, text?: string) {
    this.venue(venue);
    const needle = text?.toUpperCase();
    return this.deps.instruments
      .all()
      .map((s) => this.rules(s))
      .filter((r) => !assetClass || r.assetClass === assetClass)
      .filter((r) => !needle || r.symbol.includes(needle) || r.base.includes(needle));
  }

  /** Best bid and ask (after letting the market's time pass), last trade and reference price. */
  async quote(venue: string, symbol: string): Promise<QuoteView> {
    const spec = this.spec(venue, symbol);
    const b = await this.deps.paper.snapshot(spec, 1);
    const level = (l: [number, number] | undefined) => (l ? { price: ticksToString(spec, l[0]), qty: lotsToString(spec, l[1]) } : undefined);
    const bid = level(b.bids[0]);
    const ask = level(b.asks[0]);
    const out: QuoteView = {
      venue: PAPER,
      symbol,
      bid: bid?.price,
      bidQty: bid?.qty,
      ask: ask?.price,
      askQty: ask?.qty,
      last: ticksToString(spec, b.last),
      reference: ticksToString(spec, Math.round(b.reference)),
      at: new Date().toISOString(),
    };
    if (bid && ask) {
      const mid = (dec(bid.price) + dec(ask.price)) / 2n;
      const spread = dec(ask.price) - dec(bid.price);
      out.mid = str(mid, spec.priceDecimals + 1);
      out.spread = str(spread, spec.priceDecimals);
      out.spreadBps = Math.round(ratio(spread, mid) * 10_000 * 100) / 100;
    }
    return out;
  }

  /** 24-hour statistics of every symbol, from the trades of the last 24 hours. */
  async tickers(venue: string) {
    this.venue(venue);
    const now = Date.now();
    const since = new Date(now - DAY);
    const trades = await this.deps.views.tradesBetween(this.deps.sql, PAPER, null, since, new Date(now + 1000), 100_000);
    const marks = await this.deps.paper.marks();
    return {
      since: since.toISOString(),
      tickers: this.deps.instruments.all().map((spec) => {
        const mine = trades.filter((t) => t.symbol === spec.symbol);
        const last = ticksToString(spec, marks.get(spec.symbol)!);
        const c = candleOf(mine);
        const volume = mine.reduce((a, t) => a + dec(t.qty), 0n);
        const notional = mine.reduce((a, t) => a + dec(t.notional), 0n);
        const change = c ? dec(c.close) - dec(c.open) : undefined;
        return {
          symbol: spec.symbol,
          last,
          open: c?.open,
          high: c?.high,
          low: c?.low,
          volume: str(volume),
          notional: money(notional),
          trades: mine.length,
          change: change === undefined ? undefined : str(change),
          changePct: change === undefined ? undefined : Math.round(ratio(change, dec(c!.open)) * 100 * 10_000) / 10_000,
        };
      }),
    };
  }

  async trades(venue: string, symbol: string, limit: number, cursor?: string) {
    const spec = this.spec(venue, symbol);
    let before: number | undefined;
    if (cursor) {
      before = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (!Number.isSafeInteger(before) || before < 0) throw invalid('cursor: is not a cursor this list gave.');
    }
    const rows = await this.deps.views.tape(this.deps.sql, PAPER, spec.symbol, before, limit + 1);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    return {
      trades: page.map((t) => ({
        id: `${spec.symbol}:${t.seq}`,
        price: plain(t.price),
        qty: plain(t.qty),
        notional: plain(t.notional),
        takerSide: t.taker_side,
        at: toIso(t.at)!,
      })),
      nextCursor: more ? Buffer.from(String(page[page.length - 1]!.seq)).toString('base64url') : undefined,
    };
  }

  /** OHLCV candles of a book's trades; intervals without trades are left out. */
  async candles(venue: string, symbol: string, interval: string, start: string | undefined, end: string | undefined, limit: number) {
    const spec = this.spec(venue, symbol);
    const ms = INTERVALS[interval];
    if (!ms) throw invalid(`interval: must be one of ${Object.keys(INTERVALS).join(', ')}.`);
    const to = end ? new Date(end) : new Date(Date.now() + 1000);
    const from = start ? new Date(start) : new Date(to.getTime() - ms * limit);
    if (from >= to) throw invalid('start: must be before end.');
    const trades = await this.deps.views.tradesBetween(this.deps.sql, PAPER, spec.symbol, from, to, 100_000);
    const buckets = new Map<number, TradeRow[]>();
    for (const t of trades) {
      const k = Math.floor(t.at.getTime() / ms) * ms;
      if (!buckets.has(k)) buckets.set(k, []);
      buckets.get(k)!.push(t);
    }
    const candles = [...buckets.entries()]
      .sort((a, b) => a[0] - b[0])
      .slice(-limit)
      .map(([k, list]) => ({ start: new Date(k).toISOString(), ...candleOf(list)! }));
    return { symbol: spec.symbol, interval, candles };
  }

  clock(venue: string) {
    this.venue(venue);
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    return { venue: PAPER, now: now.toISOString(), isOpen: true, session: 'continuous', nextDayRollover: next.toISOString(), timezone: 'UTC' };
  }

  async fees(accountId: string, venue: string) {
    this.venue(venue);
    const t = await this.deps.views.feeTotals(this.deps.sql, accountId, PAPER, new Date(Date.now() - 30 * DAY));
    return {
      venue: PAPER,
      makerBps: this.deps.settings.fees.makerBps,
      takerBps: this.deps.settings.fees.takerBps,
      currency: 'USD',
      feesPaid30d: plain(t.fees),
      notional30d: plain(t.notional),
      fills30d: t.fills,
    };
  }
}

export const plain = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);

/** Open, high, low, close, volume of trades in time order; undefined without trades. */
export function candleOf(trades: TradeRow[]) {
  if (!trades.length) return undefined;
  let high = dec(trades[0]!.price);
  let low = high;
  let volume = 0n;
  let notional = 0n;
  for (const t of trades) {
    const p = dec(t.price);
    if (p > high) high = p;
    if (p < low) low = p;
    volume += dec(t.qty);
    notional += dec(t.notional);
  }
  return {
    open: plain(trades[0]!.price),
    high: str(high),
    low: str(low),
    close: plain(trades[trades.length - 1]!.price),
    volume: str(volume),
    notional: money(notional),
    trades: trades.length,
  };
}
