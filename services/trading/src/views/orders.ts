import { DomainError, invalid, notFound, type Principal, type Sql } from '@svc/kit';

import { ORDER_TYPES, type OrderType } from '../engine/book.js';
import type { OrderRow, TradingStore } from '../orders/store.js';
import {
  decimalInput,
  feeOf,
  formatUnits,
  lotsToString,
  notionalToUnits,
  scaled,
  type Spec,
  ticksToString,
  toLots,
  toNotional,
  toTicks,
} from '../orders/symbols.js';
import { type PlaceRequest, replaceNotSupported, type Trading } from '../orders/trading.js';
import { PAPER, type PaperSettings, type PaperVenue } from '../paper/venue.js';
import type { Market } from './market.js';

/**
 * Order tools around placement (docs/trading.md, "Before and after an order"): a preview that walks
 * the paper book without placing anything, the most the balance can buy or sell, replacing an open
 * order, and finding an order by its client order id.
 */

const positive = (field: string, v: string | undefined, parse: (s: string) => number | string): number | undefined => {
  if (v === undefined) return undefined;
  const n = parse(v);
  if (typeof n === 'string') throw invalid(`${field}: ${n}.`);
  return n;
};

export class OrderTools {
  constructor(readonly deps: { sql: Sql; store: TradingStore; paper: PaperVenue; settings: PaperSettings; market: Market; trading: Trading }) {}

  private async available(accountId: string, asset: string): Promise<bigint> {
    const { rows } = await this.deps.paper.balances(accountId);
    const b = rows.find((r) => r.asset === asset);
    return b ? BigInt(b.total.split('.')[0]!) - BigInt(b.held.split('.')[0]!) : 0n;
  }

