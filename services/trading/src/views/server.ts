import { type Handlers, toIso } from '@svc/kit';
import type { trading, trading_market } from '@svc/proto';

import type { PriceAlerts } from '../lists/alerts.js';
import type { Journal } from '../lists/journal.js';
import type { AlertRow, JournalRow, WatchlistRow } from '../lists/store.js';
import type { Watchlists } from '../lists/watchlists.js';
import type { OrderRow } from '../orders/store.js';
import { cursorId } from '../orders/trading.js';
import { type MarketFeed, tradeView } from './feed.js';
import type { Market } from './market.js';
import type { OrderTools } from './orders.js';
import type { Performance } from './performance.js';
import type { Portfolio } from './portfolio.js';

type Def = typeof trading.TradingServiceService;

/** gRPC handlers of market data, the portfolio, order tools, watchlists, alerts and the journal. */
export type ViewHandlers = Omit<
  Handlers<Def>,
  | 'listVenues'
  | 'placeOrder'
  | 'getOrder'
  | 'listOrders'
  | 'listFills'
  | 'cancelOrders'
  | 'getAccount'
  | 'resetAccount'
  | 'getBook'
  | 'listLimits'
  | 'setLimits'
  | 'listCredentials'
  | 'setCredentials'
  | 'deleteCredentials'
  | 'listEvents'
  | 'watchEvents'
>;

const trim = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);

function page<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next: string | undefined } {
  const more = rows.length > limit;
  const out = more ? rows.slice(0, limit) : rows;
  return { rows: out, next: more ? Buffer.from(out[out.length - 1]!.id).toString('base64url') : undefined };
}

const watchlist = (w: WatchlistRow): trading_market.Watchlist => ({
  id: w.id,
  name: w.name,
  symbols: w.symbols,
  createdAt: toIso(w.created_at)!,
  updatedAt: toIso(w.updated_at)!,
});

const alert = (a: AlertRow): trading_market.PriceAlert => ({
  id: a.id,
  venue: a.venue,
  symbol: a.symbol,
  condition: a.condition,
  price: trim(a.price),
  note: a.note ?? undefined,
  status: a.status,
  triggeredAt: toIso(a.triggered_at),
  triggeredPrice: a.triggered_price === null ? undefined : trim(a.triggered_price),
  createdAt: toIso(a.created_at)!,
  updatedAt: toIso(a.updated_at)!,
});

const journal = (e: JournalRow): trading_market.JournalEntry => {
  const by = typeof e.created_by === 'string' ? JSON.parse(e.created_by) : e.created_by;
  return {
    id: e.id,
    title: e.title,
    body: e.body,
    symbol: e.symbol ?? undefined,
    orderId: e.order_id ?? undefined,
    tags: e.tags,
    createdByKind: by.kind,
    createdById: by.id,
    createdAt: toIso(e.created_at)!,
    updatedAt: toIso(e.updated_at)!,
  };
};

