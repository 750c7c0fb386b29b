import { z } from 'zod';

import { visibleName } from '@svc/kit';

import { DecimalInput, TRADING_SIDES } from './trading.js';

/**
 * Schemas of trading's market data, portfolio, order tools, watchlists, price alerts and journal
 * (docs/trading.md). Decimals are strings without trailing zeros; a field that does not apply is
 * left out.
 */

const dec = (what: string) => z.string().describe(what);
const opt = (what: string) => z.string().optional().describe(what);

export const SymbolRules = z
  .object({
    venue: z.string(),
    symbol: z.string(),
    base: z.string().describe('The asset bought and sold.'),
    quote: z.string().describe('The asset prices are in.'),
    assetClass: z.enum(['crypto', 'equity']),
    tickSize: dec('Price increment.'),
    lotSize: dec('Quantity increment.'),
    minQty: dec('The smallest order quantity.'),
    minNotional: dec('The smallest order notional at the starting reference price, in the quote asset.'),
    fractional: z.boolean().describe('Whether quantities below 1 are allowed.'),
    makerFeeBps: z.number().int().describe('Fee of a fill that rested on the book, in basis points.'),
    takerFeeBps: z.number().int().describe('Fee of a fill that took liquidity, in basis points.'),
    tradable: z.boolean(),
  })
  .meta({ id: 'TradingSymbolRules' });

export const TradingQuote = z
  .object({
    venue: z.string(),
    symbol: z.string(),
    bid: opt('Best bid price.'),
    bidQty: opt('Quantity at the best bid.'),
    ask: opt('Best ask price.'),
    askQty: opt('Quantity at the best ask.'),
    mid: opt('Halfway between bid and ask.'),
    spread: opt('Ask minus bid.'),
    spreadBps: z.number().optional().describe('The spread in basis points of the mid.'),
    last: dec('Last trade price.'),
    reference: dec("The market maker's reference price."),
    at: z.string().describe('When the quote was taken (ISO 8601).'),
  })
  .meta({ id: 'TradingQuote' });

export const TradingTicker = z
  .object({
    symbol: z.string(),
    last: dec('Last trade price.'),
    open: opt('First trade price of the last 24 hours.'),
    high: opt('Highest trade price of the last 24 hours.'),
    low: opt('Lowest trade price of the last 24 hours.'),
    volume: dec('Quantity traded in the last 24 hours.'),
    notional: dec('Notional traded in the last 24 hours, in the quote asset.'),
    trades: z.number().int().describe('Trades in the last 24 hours.'),
    change: opt('Last minus open, over 24 hours.'),
    changePct: z.number().optional().describe('The change in percent of the open.'),
  })
  .meta({ id: 'TradingTicker' });

export const TradingTrade = z
  .object({
    id: z.string().describe('`<symbol>:<match sequence>`.'),
    seq: z.number().int().describe("The book's match sequence: the tape's order (with gaps), what a stream resumes after."),
    price: z.string(),
    qty: z.string(),
    notional: z.string(),
    takerSide: z.enum(TRADING_SIDES).describe('The side that took liquidity.'),
    at: z.string(),
  })
  .meta({ id: 'TradingTrade' });

export const TradingCandle = z
  .object({
    start: z.string().describe('Start of the interval (ISO 8601).'),
    open: z.string(),
    high: z.string(),
    low: z.string(),
    close: z.string(),
    volume: dec('Quantity traded.'),
    notional: dec('Notional traded.'),
    trades: z.number().int(),
  })
  .meta({ id: 'TradingCandle' });

export const INTERVALS = ['1m', '5m', '15m', '1h', '4h', '1d'] as const;

export const PositionDetail = z
  .object({
    symbol: z.string(),
    qty: dec('Quantity held.'),
    avgCost: dec('Average cost per unit (average-cost method, fees apart).'),
    costBasis: dec('What the held quantity cost.'),
    markPrice: dec("The book's last trade price."),
    marketValue: dec('Quantity at the mark price.'),
    unrealizedPnl: dec('Market value minus cost basis.'),
    unrealizedPnlPct: z.number().optional().describe('Unrealised P&L in percent of the cost basis.'),
    realizedPnl: dec('P&L of what was sold since the last reset (fees apart).'),
  })
  .meta({ id: 'TradingPositionDetail' });