  /** Walks the book as the order would now: what fills at which prices, what rests, what it costs, whether the balance covers it. */
  async preview(p: Principal, req: PlaceRequest) {
    const spec = this.deps.market.spec(req.venue, req.symbol);
    if (req.side !== 'buy' && req.side !== 'sell') throw invalid('side: must be "buy" or "sell".');
    const type = req.type as OrderType;
    if (!ORDER_TYPES.includes(type)) throw invalid(`type: must be one of ${ORDER_TYPES.join(', ')}.`);
    const tif = req.timeInForce ?? 'gtc';
    const hasLimit = type === 'limit' || type === 'stop_limit';
    const hasStop = type === 'stop' || type === 'stop_limit';
    const price = decimalInput('price', req.price);
    const stopPrice = decimalInput('stopPrice', req.stopPrice);
    if (hasLimit !== (price !== undefined))
      throw invalid(hasLimit ? `price: a ${type} order needs a limit price.` : `price: a ${type} order takes no limit price.`);
    if (hasStop !== (stopPrice !== undefined))
      throw invalid(hasStop ? `stopPrice: a ${type} order needs a stop price.` : `stopPrice: a ${type} order takes no stop price.`);
    const qtyIn = decimalInput('qty', req.qty === '' ? undefined : req.qty);
    const notionalIn = decimalInput('notional', req.notional === '' ? undefined : req.notional);
    if ((qtyIn === undefined) === (notionalIn === undefined)) throw invalid('qty: give exactly one of qty and notional.');
    if (notionalIn !== undefined && type !== 'market') throw invalid(`notional: only a market order takes a notional; give qty for a ${type} order.`);
    if (notionalIn !== undefined && tif === 'fok') throw invalid('timeInForce: a notional order cannot be fok; use day, gtc or ioc.');
    const cap = notionalIn === undefined ? undefined : toNotional(spec, notionalIn);
    if (typeof cap === 'string') throw invalid(`notional: ${cap}.`);
    const limit = positive('price', price, (s) => toTicks(spec, s));
    positive('stopPrice', stopPrice, (s) => toTicks(spec, s));
    const warnings: string[] = [];
    if (hasStop) warnings.push('A stop order waits until the last trade price reaches its stop price; previewed as if it fired now.');
    const book = await this.deps.paper.snapshot(spec, 50);
    const levels = req.side === 'buy' ? book.asks : book.bids;
    // A notional order: the lots its notional pays for, each level taken whole while it can be (book.ts fillableForNotional).
    const lots = cap ? lotsForNotional(levels, cap.tickLots) : positive('qty', qtyIn, (s) => toLots(spec, s))!;
    if (cap && lots === 0) warnings.push(`${notionalIn} ${spec.quote} does not pay for one lot at the best price now; the order would be refused.`);
    let left = lots;
    let filled = 0;
    let notional = 0n;
    let worst: number | undefined;
    for (const [px, size] of levels) {
      if (left <= 0) break;
      if (limit !== undefined && (req.side === 'buy' ? px > limit : px < limit)) break;
      const take = Math.min(left, size);
      left -= take;
      filled += take;
      notional += notionalToUnits(spec, BigInt(px) * BigInt(take));
      worst = px;
    }
    let resting = limit !== undefined && (tif === 'gtc' || tif === 'day') ? left : 0;
    if (tif === 'fok' && left > 0) {
      warnings.push('fok: the book cannot fill the whole quantity now; the order would expire untouched.');
      filled = 0;
      notional = 0n;
      resting = 0;
      worst = undefined;
    } else if (left > 0 && resting === 0) warnings.push(`${formatLots(spec, left)} would not fill now and would expire.`);
    if (levels.length === 50 && left > 0) warnings.push('Only the best 50 levels were walked.');
    const { takerBps, makerBps } = this.deps.settings.fees;
    const takerFee = feeOf(notional, takerBps);
    const restNotional = limit === undefined ? 0n : notionalToUnits(spec, BigInt(limit) * BigInt(resting));
    const restFee = feeOf(restNotional, Math.max(takerBps, makerBps));
    const asset = req.side === 'buy' ? spec.quote : spec.base;
    const required = req.side === 'buy' ? notional + takerFee + restNotional + restFee : BigInt(lots) * spec.lotAmount;
    const available = await this.available(p.accountId, asset);
    if (required > available) warnings.push(`The available ${asset} (${formatUnits(available)}) does not cover ${formatUnits(required)}.`);
    return {
      venue: PAPER,
      symbol: spec.symbol,
      side: req.side,
      type,
      qty: formatLots(spec, lots),
      fillableQty: formatLots(spec, filled),
      restingQty: formatLots(spec, resting),
      avgPrice: filled ? formatUnits((notional * 10n ** 9n) / (BigInt(filled) * spec.lotAmount)) : undefined,
      worstPrice: worst === undefined ? undefined : ticksToString(spec, worst),
      notional: formatUnits(notional),
      fees: formatUnits(takerFee),
      total: formatUnits(req.side === 'buy' ? notional + takerFee : notional - takerFee),
      asset,
      required: formatUnits(required),
      available: formatUnits(available),
      balanceOk: required <= available,
      warnings,
    };
  }

  /** The largest quantity the available balance buys (walking the asks, or at `price`) or sells. */
  async buyingPower(p: Principal, venue: string, symbol: string, side: string, price?: string) {
    const spec = this.deps.market.spec(venue, symbol);
    if (side !== 'buy' && side !== 'sell') throw invalid('side: must be "buy" or "sell".');
    const ticks = positive('price', decimalInput('price', price), (s) => toTicks(spec, s));
    const asset = side === 'buy' ? spec.quote : spec.base;
    const available = await this.available(p.accountId, asset);
    let lots = 0n;
    if (side === 'sell') lots = available / spec.lotAmount;
    else {
      const bps = BigInt(this.deps.settings.fees.takerBps);
      const perLot = (px: number) => {
        const n = notionalToUnits(spec, px);
        return n + (n * bps + 9999n) / 10000n;
      };
      if (ticks !== undefined) lots = available / perLot(ticks);
      else {
        let cash = available;
        for (const [px, size] of (await this.deps.paper.snapshot(spec, 50)).asks) {
          const each = perLot(px);
          const take = BigInt(Math.min(size, Number(cash / each)));
          lots += take;
          cash -= take * each;
          if (take < BigInt(size)) break;
        }
      }
    }
    return {
      venue: PAPER,
      symbol,
      side,
      asset,
      available: formatUnits(available),
      maxQty: lotsToString(spec, lots),
      price: ticks === undefined ? undefined : ticksToString(spec, ticks),
    };
  }

