import { z } from 'zod';

import { ListQuery, Nullable, route, StreamHeaders } from '../../route.js';
import {
  ClientOrderId,
  DecimalInput,
  oneSize,
  PlaceOrderFields,
  TRADING_SIDES,
  TRADING_TIMES_IN_FORCE,
  TradingOrder,
  TradingSymbol,
  VenueId,
} from '../../schemas/trading.js';
import { INTERVALS, OrderPreview, SymbolRules, TradingCandle, TradingQuote, TradingTicker, TradingTrade } from '../../schemas/trading-market.js';
import { OrderId, orderJson } from './trading.js';

/**
 * Trading's market data and order tools (docs/trading.md, "Market data" and "Before and after an
 * order"): the paper venue's symbols and rules, quotes, tickers, trades, candles, clock and fees;
 * an order preview, buying power, replacing an open order, an order by client order id and an
 * order's history.
 */

const common = { tag: 'trading', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const Venue = VenueId.default('paper').describe('The venue (default `paper`, the one with market data).');
const SymbolQuery = z.object({ venue: Venue, symbol: TradingSymbol.describe('The symbol, e.g. `BTC/USD` or `AAPL`.') });
const Iso = z.iso.datetime();

export const tradingMarketRoutes = [
  route({
    ...common,
    id: 'trading.symbols.list',
    method: 'get',
    path: '/trading/symbols',
    summary: "A venue's symbols with their trading rules: tick and lot size, minimum quantity and notional, fees, asset class.",
    errors: ['unknown_venue'],
    query: z.object({
      venue: Venue,
      assetClass: z.enum(['crypto', 'equity']).optional().describe('Only this asset class.'),
      q: z.string().max(20).optional().describe('Only symbols containing this text (case-insensitive).'),
    }),
    response: z.object({ symbols: z.array(SymbolRules) }).meta({ id: 'TradingSymbolList' }),
    handler: { rpc: 'trading.listSymbols', request: (i) => ({ venue: i.query.venue, assetClass: i.query.assetClass, q: i.query.q }) },
  }),
  route({
    ...common,
    id: 'trading.symbols.get',
    method: 'get',
    path: '/trading/symbols/:symbol',
    summary: "One symbol's trading rules (URL-encode a slash: `BTC%2FUSD`).",
    errors: ['unknown_symbol'],
    params: z.object({ symbol: TradingSymbol.describe('The symbol, e.g. `ETH/USD`.') }),
    query: z.object({ venue: Venue }),
    response: SymbolRules,
    handler: { rpc: 'trading.getSymbol', request: (i) => ({ venue: i.query.venue, symbol: i.params.symbol }), response: (r) => r.symbol! },
  }),
  route({
    ...common,
    id: 'trading.quote',
    method: 'get',
    path: '/trading/quote',
    summary: 'A quote: best bid and ask with their sizes, mid, spread, last trade and reference price.',
    query: SymbolQuery,
    response: TradingQuote,
    handler: { rpc: 'trading.getQuote', request: (i) => ({ venue: i.query.venue, symbol: i.query.symbol }) },
  }),
  route({
    ...common,
    id: 'trading.tickers',
    method: 'get',
    path: '/trading/tickers',
    summary: "Every symbol's last price and 24-hour statistics (open, high, low, volume, trades, change).",
    query: z.object({ venue: Venue }),
    response: z
      .object({ tickers: z.array(TradingTicker), since: z.string().describe('Start of the 24-hour window.') })
      .meta({ id: 'TradingTickerList' }),
    handler: { rpc: 'trading.listTickers', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.quotes',
    method: 'get',
    path: '/trading/quotes',
    summary:
      "Quotes of the paper venue's symbols (every one, or `symbols`): best bid and ask (the market maker's quotes and resting orders) with their sizes, mid, spread, last trade and reference price. With Accept: text/event-stream, a live stream: each quote now, then again whenever it changes.",
    errors: ['unknown_symbol'],
    query: z.object({
      venue: Venue,
      symbols: z
        .string()
        .max(200)
        .regex(/^[A-Za-z0-9./-]{1,20}(,[A-Za-z0-9./-]{1,20}){0,19}$/, 'must be up to 20 symbols separated by commas, such as "BTC/USD,AAPL"')
        .optional()
        .describe('Comma-separated symbols (default: every symbol of the venue).'),
    }),
    response: z.object({ quotes: z.array(TradingQuote) }).meta({ id: 'TradingQuoteList' }),
    events: {
      schema: TradingQuote,
      description: 'Each quote as `data` (event `quote`) when it changes; no id: a stream taken again starts from the quotes as they are.',
    },
    handler: { kind: 'local', name: 'trading.quotes' },
  }),
  route({
    ...common,
    id: 'trading.trades',
    method: 'get',
    path: '/trading/trades',
    summary:
      "A paper book's recent trades (the tape, every account's, anonymous), newest first. With Accept: text/event-stream, a live stream: the trades after `after` or Last-Event-ID (default: from now), oldest first, then each as it happens, with no gap and no repeat.",
    query: ListQuery.extend(SymbolQuery.shape).extend({
      after: z.coerce.number().int().min(0).optional().describe('With the stream: the trades with a greater `seq` first (default: only new ones).'),
    }),
    headers: StreamHeaders,
    response: z.object({ trades: z.array(TradingTrade), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingTradeList' }),
    events: { schema: TradingTrade, description: 'Each trade as `data` (event `trade`), its `seq` as `id`.' },
    handler: { kind: 'local', name: 'trading.trades' },
  }),
  route({
    ...common,
    id: 'trading.bars',
    method: 'get',
    path: '/trading/bars',
    summary:
      "OHLCV bars of a paper book's trades at an interval, oldest first (Alpaca's name for candles; intervals without trades are left out). With Accept: text/event-stream, a live stream: the bars, then the latest one again whenever a trade changes it or starts the next.",
    query: SymbolQuery.extend({
      interval: z.enum(INTERVALS).default('1m').describe('Bar length.'),
      start: Iso.optional().describe('From (ISO 8601); default `limit` intervals before `end`.'),
      end: Iso.optional().describe('Until (ISO 8601); default now (a stream with `end` ends after the bars).'),
      limit: z.coerce.number().int().min(1).max(1000).default(100).describe('At most this many bars (the latest).'),
    }),
    headers: z.object({
      'last-event-id': z
        .string()
        .regex(/^\d{1,15}$/, 'must be a bar start in milliseconds')
        .optional()
        .describe('For the live stream: the start (ms) of the last bar you have; the stream resumes after it.'),
    }),
    response: z.object({ symbol: z.string(), interval: z.string(), bars: z.array(TradingCandle) }).meta({ id: 'TradingBars' }),
    events: {
      schema: TradingCandle,
      description:
        'Each bar as `data` (event `bar`), its start in milliseconds as `id`; a bar comes again when it changes (keep the latest per start).',
    },
    handler: { kind: 'local', name: 'trading.bars' },
  }),
  route({
    ...common,
    id: 'trading.candles',
    method: 'get',
    path: '/trading/candles',
    summary: "OHLCV candles of a paper book's trades at an interval (intervals without trades are left out).",
    query: SymbolQuery.extend({
      interval: z.enum(INTERVALS).default('1h').describe('Candle length.'),
      start: Iso.optional().describe('From (ISO 8601); default `limit` intervals before `end`.'),
      end: Iso.optional().describe('Until (ISO 8601); default now.'),
      limit: z.coerce.number().int().min(1).max(1000).default(100).describe('At most this many candles (the latest).'),
    }),
    response: z.object({ symbol: z.string(), interval: z.string(), candles: z.array(TradingCandle) }).meta({ id: 'TradingCandles' }),
    handler: {
      rpc: 'trading.getCandles',
      request: (i) => ({
        venue: i.query.venue,
        symbol: i.query.symbol,
        interval: i.query.interval,
        start: i.query.start,
        end: i.query.end,
        limit: i.query.limit,
      }),
    },
  }),
  route({
    ...common,
    id: 'trading.clock',
    method: 'get',
    path: '/trading/clock',
    summary: "A venue's clock: whether it trades now, its session, and when day orders next expire (midnight UTC).",
    query: z.object({ venue: Venue }),
    response: z
      .object({
        venue: z.string(),
        now: z.string(),
        isOpen: z.boolean(),
        session: z.string().describe('`continuous`: the paper venue trades around the clock (extended hours for equities).'),
        nextDayRollover: z.string().describe('When `day` orders expire next.'),
        timezone: z.string(),
        equitiesOpen: z.boolean().describe("Whether the equities' regular session is open now (between its opening and closing auctions)."),
        nextOpen: z.string().describe('The next opening auction, where `opg` orders trade.'),
        nextClose: z.string().describe('The next closing auction, where `cls` orders trade.'),
      })
      .meta({ id: 'TradingClock' }),
    handler: { rpc: 'trading.getClock', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.fees',
    method: 'get',
    path: '/trading/fees',
    summary: "The venue's fee schedule (maker and taker basis points) and the fees the acting account paid in the last 30 days.",
    query: z.object({ venue: Venue }),
    response: z
      .object({
        venue: z.string(),
        makerBps: z.number().int(),
        takerBps: z.number().int(),
        currency: z.string(),
        feesPaid30d: z.string(),
        notional30d: z.string(),
        fills30d: z.number().int(),
      })
      .meta({ id: 'TradingFees' }),
    handler: { rpc: 'trading.getFees', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.orders.preview',
    method: 'post',
    effect: 'reads',
    path: '/trading/orders/preview',
    summary:
      'Preview an order without placing it: what would fill now walking the book, at what average price, the fees, and whether the balance covers it.',
    body: PlaceOrderFields.omit({ clientOrderId: true }).superRefine(oneSize).meta({ id: 'PreviewOrder' }),
    response: OrderPreview,
    handler: {
      rpc: 'trading.previewOrder',
      request: (i) => ({
        venue: i.body.venue,
        symbol: i.body.symbol,
        side: i.body.side,
        type: i.body.type,
        qty: i.body.qty ?? '',
        notional: i.body.notional,
        price: i.body.price,
        stopPrice: i.body.stopPrice,
        timeInForce: i.body.timeInForce,
      }),
      response: (r) => ({ ...r, side: r.side as 'buy' | 'sell' }),
    },
  }),
  route({
    ...common,
    id: 'trading.buyingPower',
    method: 'get',
    path: '/trading/buying-power',
    summary: 'The largest quantity of a symbol the available balance can buy now (walking the asks, or at a price) or sell.',
    query: SymbolQuery.extend({
      side: z.enum(TRADING_SIDES).default('buy').describe('buy (default) or sell.'),
      price: DecimalInput.optional().describe('Price to buy at (default: walk the book as a market order).'),
    }),
    response: z
      .object({
        venue: z.string(),
        symbol: z.string(),
        side: z.string(),
        asset: z.string().describe('The asset spent (buy) or sold.'),
        available: z.string(),
        maxQty: z.string().describe('A multiple of the lot size; fees included.'),
        price: z.string().optional(),
      })
      .meta({ id: 'TradingBuyingPower' }),
    handler: {
      rpc: 'trading.getBuyingPower',
      request: (i) => ({ venue: i.query.venue, symbol: i.query.symbol, side: i.query.side, price: i.query.price }),
    },
  }),
  route({
    ...common,
    id: 'trading.orders.replace',
    method: 'post',
    effect: 'overwrites',
    outside: true,
    path: '/trading/orders/:id/replace',
    summary:
      'Replace an open paper order with a changed one (quantity, prices, time in force), in one transaction: the old one is cancelled (its fills stay) and the new one placed; if the new one is refused, the old one stays open.',
    errors: ['insufficient_balance', 'not_found', 'order_not_open'],
    params: z.object({ id: OrderId }),
    body: z
      .object({
        qty: DecimalInput.optional().describe("New quantity (default: the old order's unfilled rest)."),
        price: DecimalInput.optional().describe('New limit price.'),
        stopPrice: DecimalInput.optional().describe('New stop price.'),
        timeInForce: z.enum(TRADING_TIMES_IN_FORCE).optional().describe('A new time in force (default: unchanged).'),
        clientOrderId: ClientOrderId.optional().describe("The new order's client order id (default: generated)."),
      })
      .meta({ id: 'ReplaceOrder' }),
    response: z.object({ replaced: TradingOrder, order: TradingOrder }).meta({ id: 'ReplacedOrder' }),
    status: 201,
    handler: {
      rpc: 'trading.replaceOrder',
      request: (i) => ({ id: i.params.id, ...i.body }),
      response: (r) => ({ replaced: orderJson(r.replaced!), order: orderJson(r.order!) }),
    },
  }),
  route({
    ...common,
    id: 'trading.orders.history',
    method: 'get',
    path: '/trading/orders/:id/history',
    summary: "An order's life, oldest first: placed, each fill with the filled quantity after it, and how it ended.",
    errors: ['not_found'],
    params: z.object({ id: OrderId }),
    response: z
      .object({
        orderId: z.string(),
        events: z.array(
          z
            .object({
              at: z.string(),
              kind: z.string().describe('`placed`, `fill`, or the final status.'),
              status: z.string().describe('The order status after the event.'),
              qty: z.string().optional(),
              price: z.string().optional(),
              filledQty: z.string(),
              fillId: z.string().optional(),
              reason: z.string().optional(),
            })
            .meta({ id: 'TradingOrderEvent' }),
        ),
      })
      .meta({ id: 'TradingOrderHistory' }),
    handler: { rpc: 'trading.getOrderHistory', request: (i) => ({ id: i.params.id }) },
  }),
  route({
    ...common,
    id: 'trading.orders.byClientId',
    method: 'get',
    path: '/trading/client-orders/:clientOrderId',
    summary: 'One order of the acting account by its client order id at a venue.',
    errors: ['not_found'],
    params: z.object({ clientOrderId: ClientOrderId }),
    query: z.object({ venue: Venue }),
    response: TradingOrder,
    handler: {
      rpc: 'trading.getOrderByClientId',
      request: (i) => ({ venue: i.query.venue, clientOrderId: i.params.clientOrderId }),
      response: (r) => orderJson(r.order!),
    },
  }),
];