export function viewHandlers(d: {
  market: Market;
  portfolio: Portfolio;
  orders: OrderTools;
  watchlists: Watchlists;
  alerts: PriceAlerts;
  journal: Journal;
  performance: Performance;
  feed: MarketFeed;
  /** server.ts's order message (passed in: server.ts imports this module's types). */
  toOrder: (r: OrderRow) => trading.Order;
}): ViewHandlers {
  const { market, portfolio, orders, watchlists, alerts, toOrder, feed } = d;
  /** The symbols asked for (each checked), or every symbol of the venue. */
  const symbolsOf = (venue: string, symbols: string[]) =>
    symbols.length ? [...new Set(symbols)].map((s) => market.spec(venue, s).symbol) : market.symbols(venue).map((r) => r.symbol);
  return {
    async listQuotes(req) {
      return { quotes: await Promise.all(symbolsOf(req.venue, req.symbols).map((s) => market.quote(req.venue, s))) };
    },
    async *watchQuotes(req, { signal }) {
      yield* feed.watchQuotes(symbolsOf(req.venue, req.symbols), signal);
    },
    async *watchTrades(req, { signal }) {
      const symbol = market.spec(req.venue, req.symbol).symbol;
      for await (const t of feed.watchTrades(symbol, req.after === undefined ? undefined : Number(req.after), signal)) yield tradeView(symbol, t);
    },
    async *watchBars(req, { signal }) {
      yield* feed.watchBars(
        market.spec(req.venue, req.symbol).symbol,
        req.interval,
        { start: req.start, end: req.end, limit: req.limit || 100 },
        signal,
      );
    },
    async listSymbols(req) {
      return { symbols: market.symbols(req.venue, req.assetClass, req.q) };
    },
    async getSymbol(req) {
      return { symbol: market.rules(market.spec(req.venue, req.symbol)) };
    },
    async getQuote(req) {
      return market.quote(req.venue, req.symbol);
    },
    async listTickers(req) {
      return market.tickers(req.venue);
    },
    async listTrades(req) {
      return market.trades(req.venue, req.symbol, req.limit || 50, req.cursor);
    },
    async getCandles(req) {
      return market.candles(req.venue, req.symbol, req.interval, req.start, req.end, req.limit || 100);
    },
    async getClock(req) {
      return market.clock(req.venue);
    },
    async getFees(req, { principal }) {
      return market.fees(principal.accountId, req.venue);
    },
    async listPositions(req, { principal }) {
      return { positions: await portfolio.positions(principal, req.venue) };
    },
    async getPosition(req, { principal }) {
      return { position: await portfolio.position(principal, req.venue, req.symbol) };
    },
    async closePosition(req, { principal }) {
      return { order: toOrder(await portfolio.close(principal, req.venue, req.symbol, req.qty, req.clientOrderId)) };
    },
    async closeAllPositions(req, { principal }) {
      const r = await portfolio.closeAll(principal, req.venue);
      return { orders: r.orders.map(toOrder), cancelled: r.cancelled.map(toOrder) };
    },
    async getPnl(req, { principal }) {
      return portfolio.pnl(principal, req.venue, req.symbol);
    },
    async getPortfolioHistory(req, { principal }) {
      return portfolio.history(principal, req.venue, req.interval, req.start, req.end);
    },
    async listActivities(req, { principal }) {
      return portfolio.activities(principal, req.venue, req.kind, req.limit || 50, req.cursor);
    },
    async getStats(req, { principal }) {
      return portfolio.stats(principal, req.venue, req.start, req.end);
    },
    async previewOrder(req, { principal }) {
      return orders.preview(principal, req);
    },
    async getBuyingPower(req, { principal }) {
      return orders.buyingPower(principal, req.venue, req.symbol, req.side, req.price);
    },
    async replaceOrder(req, { principal }) {
      const r = await orders.replace(principal, req);
      return { replaced: toOrder(r.replaced), order: toOrder(r.order) };
    },
    async getOrderHistory(req, { principal }) {
      return portfolio.orderHistory(principal, req.id);
    },
    async getOrderByClientId(req, { principal }) {
      return { order: toOrder(await orders.byClientId(principal, req.venue, req.clientOrderId)) };
    },
    async createWatchlist(req, { principal }) {
      return { watchlist: watchlist(await watchlists.create(principal, req.name, req.symbols)) };
    },
    async listWatchlists(req, { principal }) {
      const limit = req.limit || 50;
      const { rows, next } = page(await watchlists.list(principal, cursorId(req.cursor), limit), limit);
      return { watchlists: rows.map(watchlist), nextCursor: next };
    },
    async getWatchlist(req, { principal }) {
      return { watchlist: watchlist(await watchlists.get(principal, req.id)) };
    },
    async renameWatchlist(req, { principal }) {
      return { watchlist: watchlist(await watchlists.rename(principal, req.id, req.name)) };
    },
    async addWatchlistSymbol(req, { principal }) {
      return { watchlist: watchlist(await watchlists.addSymbol(principal, req.id, req.symbol)) };
    },
    async removeWatchlistSymbol(req, { principal }) {
      return { watchlist: watchlist(await watchlists.removeSymbol(principal, req.id, req.symbol)) };
    },
    async deleteWatchlist(req, { principal }) {
      await watchlists.remove(principal, req.id);
      return {};
    },
    async getWatchlistQuotes(req, { principal }) {
      return { id: req.id, quotes: await watchlists.quotes(principal, req.id) };
    },
    async createAlert(req, { principal }) {
      return { alert: alert(await alerts.create(principal, req)) };
    },
    async listAlerts(req, { principal }) {
      const limit = req.limit || 50;
      const { rows, next } = page(
        await alerts.list(principal, { status: req.status, symbol: req.symbol, cursor: cursorId(req.cursor) }, limit),
        limit,
      );
      return { alerts: rows.map(alert), nextCursor: next };
    },
    async getAlert(req, { principal }) {
      return { alert: alert(await alerts.get(principal, req.id)) };
    },
    async updateAlert(req, { principal }) {
      return { alert: alert(await alerts.update(principal, req.id, req)) };
    },
    async deleteAlert(req, { principal }) {
      await alerts.remove(principal, req.id);
      return {};
    },
    async createJournalEntry(req, { principal }) {
      return { entry: journal(await d.journal.create(principal, req)) };
    },
    async listJournal(req, { principal }) {
      const limit = req.limit || 50;
      const { rows, next } = page(
        await d.journal.list(principal, { symbol: req.symbol, tag: req.tag, orderId: req.orderId, cursor: cursorId(req.cursor) }, limit),
        limit,
      );
      return { entries: rows.map(journal), nextCursor: next };
    },
    async listJournalTags(_req, { principal }) {
      const tags = await d.journal.tags(principal);
      return { tags: tags.map((t) => ({ tag: t.tag, entries: Number(t.entries), lastUsedAt: toIso(t.last_used_at)! })) };
    },
    async getJournalEntry(req, { principal }) {
      return { entry: journal(await d.journal.get(principal, req.id)) };
    },
    async updateJournalEntry(req, { principal }) {
      return {
        entry: journal(await d.journal.update(principal, req.id, { title: req.title, body: req.body, tags: req.setTags ? req.tags : undefined })),
      };
    },
    async getPerformance(req, { principal }) {
      return d.performance.performance(principal, req.venue);
    },
    async getAllocation(req, { principal }) {
      return d.performance.allocation(principal, req.venue);
    },
    async getFill(req, { principal }) {
      const f = await d.performance.fill(principal, req.id);
      return {
        id: f.id,
        orderId: f.order_id,
        venue: f.venue,
        symbol: f.symbol,
        side: f.side,
        price: trim(f.price),
        qty: trim(f.qty),
        notional: trim(f.notional),
        fee: trim(f.fee),
        liquidity: f.liquidity,
        createdAt: toIso(f.created_at)!,
      };
    },
    async deleteJournalEntry(req, { principal }) {
      await d.journal.remove(principal, req.id);
      return {};
    },
  };
}
