import { z } from 'zod';

import { ListQuery, Nullable, prefixedId, route } from '../../route.js';
import { ClientOrderId, DecimalInput, TradingFill, TradingOrder, TradingSymbol, VenueId } from '../../schemas/trading.js';
import { DayStats, EquityPoint, INTERVALS, PositionDetail, TradingActivity, TradingPnl } from '../../schemas/trading-market.js';
import { orderJson } from './trading.js';

const FillId = prefixedId('fill', 'a fill id');

/**
 * The acting account's paper portfolio (docs/trading.md, "Portfolio"): positions with cost and
 * P&L, closing them, P&L per symbol, equity history, the activity ledger and daily statistics.
 */

const common = { tag: 'trading', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const Venue = VenueId.default('paper').describe('The venue (default `paper`, the one with portfolio views).');
const VenueQuery = z.object({ venue: Venue });
const SymbolParam = z.object({ symbol: TradingSymbol.describe('The symbol (URL-encode a slash: `BTC%2FUSD`).') });
const Iso = z.iso.datetime();

export const tradingPortfolioRoutes = [
  route({
    ...common,
    id: 'trading.positions.list',
    method: 'get',
    path: '/trading/positions',
    summary: "The acting account's open positions with average cost, cost basis, market value, and realised and unrealised P&L.",
    query: VenueQuery,
    response: z.object({ positions: z.array(PositionDetail) }).meta({ id: 'TradingPositionList' }),
    handler: { rpc: 'trading.listPositions', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.positions.get',
    method: 'get',
    path: '/trading/positions/:symbol',
    summary: 'One open position of the acting account (404 `position_not_found` when none).',
    errors: ['position_not_found'],
    params: SymbolParam,
    query: VenueQuery,
    response: PositionDetail,
    handler: { rpc: 'trading.getPosition', request: (i) => ({ venue: i.query.venue, symbol: i.params.symbol }), response: (r) => r.position! },
  }),
  route({
    ...common,
    id: 'trading.positions.close',
    method: 'post',
    effect: 'deletes',
    outside: true,
    path: '/trading/positions/:symbol/close',
    summary: 'Close a position (or part of it) with a market sell order; the order answers as placed. Agents stay within their limits.',
    errors: ['position_not_found'],
    params: SymbolParam,
    body: z
      .object({
        venue: Venue,
        qty: DecimalInput.optional().describe('How much to sell (default: all that open orders do not hold).'),
        clientOrderId: ClientOrderId.optional().describe('Client order id of the sell order (a retry answers the same order).'),
      })
      .meta({ id: 'ClosePosition' }),
    response: TradingOrder,
    status: 201,
    handler: {
      rpc: 'trading.closePosition',
      request: (i) => ({ venue: i.body.venue, symbol: i.params.symbol, qty: i.body.qty, clientOrderId: i.body.clientOrderId }),
      response: (r) => orderJson(r.order!),
    },
  }),
  route({
    ...common,
    id: 'trading.positions.closeAll',
    method: 'post',
    effect: 'deletes',
    outside: true,
    path: '/trading/positions/close-all',
    summary: 'Flatten the paper account: cancel its open orders, then sell every position at market.',
    body: z.object({ venue: Venue }).meta({ id: 'CloseAllPositions' }),
    response: z
      .object({
        orders: z.array(TradingOrder).describe('The sell orders placed.'),
        cancelled: z.array(TradingOrder).describe('The open orders cancelled first.'),
      })
      .meta({ id: 'ClosedPositions' }),
    handler: {
      rpc: 'trading.closeAllPositions',
      request: (i) => ({ venue: i.body.venue }),
      response: (r) => ({ orders: r.orders.map(orderJson), cancelled: r.cancelled.map(orderJson) }),
    },
  }),
  route({
    ...common,
    id: 'trading.pnl',
    method: 'get',
    path: '/trading/pnl',
    summary: 'Realised and unrealised P&L and fees per symbol since the last reset (average-cost method), with totals.',
    query: VenueQuery.extend({ symbol: TradingSymbol.optional().describe('Only this symbol.') }),
    response: TradingPnl,
    handler: { rpc: 'trading.getPnl', request: (i) => ({ venue: i.query.venue, symbol: i.query.symbol }) },
  }),
  route({
    ...common,
    id: 'trading.portfolio.history',
    method: 'get',
    path: '/trading/portfolio/history',
    summary: "The paper account's equity (cash plus positions) at each interval since its last reset; at most 1000 points.",
    query: VenueQuery.extend({
      interval: z.enum(INTERVALS).default('1h').describe('The time between two points of the history (default 1h).'),
      start: Iso.optional().describe('From (ISO 8601); default the last reset.'),
      end: Iso.optional().describe('Until (ISO 8601); default now.'),
    }),
    response: z.object({ points: z.array(EquityPoint), startingCash: z.string(), interval: z.string() }).meta({ id: 'TradingPortfolioHistory' }),
    handler: {
      rpc: 'trading.getPortfolioHistory',
      request: (i) => ({ venue: i.query.venue, interval: i.query.interval, start: i.query.start, end: i.query.end }),
    },
  }),
  route({
    ...common,
    id: 'trading.activities',
    method: 'get',
    path: '/trading/activities',
    summary: "The paper account's ledger, newest first: each fill with the cash it moved and its fee, and resets.",
    query: ListQuery.extend({ venue: Venue, kind: z.enum(['fill', 'reset']).optional().describe('Only this kind.') }),
    response: z.object({ activities: z.array(TradingActivity), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingActivityList' }),
    handler: {
      rpc: 'trading.listActivities',
      request: (i) => ({ venue: i.query.venue, kind: i.query.kind, limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({
        activities: r.activities.map((a) => ({ ...a, kind: a.kind as 'fill' | 'reset', side: a.side as 'buy' | 'sell' | undefined })),
        nextCursor: r.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'trading.stats',
    method: 'get',
    path: '/trading/stats',
    summary: 'Trading statistics per UTC day: orders placed, filled, cancelled, fills, buy and sell notional, fees; with totals.',
    query: VenueQuery.extend({
      start: Iso.optional().describe('From (ISO 8601); default 30 days before `end`.'),
      end: Iso.optional().describe('Until (ISO 8601); default now.'),
    }),
    response: z.object({ days: z.array(DayStats), totals: DayStats }).meta({ id: 'TradingStats' }),
    handler: {
      rpc: 'trading.getStats',
      request: (i) => ({ venue: i.query.venue, start: i.query.start, end: i.query.end }),
      response: (r) => ({ days: r.days, totals: r.totals! }),
    },
  }),
  route({
    ...common,
    id: 'trading.performance',
    method: 'get',
    path: '/trading/performance',
    summary:
      'How the paper account has done since its last reset: total return, maximum drawdown of equity, closing trades won and lost (win rate, best, worst, fees included), fees and turnover.',
    errors: ['unknown_venue'],
    query: VenueQuery,
    response: z
      .object({
        since: z.string().describe('The last reset (or opening) of the paper account.'),
        startingCash: z.string(),
        equity: z.string(),
        totalReturn: z.string().describe('Equity minus starting cash.'),
        totalReturnPct: z.number(),
        maxDrawdown: z
          .string()
          .describe('The largest fall of equity from a peak (equity after each fill, positions at the last fill prices; now at the market).'),
        maxDrawdownPct: z.number().describe('That fall in percent of the peak.'),
        closingTrades: z.number().int().describe('Sell fills: each realises P&L against the average cost.'),
        winningTrades: z.number().int(),
        losingTrades: z.number().int(),
        winRate: z.number().optional().describe('Winning / closing trades, 0 to 1.'),
        bestTrade: z.string().optional().describe("The best closing trade's realised P&L less its fee."),
        worstTrade: z.string().optional(),
        fees: z.string(),
        turnover: z.string().describe('Notional bought and sold.'),
      })
      .meta({ id: 'TradingPerformance' }),
    handler: { rpc: 'trading.getPerformance', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.portfolio.allocation',
    method: 'get',
    path: '/trading/portfolio/allocation',
    summary: "Where the paper account's equity is: cash and each position at market value, with weights, largest first.",
    query: VenueQuery,
    response: z
      .object({
        equity: z.string(),
        rows: z.array(
          z
            .object({
              asset: z.string(),
              symbol: z.string().describe('Empty for cash.'),
              value: z.string(),
              weightPct: z.number().describe('Percent of equity.'),
            })
            .meta({ id: 'TradingAllocationRow' }),
        ),
        cashPct: z.number(),
        largest: z.string().optional().describe('The largest position.'),
        largestPct: z.number(),
      })
      .meta({ id: 'TradingAllocation' }),
    handler: { rpc: 'trading.getAllocation', request: (i) => ({ venue: i.query.venue }) },
  }),
  route({
    ...common,
    id: 'trading.fill',
    method: 'get',
    path: '/trading/fills/:id',
    summary: 'One fill (an execution of an order) of the acting account: price, quantity, fee and its order.',
    errors: ['not_found'],
    params: z.object({ id: FillId }),
    response: TradingFill,
    handler: {
      rpc: 'trading.getFill',
      request: (i) => ({ id: i.params.id }),
      response: (f) => ({ ...f, side: f.side as 'buy' | 'sell', liquidity: f.liquidity as 'maker' | 'taker' }),
    },
  }),
];
