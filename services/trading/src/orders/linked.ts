import { invalid } from '@svc/kit';

import type { OrderType, Side, TimeInForce } from '../engine/book.js';
import type { PlaceInput } from '../paper/venue.js';
import { decimalInput, scaled, type Spec, toTicks } from './symbols.js';

/**
 * The rules of linked orders and trailing stops (docs/trading.md, "Linked orders"): which fields an
 * order class takes, and the legs as the paper venue takes them (ticks, checked against each other).
 */

export const ORDER_CLASSES = ['simple', 'bracket', 'oco', 'oto'] as const;
export type OrderClass = (typeof ORDER_CLASSES)[number];

export interface LinkedRequest {
  orderClass?: string;
  takeProfit?: { price?: string };
  stopLoss?: { stopPrice?: string; price?: string; trailPrice?: string; trailPercent?: string };
  trailPrice?: string;
  trailPercent?: string;
}

/** A stop-loss leg: a stop (limit) at `stopPrice`, or a trailing stop (`trailPrice` or `trailPercent`). */
export interface StopLoss {
  stopPrice?: string;
  price?: string;
  trailPrice?: string;
  trailPercent?: string;
}

/** What a request says of links and trails, as validated decimals. */
export interface Linked {
  orderClass: OrderClass;
  takeProfit?: { price: string };
  stopLoss?: StopLoss;
  trailPrice?: string;
  trailPercent?: string;
}

const bad = (message: string) => invalid(message);

function positive(field: string, v: string | undefined): string | undefined {
  const d = decimalInput(field, v === '' ? undefined : v);
  if (d === undefined) return undefined;
  const s = scaled(d, 18);
  if (s === null) throw bad(`${field}: must be a positive decimal number.`);
  if (s <= 0n) throw bad(`${field}: must be positive.`);
  return d;
}

/** A trail (of the order, or of its stop-loss leg: `prefix` `stopLoss.`): each a positive decimal, a percent below 100 with at most 2 decimals. */
function trail(prefix: string, v: { trailPrice?: string; trailPercent?: string }): { trailPrice?: string; trailPercent?: string } {
  const trailPrice = positive(`${prefix}trailPrice`, v.trailPrice);
  const trailPercent = positive(`${prefix}trailPercent`, v.trailPercent);
  if (trailPercent !== undefined && (scaled(trailPercent, 2) === null || scaled(trailPercent, 2)! >= 10_000n))
    throw bad(`${prefix}trailPercent: must be a percent below 100 with at most 2 decimals.`);
  return { trailPrice, trailPercent };
}

/** A stop-loss leg: a stop price (and a limit price: a stop limit), or a trail (a trailing stop, with the rules of one). */
function stopLossOf(req: StopLoss): StopLoss {
  const stopPrice = positive('stopLoss.stopPrice', req.stopPrice);
  const price = positive('stopLoss.price', req.price);
  const { trailPrice, trailPercent } = trail('stopLoss.', req);
  const trails = [trailPrice, trailPercent].filter((x) => x !== undefined).length;
  if (stopPrice === undefined && !trails)
    throw bad('stopLoss.stopPrice: a stop-loss leg needs a stop price, or a trail (trailPrice or trailPercent) for a trailing stop-loss.');
  if (stopPrice !== undefined && trails) throw bad('stopLoss.trailPrice: give a stop-loss leg either a stopPrice or a trail, not both.');
  if (trails > 1) throw bad('stopLoss.trailPrice: a trailing stop-loss takes exactly one of trailPrice and trailPercent.');
  if (trails && price !== undefined) throw bad('stopLoss.price: a trailing stop-loss has no limit price (it trades as a market order).');
  if (trails) return trailPrice !== undefined ? { trailPrice } : { trailPercent };
  return { stopPrice, ...(price === undefined ? {} : { price }) };
}

/**
 * Checks the class and its fields against the order's type, size and time in force. An OCO is its
 * take-profit leg (a limit order at `takeProfit.price`, which is then the order's `price`) with a
 * stop-loss leg on the same side.
 */