  /**
   * Replaces an open paper order: checks the new order, then in one transaction cancels the old one
   * (its fills stay) and places the new one for the same symbol and side; a refused new order leaves
   * the old one open. Without a new qty, the old order's unfilled rest.
   */
  async replace(p: Principal, req: { id: string; qty?: string; price?: string; stopPrice?: string; timeInForce?: string; clientOrderId?: string }) {
    const old = await this.deps.store.order(this.deps.sql, p.accountId, req.id);
    if (!old) throw notFound('The order');
    if (old.venue !== PAPER) throw replaceNotSupported(old.venue);
    if (old.status !== 'new' && old.status !== 'partially_filled')
      throw new DomainError('conflict', 'order_not_open', `The order is ${old.status}; only an open order can be replaced.`);
    if (old.order_class !== 'simple' || old.type === 'trailing_stop')
      throw new DomainError(
        'invalid_argument',
        'replace_not_supported',
        `A ${old.order_class === 'simple' ? 'trailing stop' : `${old.order_class} order or leg`} cannot be replaced; cancel it and place a new one.`,
      );
    if (req.qty === undefined && req.price === undefined && req.stopPrice === undefined && req.timeInForce === undefined)
      throw invalid('Name at least one of qty, price, stopPrice, timeInForce to change.');
    const spec = this.deps.market.spec(PAPER, old.symbol);
    const rest = (scaled(trim(old.qty), spec.qtyDecimals)! - scaled(trim(old.filled_qty), spec.qtyDecimals)!) / spec.lotUnits;
    const next: PlaceRequest = {
      venue: PAPER,
      symbol: old.symbol,
      side: old.side,
      type: old.type,
      qty: req.qty ?? lotsToString(spec, rest),
      price: req.price ?? (old.price === null ? undefined : trim(old.price)),
      stopPrice: req.stopPrice ?? (old.stop_price === null ? undefined : trim(old.stop_price)),
      timeInForce: req.timeInForce ?? old.time_in_force,
      clientOrderId: req.clientOrderId,
    };
    positive('qty', decimalInput('qty', next.qty), (s) => toLots(spec, s));
    positive('price', decimalInput('price', next.price), (s) => toTicks(spec, s));
    positive('stopPrice', decimalInput('stopPrice', next.stopPrice), (s) => toTicks(spec, s));
    if (req.clientOrderId && (await this.deps.store.orderByClientId(this.deps.sql, p.accountId, PAPER, req.clientOrderId)))
      throw new DomainError('conflict', 'client_order_id_conflict', `clientOrderId "${req.clientOrderId}" already names an order; use a new one.`);
    // One transaction: if the new order is refused, the old one is still open.
    const placed = await this.deps.trading.place(p, next, old.id);
    return { replaced: placed.replaced!, order: placed.row };
  }

  async byClientId(p: Principal, venue: string, clientOrderId: string): Promise<OrderRow> {
    const row = await this.deps.store.orderByClientId(this.deps.sql, p.accountId, venue, clientOrderId);
    if (!row) throw notFound('The order');
    return row;
  }
}

/** The lots a notional (tick·lots) pays for walking `levels` (best first): whole levels while it can, then part of one. */
function lotsForNotional(levels: Array<[number, number]>, cap: number): number {
  let lots = 0;
  let left = cap;
  for (const [px, size] of levels) {
    const take = Math.min(size, Math.floor(left / px));
    lots += take;
    left -= take * px;
    if (take < size) break;
  }
  return lots;
}

const trim = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);
const formatLots = (spec: Spec, lots: number) => lotsToString(spec, lots);
