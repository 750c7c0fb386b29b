import { DomainError, invalid, type Sql, toIso } from '@svc/kit';

import { walk } from '../engine/market-maker.js';
import type { TradingStore } from '../orders/store.js';
import { type Instruments, lotsToString, type Spec, ticksToString } from '../orders/symbols.js';
import type { BookState } from '../paper/books.js';
import { PAPER, type PaperSettings, type PaperVenue } from '../paper/venue.js';
import { dec, money, mul, ratio, str } from './decimal.js';
import type { ViewsStore } from './store.js';

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
    readonly deps: {
      sql: Sql;
      store: TradingStore;
      views: ViewsStore;
      instruments: Instruments;
      paper: PaperVenue;
      settings: PaperSettings;
      venues: () => string[];
    },
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
    // One lot at the starting price, rounded up to a cent (what a notional order is counted in), a cent at least.
    const cent = dec('0.01');
    const minNotional = (() => {
      const v = mul(dec(spec.lotSize), dec(spec.maker.startPrice));
      return v <= cent ? cent : ((v + cent - 1n) / cent) * cent;
    })();
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

  /**
   * The reference price now, without the book's lock: the book row's saved walk taken on to the
   * current step (the walk is deterministic, so this is the price the book will quote around when
   * it is next used). For price alerts, checked every few seconds without writing the book.
   */
  async referenceNow(symbol: string): Promise<string> {
    const spec = this.spec(PAPER, symbol);
    const row = await this.deps.store.readBook(this.deps.sql, PAPER, symbol);
    const state = row?.state as BookState | null | undefined;
    if (!row || !state) return ticksToString(spec, spec.params.startPrice);
    const step = Math.max(0, Math.floor((Date.now() - row.created_at.getTime()) / this.deps.settings.tickMs));
    const ref = step > state.maker.step ? walk(this.deps.settings.seed, symbol, spec.params, state.maker, step) : state.maker.reference;
    return ticksToString(spec, Math.round(ref));
  }

  /** 24-hour statistics of every symbol, from the trades of the last 24 hours. */
  async tickers(venue: string) {
    this.venue(venue);
    const since = new Date(Date.now() - DAY);
    const stats = new Map((await this.deps.views.tradeStats(this.deps.sql, PAPER, since)).map((r) => [r.symbol, r]));
    const marks = await this.deps.paper.marks();
    return {
      since: since.toISOString(),
      tickers: this.deps.instruments.all().map((spec) => {
        const c = stats.get(spec.symbol);
        const change = c ? dec(c.close) - dec(c.open) : undefined;
        return {
          symbol: spec.symbol,
          last: ticksToString(spec, marks.get(spec.symbol)!),
          open: c ? plain(c.open) : undefined,
          high: c ? plain(c.high) : undefined,
          low: c ? plain(c.low) : undefined,
          volume: c ? plain(c.volume) : '0',
          notional: c ? money(dec(c.notional)) : '0',
          trades: c?.trades ?? 0,
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
        seq: t.seq,
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
    const rows = await this.deps.views.candles(this.deps.sql, PAPER, spec.symbol, ms, from, to, limit);
    const candles = rows.reverse().map((r) => ({
      start: r.start.toISOString(),
      open: plain(r.open),
      high: plain(r.high),
      low: plain(r.low),
      close: plain(r.close),
      volume: plain(r.volume),
      notional: money(dec(r.notional)),
      trades: r.trades,
    }));
    return { symbol: spec.symbol, interval, candles };
  }

  clock(venue: string) {
    this.venue(venue);
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    const session = this.deps.paper.sessions?.clock(now.getTime());
    return {
      venue: PAPER,
      now: now.toISOString(),
      isOpen: true,
      session: 'continuous',
      nextDayRollover: next.toISOString(),
      timezone: 'UTC',
      equitiesOpen: session?.isOpen ?? true,
      nextOpen: session ? new Date(session.nextOpen).toISOString() : '',
      nextClose: session ? new Date(session.nextClose).toISOString() : '',
    };
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