export const PnlRow = z
  .object({
    symbol: z.string(),
    realized: z.string(),
    unrealized: z.string(),
    fees: z.string(),
    total: dec('Realised plus unrealised, less fees.'),
    boughtQty: z.string(),
    soldQty: z.string(),
  })
  .meta({ id: 'TradingPnlRow' });

export const TradingPnl = z
  .object({
    symbols: z.array(PnlRow),
    realized: z.string(),
    unrealized: z.string(),
    fees: z.string(),
    total: z.string(),
    currency: z.string(),
    since: z.string().describe('The last reset (or opening) of the paper account: P&L counts from there.'),
  })
  .meta({ id: 'TradingPnl' });

export const EquityPoint = z
  .object({ at: z.string(), equity: z.string(), cash: z.string(), positionsValue: z.string() })
  .meta({ id: 'TradingEquityPoint' });

export const TradingActivity = z
  .object({
    id: z.string(),
    kind: z.enum(['fill', 'reset']),
    at: z.string(),
    symbol: z.string().optional(),
    side: z.enum(TRADING_SIDES).optional(),
    qty: z.string().optional(),
    price: z.string().optional(),
    cashDelta: dec('Cash moved: a buy pays notional and fee (negative), a sell receives notional less the fee.'),
    fee: z.string(),
    orderId: z.string().optional(),
    epoch: z.number().int().describe('The paper account epoch (0 until the first reset).'),
  })
  .meta({ id: 'TradingActivity' });

export const DayStats = z
  .object({
    day: z.string().describe('UTC day (YYYY-MM-DD), or `total`.'),
    ordersPlaced: z.number().int(),
    ordersFilled: z.number().int(),
    ordersCancelled: z.number().int(),
    ordersOther: z.number().int().describe('Rejected or expired.'),
    fills: z.number().int(),
    buyNotional: z.string(),
    sellNotional: z.string(),
    fees: z.string(),
  })
  .meta({ id: 'TradingDayStats' });

export const OrderPreview = z
  .object({
    venue: z.string(),
    symbol: z.string(),
    side: z.enum(TRADING_SIDES),
    type: z.string(),
    qty: z.string(),
    fillableQty: dec('What would fill now, walking the book.'),
    restingQty: dec('What would rest on the book (a gtc or day limit order).'),
    avgPrice: opt('Average price of the fillable part.'),
    worstPrice: opt('The last price level it would reach.'),
    notional: dec('Notional of the fillable part.'),
    fees: dec('Taker fees of the fillable part.'),
    total: dec('A buy: notional plus fees; a sell: notional less fees.'),
    asset: dec('The asset the order spends or holds.'),
    required: dec('What the order would need of that asset (holds of the resting part included).'),
    available: dec('What the account has available of it.'),
    balanceOk: z.boolean(),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'TradingOrderPreview' });

export const Watchlist = z
  .object({ id: z.string(), name: z.string(), symbols: z.array(z.string()), createdAt: z.string(), updatedAt: z.string() })
  .meta({ id: 'TradingWatchlist' });

export const WatchlistName = visibleName(z.string().trim().min(1).max(100)).describe('1 to 100 characters, unique in the account.');

export const PriceAlert = z
  .object({
    id: z.string(),
    venue: z.string(),
    symbol: z.string(),
    condition: z.enum(['above', 'below']),
    price: z.string(),
    note: z.string().optional(),
    status: z.enum(['active', 'triggered']),
    triggeredAt: z.string().optional(),
    triggeredPrice: z.string().optional().describe('The reference price that triggered it.'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'TradingPriceAlert' });

export const AlertPrice = DecimalInput.describe('The price to compare the reference price with, a multiple of the tick size.');

export const JournalEntry = z
  .object({
    id: z.string(),
    title: z.string(),
    body: z.string(),
    symbol: z.string().optional(),
    orderId: z.string().optional(),
    tags: z.array(z.string()),
    createdBy: z.object({ kind: z.string(), id: z.string() }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'TradingJournalEntry' });

export const JournalTag = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, 'must be 1 to 40 of a-z, 0-9, _ and -')
  .describe('A tag: 1 to 40 of a-z, 0-9, _ and -.');
