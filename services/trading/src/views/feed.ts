import { type Bus, follow, LiveSignals, type Sql } from '@svc/kit';

import { PAPER, type PaperSettings } from '../paper/venue.js';
import { type Market, plain, type QuoteView } from './market.js';
import type { TradeRow, ViewsStore } from './store.js';

/**
 * Live market data of the paper venue (docs/trading.md, "Market data streams"): quotes, the tape
 * and bars as they change. After a commit that changed a book (an order, a fill, a cancel, the
 * market maker's requote) the venue signals its symbol (kit's LiveSignals, subjects
 * `trading.books.<symbol>`, NATS core); a stream reads what it shows from the book and the store.
 * The market maker's reference moves with time, and a book only moves when it is used, so quote
 * streams also read each book once per reference step (at most every 5 s, at least every 250 ms),
 * shared by every stream of the process: one read per symbol per step, whatever the streams.
 */

/** How old a shared quote may be before a stream reads the book again. */
const FRESH_MS = 200;

interface Moved {
  at: number;
}

export class MarketFeed {
  readonly live: LiveSignals<Moved>;
  private readonly quotes = new Map<string, { at: number; view: Promise<QuoteView> }>();
  private readonly pollMs: number;

  constructor(
    private readonly deps: {
      sql: Sql;
      views: ViewsStore;
      market: Market;
      settings: PaperSettings;
      bus: () => Promise<Bus>;
      onError?: (err: unknown) => void;
    },
  ) {
    this.live = new LiveSignals<Moved>(deps.bus, 'trading.books');
    this.pollMs = Math.min(5_000, Math.max(250, deps.settings.tickMs));
  }

  /** After a commit: the books whose quotes or tape moved. */
  moved(symbols: string[]): void {
    for (const symbol of new Set(symbols)) this.live.signal(symbol, { at: Date.now() }).catch((err: unknown) => this.deps.onError?.(err));
  }

  /** The book's quote, read at most once per FRESH_MS by all of this process's streams. */
  private quote(symbol: string, fresh = false): Promise<QuoteView> {
    const cached = this.quotes.get(symbol);
    if (cached && !fresh && Date.now() - cached.at < FRESH_MS) return cached.view;
    const view = this.deps.market.quote(PAPER, symbol);
    this.quotes.set(symbol, { at: Date.now(), view });
    view.catch(() => this.quotes.delete(symbol));
    return view;
  }

  /**
   * The symbols' quotes now, then each again when it changes (its bid, ask, their sizes, the last
   * trade or the reference): on a signal that its book moved, and at every reference step.
   */
  async *watchQuotes(symbols: string[], signal: AbortSignal): AsyncGenerator<QuoteView> {
    const shown = new Map<string, string>();
    const due = new Set<string>(symbols);
    let wake: (() => void) | undefined;
    const removers = symbols.map((s) =>
      this.live.add(s, () => {
        due.add(s);
        wake?.();
      }),
    );
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        for (const symbol of [...due]) {
          due.delete(symbol);
          const q = await this.quote(symbol);
          const key = [q.bid, q.bidQty, q.ask, q.askQty, q.last, q.reference].join('|');
          if (shown.get(symbol) === key) continue;
          shown.set(symbol, key);
          yield q;
        }
        if (signal.aborted) return;
        if (due.size) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            for (const s of symbols) due.add(s);
            resolve();
          }, this.pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      for (const r of removers) r();
    }
  }

  /** The book's trades after `after` (absent: after the latest), oldest first, then the live ones. */
  async *watchTrades(symbol: string, after: number | undefined, signal: AbortSignal): AsyncGenerator<TradeRow> {
    const from = after ?? (await this.deps.views.lastTradeSeq(this.deps.sql, PAPER, symbol));
    for await (const item of follow<TradeRow, never, Moved>(this.live, symbol, from, signal, {
      read: (a, limit) => this.deps.views.tapeAfter(this.deps.sql, PAPER, symbol, a, limit),
      meaning: () => ({ kind: 'more', seq: Number.MAX_SAFE_INTEGER }),
    }))
      if (item.kind === 'event') yield item.event;
  }

  /** The candles of GetCandles, then the latest one again each time a trade changes it (or starts the next). */
  async *watchBars(
    symbol: string,
    interval: string,
    range: { start?: string; end?: string; limit: number },
    signal: AbortSignal,
  ): AsyncGenerator<Awaited<ReturnType<Market['candles']>>['candles'][number]> {
    const first = await this.deps.market.candles(PAPER, symbol, interval, range.start, range.end, range.limit);
    let last = first.candles.at(-1);
    for (const c of first.candles) yield c;
    if (range.end) return;
    for await (const t of this.watchTrades(symbol, undefined, signal)) {
      void t;
      const now = (await this.deps.market.candles(PAPER, symbol, interval, undefined, undefined, 1)).candles.at(-1);
      if (!now || (last && now.start === last.start && now.trades === last.trades && now.close === last.close)) continue;
      last = now;
      yield now;
    }
  }
}

/** A tape row as the service answers it. */
export const tradeView = (symbol: string, t: TradeRow) => ({
  id: `${symbol}:${t.seq}`,
  seq: t.seq,
  price: plain(t.price),
  qty: plain(t.qty),
  notional: plain(t.notional),
  takerSide: t.taker_side,
  at: t.at.toISOString(),
});
