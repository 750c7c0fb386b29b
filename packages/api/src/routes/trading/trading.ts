import { z } from 'zod';

import type { trading } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, reply, route, StreamHeaders, Success } from '../../route.js';
import {
  ClientOrderId,
  PlacedTradingOrder,
  PlaceOrderBody,
  SetTradingLimitsBody,
  SetVenueCredentialsBody,
  type TRADING_EVENT_TYPES,
  type TRADING_ORDER_CLASSES,
  TRADING_SIDES,
  TRADING_STATUSES,
  TradingAccount,
  TradingBook,
  TradingEvent,
  TradingFill,
  TradingLimits,
  TradingOrder,
  TradingSymbol,
  TradingVenue,
  VenueCredential,
  VenueId,
} from '../../schemas/trading.js';

/**
 * Trading (docs/trading.md): venues, orders, fills, accounts at a venue, the paper venue's books,
 * agents' limits and venue credentials. Orders and fills are the acting account's; another
 * account's order answers 404.
 */

export const OrderId = prefixedId('ord', 'an order id');

export const orderJson = (o: trading.Order) => ({
  id: o.id,
  clientOrderId: o.clientOrderId,
  venue: o.venue,
  symbol: o.symbol,
  side: o.side as (typeof TRADING_SIDES)[number],
  type: o.type as z.infer<typeof TradingOrder>['type'],
  timeInForce: o.timeInForce as z.infer<typeof TradingOrder>['timeInForce'],
  qty: o.qty,
  notional: o.notional ?? null,
  price: o.price ?? null,
  stopPrice: o.stopPrice ?? null,
  filledQty: o.filledQty,
  avgFillPrice: o.avgFillPrice ?? null,
  filledNotional: o.filledNotional,
  fees: o.fees,
  status: o.status as (typeof TRADING_STATUSES)[number],
  reason: o.reason ?? null,
  placedBy: { kind: o.placedBy?.kind ?? '', id: o.placedBy?.id ?? '' },
  externalId: o.externalId ?? null,
  createdAt: o.createdAt,
  updatedAt: o.updatedAt,
  orderClass: (o.orderClass || 'simple') as (typeof TRADING_ORDER_CLASSES)[number],
  parentOrderId: o.parentOrderId ?? null,
  linkedOrderId: o.linkedOrderId ?? null,
  trailPrice: o.trailPrice ?? null,
  trailPercent: o.trailPercent ?? null,
  hwm: o.hwm ?? null,
});

/** An order update as the API answers it (the list and the stream). */
export const tradingEventJson = (e: trading.TradingEvent): z.infer<typeof TradingEvent> => ({
  seq: Number(e.seq),
  id: e.id,
  type: e.type as (typeof TRADING_EVENT_TYPES)[number],
  venue: e.venue,
  symbol: e.symbol ?? null,
  createdAt: e.createdAt,
  order: e.order ? orderJson(e.order) : null,
  fill: e.fill ? { ...e.fill, liquidity: e.fill.liquidity as 'maker' | 'taker' } : null,
  replacedBy: e.replacedBy ?? null,
  balances: e.hasBalances ? e.balances : null,
});

const accountJson = (a: trading.GetAccountResponse) => ({
  venue: a.venue,
  currency: a.currency,
  cash: a.cash,
  equity: a.equity,
  startingCash: a.startingCash ?? null,
  balances: a.balances,
  positions: a.positions,
  openOrders: a.openOrders.map(orderJson),
});

const limitsJson = (l: trading.AgentLimits) => ({
  agentId: l.agentId,
  maxNotionalPerOrder: l.maxNotionalPerOrder ?? null,
  maxNotionalPerDay: l.maxNotionalPerDay ?? null,
  symbols: l.allSymbols ? null : l.symbols,
  paperOnly: l.paperOnly,
  usedToday: l.usedToday,
  setBy: l.setBy ? { kind: l.setBy.kind, id: l.setBy.id } : null,
  updatedAt: l.updatedAt ?? null,
});

