import { type Handlers, toIso } from '@svc/kit';
import type { trading } from '@svc/proto';

import type { VenueCredentials } from './orders/credentials.js';
import type { OrderUpdates } from './orders/events.js';
import type { AgentLimits, LimitsRow } from './orders/limits.js';
import type { EventRow, OrderRow } from './orders/store.js';
import { formatUnits, scaled } from './orders/symbols.js';
import { cursorId, type Trading } from './orders/trading.js';
import type { EventData } from './paper/timeline.js';
import type { ViewHandlers } from './views/server.js';

type Def = typeof trading.TradingServiceService;

const trim = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);

/** An order as the service answers it: decimals without trailing zeros, the average fill price derived. */
export function toOrder(r: OrderRow): trading.Order {
  const filled = scaled(trim(r.filled_qty), 18);
  const notional = scaled(trim(r.filled_notional), 18);
  const avg = filled && notional !== null && filled > 0n ? formatUnits((notional * 10n ** 9n) / filled) : undefined;
  return {
    id: r.id,
    clientOrderId: r.client_order_id,
    venue: r.venue,
    symbol: r.symbol,
    side: r.side,
    type: r.type,
    timeInForce: r.time_in_force,
    qty: trim(r.qty),
    price: r.price === null ? undefined : trim(r.price),
    stopPrice: r.stop_price === null ? undefined : trim(r.stop_price),
    filledQty: trim(r.filled_qty),
    avgFillPrice: avg,
    filledNotional: trim(r.filled_notional),
    fees: trim(r.fees),
    status: r.status,
    reason: r.reason ?? undefined,
    placedBy: { kind: r.placed_by.kind, id: r.placed_by.id },
    createdAt: toIso(r.created_at)!,
    updatedAt: toIso(r.updated_at)!,
    externalId: r.external_id ?? undefined,
    notional: r.notional === null ? undefined : trim(r.notional),
    orderClass: r.order_class ?? 'simple',
    parentOrderId: r.parent_id ?? undefined,
    linkedOrderId: r.sibling_id ?? undefined,
    trailPrice: r.trail_price == null ? undefined : trim(r.trail_price),
    trailPercent: r.trail_percent == null ? undefined : trim(r.trail_percent),
    hwm: r.hwm == null ? undefined : trim(r.hwm),
  };
}

/** Units of 10⁻⁹ as stored in an event's balances (integers in text). */
const units = (v: string) => BigInt(v.split('.')[0]!);

/** An order update as the service answers it: its order as it stood right after it. */
export function toEvent(e: EventRow): trading.TradingEvent {
  const d = e.data as Partial<EventData>;
  const order =
    e.order &&
    toOrder({
      ...e.order,
      filled_qty: d.filledQty ?? e.order.filled_qty,
      filled_notional: d.filledNotional ?? e.order.filled_notional,
      status: d.status ?? e.order.status,
      reason: d.reason === undefined ? e.order.reason : d.reason,
    });
  return {
    seq: e.seq,
    id: e.id,
    type: e.type,
    venue: e.venue,
    symbol: e.symbol ?? undefined,
    createdAt: toIso(e.created_at)!,
    order: order ?? undefined,
    fill: d.fill,
    replacedBy: d.replacedBy,
    balances: (e.balances ?? []).map((b) => ({
      asset: b.asset,
      total: formatUnits(units(b.total)),
      held: formatUnits(units(b.held)),
      available: formatUnits(units(b.total) - units(b.held)),
    })),
    hasBalances: e.balances !== null,
  };
}