export function linkedOf(req: LinkedRequest & { price?: string; notional?: string }, type: OrderType, tif: TimeInForce): Linked {
  const orderClass = (req.orderClass ?? 'simple') as OrderClass;
  if (!ORDER_CLASSES.includes(orderClass)) throw bad(`orderClass: must be one of ${ORDER_CLASSES.join(', ')}.`);
  const { trailPrice, trailPercent } = trail('', req);
  if (type === 'trailing_stop') {
    if ((trailPrice === undefined) === (trailPercent === undefined))
      throw bad('trailPrice: a trailing_stop order needs exactly one of trailPrice (a price distance) and trailPercent (a percent).');
    if (tif !== 'day' && tif !== 'gtc') throw bad('timeInForce: a trailing_stop order is day or gtc.');
  } else if (trailPrice !== undefined || trailPercent !== undefined)
    throw bad(`${trailPrice !== undefined ? 'trailPrice' : 'trailPercent'}: only a trailing_stop order takes a trail.`);
  const tpPrice = positive('takeProfit.price', req.takeProfit?.price);
  if (req.takeProfit && tpPrice === undefined) throw bad('takeProfit.price: a take-profit leg needs a limit price.');
  const takeProfit = tpPrice === undefined ? undefined : { price: tpPrice };
  const stopLoss = req.stopLoss && stopLossOf(req.stopLoss);
  if (orderClass === 'simple') {
    if (takeProfit || stopLoss) throw bad(`${takeProfit ? 'takeProfit' : 'stopLoss'}: give orderClass bracket, oto or oco for an order with legs.`);
    return { orderClass, trailPrice, trailPercent };
  }
  if (req.notional !== undefined) throw bad(`notional: a ${orderClass} order is for a quantity (qty).`);
  if (tif !== 'day' && tif !== 'gtc') throw bad(`timeInForce: a ${orderClass} order is day or gtc (its legs too).`);
  if (orderClass === 'oco') {
    if (type !== 'limit') throw bad('type: an oco order is limit (its take-profit leg) with a stop-loss leg.');
    if (req.price !== undefined) throw bad('price: an oco order takes its prices in takeProfit and stopLoss.');
    if (!takeProfit || !stopLoss) throw bad(`${takeProfit ? 'stopLoss' : 'takeProfit'}: an oco order needs both takeProfit and stopLoss.`);
  } else {
    if (type !== 'market' && type !== 'limit') throw bad(`type: the entry of a ${orderClass} order is market or limit.`);
    if (orderClass === 'bracket' && (!takeProfit || !stopLoss))
      throw bad(`${takeProfit ? 'stopLoss' : 'takeProfit'}: a bracket order needs both takeProfit and stopLoss.`);
    if (orderClass === 'oto' && !takeProfit === !stopLoss) throw bad('takeProfit: an oto order needs exactly one of takeProfit and stopLoss.');
  }
  return { orderClass, takeProfit, stopLoss };
}

/** The price an order takes from its links: an OCO's limit price is its take-profit's. */
export const linkedPrice = (l: Linked, price: string | undefined) => (l.orderClass === 'oco' ? l.takeProfit!.price : price);

/**
 * The legs and trail on the paper venue, in ticks, with the prices in the order an exit makes
 * sense: for a long position's exits (a buy entry's legs, or a sell OCO), the take-profit above
 * the stop-loss and, with a limit entry, the entry between them; the other way round for a short.
 */
export function paperLinks(
  spec: Spec,
  l: Linked,
  side: Side,
  entryTicks: number | undefined,
): Pick<PlaceInput, 'orderClass' | 'legs' | 'trailTicks' | 'trailBps'> {
  const ticks = (field: string, v: string) => {
    const t = toTicks(spec, v);
    if (typeof t === 'string') throw bad(`${field}: ${t}.`);
    return t;
  };
  const out: Pick<PlaceInput, 'orderClass' | 'legs' | 'trailTicks' | 'trailBps'> = {};
  if (l.trailPrice !== undefined) out.trailTicks = ticks('trailPrice', l.trailPrice);
  if (l.trailPercent !== undefined) out.trailBps = Number(scaled(l.trailPercent, 2));
  if (l.orderClass === 'simple') return out;
  out.orderClass = l.orderClass;
  out.legs = [];
  const tp = l.takeProfit && ticks('takeProfit.price', l.takeProfit.price);
  const sl = l.stopLoss?.stopPrice === undefined ? undefined : ticks('stopLoss.stopPrice', l.stopLoss.stopPrice);
  const slLimit = l.stopLoss?.price === undefined ? undefined : ticks('stopLoss.price', l.stopLoss.price);
  // Exits of a long position sell: they are the other side of a buy entry, the same side as a sell OCO.
  const long = l.orderClass === 'oco' ? side === 'sell' : side === 'buy';
  const above = (a: number, b: number) => (long ? a > b : a < b);
  const word = long ? 'above' : 'below';
  if (tp !== undefined && sl !== undefined && !above(tp, sl)) throw bad(`takeProfit.price: must be ${word} stopLoss.stopPrice.`);
  if (l.orderClass !== 'oco' && entryTicks !== undefined) {
    if (tp !== undefined && !above(tp, entryTicks)) throw bad(`takeProfit.price: must be ${word} the entry's limit price.`);
    if (sl !== undefined && !above(entryTicks, sl)) throw bad(`stopLoss.stopPrice: must be ${long ? 'below' : 'above'} the entry's limit price.`);
  }
  if (sl !== undefined && slLimit !== undefined && above(slLimit, sl))
    throw bad(`stopLoss.price: a stop-limit exit's limit must not be ${word} its stop price.`);
  // The OCO's take-profit leg is the order itself.
  if (tp !== undefined && l.orderClass !== 'oco') out.legs.push({ role: 'takeProfit', type: 'limit', price: tp });
  if (sl !== undefined) out.legs.push({ role: 'stopLoss', type: slLimit === undefined ? 'stop' : 'stop_limit', stopPrice: sl, price: slLimit });
  // A trailing stop-loss: its trigger starts a trail away from the last price when it goes live.
  const slTrail = l.stopLoss?.trailPrice;
  if (slTrail !== undefined) out.legs.push({ role: 'stopLoss', type: 'trailing_stop', trailTicks: ticks('stopLoss.trailPrice', slTrail) });
  if (l.stopLoss?.trailPercent !== undefined)
    out.legs.push({ role: 'stopLoss', type: 'trailing_stop', trailBps: Number(scaled(l.stopLoss.trailPercent, 2)) });
  return out;
}