const credentialJson = (c: trading.Credential) => ({
  venue: c.venue,
  keyId: c.keyId,
  secretLast4: c.secretLast4,
  setBy: { kind: c.setBy?.kind ?? '', id: c.setBy?.id ?? '' },
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

const common = { tag: 'trading', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const VenueBody = z.object({ venue: VenueId.default('paper') });

export const tradingRoutes = [
  route({
    ...common,
    id: 'trading.venues',
    method: 'get',
    path: '/trading/venues',
    summary: 'The venues, each with its capabilities (order types, time in force), instruments, and whether it is paper or live.',
    response: z.object({ venues: z.array(TradingVenue) }).meta({ id: 'TradingVenueList' }),
    handler: {
      rpc: 'trading.listVenues',
      request: () => ({}),
      response: (res) => ({
        venues: res.venues.map((v) => ({
          id: v.id,
          name: v.name,
          mode: v.mode as 'paper' | 'live',
          capabilities: v.capabilities!,
          instruments: v.instruments.length ? v.instruments : null,
        })),
      }),
    },
  }),
  route({
    ...common,
    id: 'trading.order',
    statuses: {
      200: 'A retry with the same clientOrderId and order: the original order.',
      412: 'The venue needs credentials the account has not stored (`venue_credentials_missing`).',
      422: 'The balance does not cover the order (`insufficient_balance`), a notional does not pay for one lot at the best price (`notional_too_small`) or only the account’s own order is there (`self_trade_prevented`), the venue refused it, or the Idempotency-Key was used with another request (`idempotency_key_reused`).',
    },
    method: 'post',
    effect: 'creates',
    outside: true,
    path: '/trading/order',
    summary:
      'Place an order (market, limit, stop, stop_limit, trailing_stop; day, gtc, ioc, fok) for a quantity (qty, fractional allowed) or, a market order, for an amount of the quote asset (notional); or a linked order (orderClass bracket, oco, oto with takeProfit and stopLoss legs). 201 with the order as it stands after matching and its legs; a retry with the same clientOrderId and order answers 200 with the original.',
    body: PlaceOrderBody,
    response: PlacedTradingOrder,
    status: 201,
    handler: {
      rpc: 'trading.placeOrder',
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
        clientOrderId: i.body.clientOrderId,
        orderClass: i.body.orderClass,
        takeProfitPrice: i.body.takeProfit?.price,
        stopLossStopPrice: i.body.stopLoss?.stopPrice,
        stopLossPrice: i.body.stopLoss?.price,
        stopLossTrailPrice: i.body.stopLoss?.trailPrice,
        stopLossTrailPercent: i.body.stopLoss?.trailPercent,
        trailPrice: i.body.trailPrice,
        trailPercent: i.body.trailPercent,
      }),
      response: (res) => reply({ ...orderJson(res.order!), legs: res.legs.map(orderJson) }, { status: res.replayed ? 200 : 201 }),
    },
  }),
  route({
    ...common,
    id: 'trading.account',
    method: 'post',
    effect: 'reads',
    outside: true,
    path: '/trading/account',
    summary: "The acting account's balances, positions and open orders at a venue.",
    body: VenueBody,
    response: TradingAccount,
    handler: {
      rpc: 'trading.getAccount',
      request: (i) => ({ venue: i.body.venue }),
      response: accountJson,
    },
  }),
  route({
    ...common,
    id: 'trading.cancel',
    method: 'post',
    effect: 'deletes',
    outside: true,
    path: '/trading/cancel',
    summary: 'Cancel one open order (by orderId, or clientOrderId at a venue), or every open order of the account at a venue (all: true).',
    body: z
      .object({
        venue: VenueId.optional(),
        orderId: OrderId.optional(),
        clientOrderId: ClientOrderId.optional(),
        all: z.boolean().default(false).describe('Cancel every open order of the account (at the venue, if named).'),
      })
      .meta({ id: 'CancelOrders' }),
    response: z.object({ orders: z.array(TradingOrder) }).meta({ id: 'CancelledOrders' }),
    handler: {
      rpc: 'trading.cancelOrders',
      request: (i) => ({ venue: i.body.venue, orderId: i.body.orderId, clientOrderId: i.body.clientOrderId, all: i.body.all }),
      response: (res) => ({ orders: res.orders.map(orderJson) }),
    },
  }),
  route({
    ...common,
    id: 'trading.orders.list',
    method: 'get',
    path: '/trading/orders',
    summary: "The acting account's orders, newest first, with filters.",
    query: ListQuery.extend({
      venue: VenueId.optional(),
      symbol: TradingSymbol.optional(),
      side: z.enum(TRADING_SIDES).optional().describe('Only buys or only sells.'),
      status: z
        .enum(['open', 'closed', ...TRADING_STATUSES])
        .optional()
        .describe('`open`, `closed`, or one status.'),
      after: z.iso.datetime().optional().describe('Created at or after (ISO 8601).'),
      before: z.iso.datetime().optional().describe('Created before (ISO 8601).'),
    }),
    response: z.object({ orders: z.array(TradingOrder), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingOrderList' }),
    handler: {
      rpc: 'trading.listOrders',
      request: (i) => ({
        venue: i.query.venue,
        symbol: i.query.symbol,
        side: i.query.side,
        status: i.query.status,
        after: i.query.after,
        before: i.query.before,
        limit: i.query.limit,
        cursor: i.query.cursor,
      }),
      response: (res) => ({ orders: res.orders.map(orderJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'trading.events',
    method: 'get',
    path: '/trading/events',
    summary:
      "The acting account's order updates after `after` (a seq), oldest first: accepted, partially_filled, filled, cancelled, replaced, expired, rejected (and reset), each with the order as it then stood and the balances after it. With Accept: text/event-stream, a live stream: every update after `after` or Last-Event-ID, then new ones as they happen, with no gap and no repeat.",
    query: z.object({
      after: z.coerce.number().int().min(0).default(0).describe('Updates with a greater seq.'),
      limit: z.coerce.number().int().min(1).max(200).default(50).describe('How many updates to return at most (1–200; default 50).'),
    }),
    headers: StreamHeaders,
    response: z.object({ events: z.array(TradingEvent), nextAfter: Nullable(z.number().int()) }).meta({ id: 'TradingEventList' }),
    events: { schema: TradingEvent, description: 'Each update as `data`, its seq as `id`, its type as `event`.' },
    handler: { kind: 'local', name: 'trading.events' },
  }),
  route({
    ...common,
    id: 'trading.orders.get',
    method: 'get',
    path: '/trading/orders/:id',
    summary: 'One order of the acting account (at an external venue, refreshed from it while open).',
    params: z.object({ id: OrderId }),
    response: TradingOrder,
    handler: {
      rpc: 'trading.getOrder',
      request: (i) => ({ id: i.params.id }),
      response: (res) => orderJson(res.order!),
    },
  }),
  route({
    ...common,
    id: 'trading.fills',
    method: 'get',
    path: '/trading/fills',
    summary: "The acting account's fills, newest first.",
    query: ListQuery.extend({ venue: VenueId.optional(), symbol: TradingSymbol.optional(), orderId: OrderId.optional() }),
    response: z.object({ fills: z.array(TradingFill), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingFillList' }),
    handler: {
      rpc: 'trading.listFills',
      request: (i) => ({ venue: i.query.venue, symbol: i.query.symbol, orderId: i.query.orderId, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({
        fills: res.fills.map((f) => ({ ...f, side: f.side as 'buy' | 'sell', liquidity: f.liquidity as 'maker' | 'taker' })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'trading.book',
    method: 'get',
    path: '/trading/book',
    summary: "A paper book's best levels: the market maker's quotes and resting orders.",
    query: z.object({
      venue: VenueId.default('paper'),
      symbol: TradingSymbol,
      depth: z.coerce.number().int().min(1).max(50).default(10).describe('Price levels per side (1–50; default 10).'),
    }),
    response: TradingBook,
    handler: {
      rpc: 'trading.getBook',
      request: (i) => ({ venue: i.query.venue, symbol: i.query.symbol, depth: i.query.depth }),
    },
  }),
  route({
    ...common,
    id: 'trading.reset',
    method: 'post',
    effect: 'deletes',
    path: '/trading/reset',
    summary: "Cancel the acting account's open paper orders and put its paper balances back to the starting cash (a person only).",
    body: VenueBody,
    response: TradingAccount,
    authority: true,
    handler: {
      rpc: 'trading.resetAccount',
      request: (i) => ({ venue: i.body.venue }),
      response: accountJson,
    },
  }),
  route({
    ...common,
    id: 'trading.limits.list',
    method: 'get',
    path: '/trading/limits',
    summary: "The trading limits of the acting account's agents (an agent sees its own).",
    response: z.object({ limits: z.array(TradingLimits) }).meta({ id: 'TradingLimitsList' }),
    handler: {
      rpc: 'trading.listLimits',
      request: () => ({}),
      response: (res) => ({ limits: res.limits.map(limitsJson) }),
    },
  }),
  route({
    ...common,
    id: 'trading.limits.set',
    method: 'put',
    effect: 'overwrites',
    path: '/trading/limits/:agentId',
    summary: "Set an agent's trading limits in the acting account: notional per order and per day, symbols, paper only (a person only).",
    params: z.object({ agentId: AgentId }),
    body: SetTradingLimitsBody,
    response: TradingLimits,
    authority: true,
    handler: {
      rpc: 'trading.setLimits',
      request: (i) => ({
        agentId: i.params.agentId,
        maxNotionalPerOrder: i.body.maxNotionalPerOrder ?? undefined,
        maxNotionalPerDay: i.body.maxNotionalPerDay ?? undefined,
        symbols: i.body.symbols ?? [],
        allSymbols: i.body.symbols === null,
        paperOnly: i.body.paperOnly,
      }),
      response: (res) => limitsJson(res.limits!),
    },
  }),
  route({
    ...common,
    id: 'trading.credentials.list',
    method: 'get',
    path: '/trading/credentials',
    summary: "The acting account's venue credentials (masked; never the secret).",
    response: z.object({ credentials: z.array(VenueCredential) }).meta({ id: 'VenueCredentialList' }),
    handler: {
      rpc: 'trading.listCredentials',
      request: () => ({}),
      response: (res) => ({ credentials: res.credentials.map(credentialJson) }),
    },
  }),
  route({
    ...common,
    id: 'trading.credentials.set',
    method: 'put',
    effect: 'overwrites',
    path: '/trading/credentials/:venue',
    summary: "Store (or replace) the acting account's credentials for an external venue, sealed at rest (a person only).",
    params: z.object({ venue: VenueId }),
    body: SetVenueCredentialsBody,
    response: VenueCredential,
    authority: true,
    handler: {
      rpc: 'trading.setCredentials',
      request: (i) => ({ venue: i.params.venue, keyId: i.body.keyId, secretKey: i.body.secretKey }),
      response: (res) => credentialJson(res.credential!),
    },
  }),
  route({
    ...common,
    id: 'trading.credentials.delete',
    method: 'delete',
    path: '/trading/credentials/:venue',
    summary: "Delete the acting account's credentials for a venue (a person only).",
    params: z.object({ venue: VenueId }),
    response: Success,
    authority: true,
    handler: {
      rpc: 'trading.deleteCredentials',
      request: (i) => ({ venue: i.params.venue }),
      response: () => ({ success: true as const }),
    },
  }),
];