const toLimits = (l: LimitsRow): trading.AgentLimits => ({
  agentId: l.agent_id,
  maxNotionalPerOrder: l.max_notional_per_order ?? undefined,
  maxNotionalPerDay: l.max_notional_per_day ?? undefined,
  symbols: l.symbols ?? [],
  allSymbols: l.symbols === null,
  paperOnly: l.paper_only,
  usedToday: l.used_today,
  setBy: l.set_by ? { kind: l.set_by.kind, id: l.set_by.id } : undefined,
  updatedAt: toIso(l.updated_at),
});

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(
  domain: Trading,
  limits: AgentLimits,
  credentials: VenueCredentials,
  updates: OrderUpdates,
): Omit<Handlers<Def>, keyof ViewHandlers> {
  const account = (a: Awaited<ReturnType<Trading['account']>>): trading.GetAccountResponse => ({
    ...a,
    startingCash: 'startingCash' in a ? a.startingCash : undefined,
    openOrders: a.openOrders.map(toOrder),
  });
  return {
    async listVenues() {
      return {
        venues: domain.venues().map((v) => ({
          id: v.id,
          name: v.name,
          mode: v.mode,
          capabilities: {
            orderTypes: [...v.orderTypes],
            timeInForce: [...v.timeInForce],
            cancelAll: true,
            clientOrderId: true,
            fills: v.orderBook,
            orderBook: v.orderBook,
            reset: v.reset,
          },
          instruments: v.instruments.map((s) => ({ symbol: s.symbol, base: s.base, quote: s.quote, tickSize: s.tickSize, lotSize: s.lotSize })),
          ready: true,
        })),
      };
    },
    async listEvents(req, { principal }) {
      const { rows, nextAfter } = await updates.list(principal, Number(req.after), req.limit || 50);
      return { events: rows.map(toEvent), nextAfter };
    },
    async *watchEvents(req, { principal, signal }) {
      for await (const item of updates.watch(principal, Number(req.after), signal)) if (item.kind === 'event') yield toEvent(item.event);
    },
    async placeOrder(req, { principal }) {
      const r = await domain.place(principal, {
        ...req,
        takeProfit: req.takeProfitPrice === undefined ? undefined : { price: req.takeProfitPrice },
        stopLoss: [req.stopLossStopPrice, req.stopLossPrice, req.stopLossTrailPrice, req.stopLossTrailPercent].every((v) => v === undefined)
          ? undefined
          : {
              stopPrice: req.stopLossStopPrice,
              price: req.stopLossPrice,
              trailPrice: req.stopLossTrailPrice,
              trailPercent: req.stopLossTrailPercent,
            },
      });
      return { order: toOrder(r.row), replayed: r.replayed, legs: (r.legs ?? []).map(toOrder) };
    },
    async getOrder(req, { principal, signal }) {
      return { order: toOrder(await domain.get(principal, req.id, signal)) };
    },
    async listOrders(req, { principal }) {
      const { rows, next } = await domain.list(
        principal,
        {
          venue: req.venue,
          symbol: req.symbol,
          side: req.side,
          status: req.status,
          after: req.after,
          before: req.before,
          cursor: cursorId(req.cursor),
        },
        req.limit || 50,
      );
      return { orders: rows.map(toOrder), nextCursor: next ?? undefined };
    },
    async listFills(req, { principal }) {
      const { rows, next } = await domain.fills(
        principal,
        { venue: req.venue, symbol: req.symbol, orderId: req.orderId, cursor: cursorId(req.cursor) },
        req.limit || 50,
      );
      return {
        fills: rows.map((f) => ({
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
        })),
        nextCursor: next ?? undefined,
      };
    },
    async cancelOrders(req, { principal }) {
      return { orders: (await domain.cancel(principal, req)).map(toOrder) };
    },
    async getAccount(req, { principal, signal }) {
      return account(await domain.account(principal, req.venue, signal));
    },
    async resetAccount(req, { principal }) {
      return account(await domain.reset(principal, req.venue));
    },
    async getBook(req) {
      return domain.book(req.venue, req.symbol, req.depth || 10);
    },
    async listLimits(_req, { principal }) {
      return { limits: (await limits.list(principal)).map(toLimits) };
    },
    async setLimits(req, { principal, principalToken }) {
      const row = await limits.set(principal, principalToken, {
        agentId: req.agentId,
        maxNotionalPerOrder: req.maxNotionalPerOrder,
        maxNotionalPerDay: req.maxNotionalPerDay,
        symbols: req.allSymbols ? null : req.symbols,
        paperOnly: req.paperOnly,
      });
      return { limits: toLimits(row) };
    },
    async listCredentials(_req, { principal }) {
      return {
        credentials: (await credentials.list(principal)).map((c) => ({
          venue: c.venue,
          keyId: c.key_id,
          secretLast4: c.last4,
          setBy: { kind: c.set_by.kind, id: c.set_by.id },
          createdAt: toIso(c.created_at)!,
          updatedAt: toIso(c.updated_at)!,
        })),
      };
    },
    async setCredentials(req, { principal }) {
      const c = await credentials.set(principal, req);
      return {
        credential: {
          venue: c.venue,
          keyId: c.key_id,
          secretLast4: c.last4,
          setBy: { kind: c.set_by.kind, id: c.set_by.id },
          createdAt: toIso(c.created_at)!,
          updatedAt: toIso(c.updated_at)!,
        },
      };
    },
    async deleteCredentials(req, { principal }) {
      await credentials.remove(principal, req.venue);
      return {};
    },
  };
}
