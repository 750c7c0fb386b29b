import { type BookOrder, type MatchHooks, type MatchResult, newBookOrder, type OrderBook } from './book.js';

/**
 * The paper venue's simulated market: a market maker that quotes a ladder of bids and asks around
 * a reference price, and the reference price itself, a seeded random walk. Pure and deterministic:
 * the walk's step k depends only on (seed, symbol, k), so every replica (and every replay) sees
 * the same prices.
 */

export const MARKET_MAKER = 'market-maker';

export interface MakerParams {
  /** Reference price at step 0, in ticks. */
  startPrice: number;
  /** Standard deviation of one step's log return (e.g. 0.0005). */
  volatility: number;
  /** Half the spread, as a fraction of the reference price (e.g. 0.0005 = 5 bps). */
  halfSpread: number;
  /** Distance between the ladder's levels, as a fraction of the reference (e.g. 0.0005). */
  levelStep: number;
  /** Levels per side. */
  levels: number;
  /** Lots at the best level; level i quotes (i + 1) times this. */
  size: number;
}

/** The market maker's state, kept with the book: where the walk is and what it quotes. */
export interface MakerState {
  step: number;
  /** Reference price in ticks (may be fractional; quotes are rounded to ticks). */
  reference: number;
  /** Ids of its resting quotes. */
  quotes: string[];
  /** How many quotes it has placed, for their ids. */
  placed: number;
}

/** A 32-bit hash of a string (FNV-1a): the symbol's part of the seed. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** splitmix32: a uniform number in [0, 1) from a 32-bit input. */
function uniform(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  z ^= z >>> 16;
  return (z >>> 0) / 4294967296;
}

/** A standard normal draw for step k of the walk (Box–Muller on two hashed uniforms). */
export function normalAt(seed: number, symbolHash: number, k: number): number {
  const base = (seed ^ Math.imul(symbolHash, 0x27d4eb2d) ^ Math.imul(k, 0x165667b1)) | 0;
  const u1 = Math.max(uniform(base), 1e-12);
  const u2 = uniform(base ^ 0x5bd1e995);
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** Walks the reference price from `state.step` to `step` (one draw per step). */
export function walk(seed: number, symbol: string, params: MakerParams, from: { step: number; reference: number }, step: number): number {
  const h = hash32(symbol);
  let ref = from.reference;
  const floor = params.startPrice / 100;
  for (let k = from.step + 1; k <= step; k++) ref = Math.max(floor, ref * Math.exp(params.volatility * normalAt(seed, h, k)));
  return ref;
}

export function initialMakerState(params: MakerParams): MakerState {
  return { step: 0, reference: params.startPrice, quotes: [], placed: 0 };
}

/**
 * Moves the market maker to `step`: the reference walks, its old quotes are withdrawn and a new
 * ladder is submitted through the book (so a quote that crosses a resting order trades with it,
 * as a moving market would). Also requotes at the same step when one side of its ladder is gone.
 */
export function requote(
  book: OrderBook,
  state: MakerState,
  opts: { seed: number; symbol: string; params: MakerParams; step: number; hooks?: MatchHooks },
): MatchResult | null {
  const { params } = opts;
  const live = state.quotes.map((id) => book.get(id)).filter((o): o is BookOrder => o !== undefined);
  const bothSides = live.some((o) => o.side === 'buy') && live.some((o) => o.side === 'sell');
  if (opts.step <= state.step && bothSides) return null;
  if (opts.step > state.step) {
    state.reference = walk(opts.seed, opts.symbol, params, state, opts.step);
    state.step = opts.step;
  }
  const result: MatchResult = { fills: [], changed: [] };
  for (const o of live) book.cancel(o.id, 'requoted');
  state.quotes = [];
  const ref = state.reference;
  for (let i = 0; i < params.levels; i++) {
    const offset = ref * (params.halfSpread + i * params.levelStep);
    const bid = Math.max(1, Math.floor(ref - offset));
    const ask = Math.max(bid + 1, Math.ceil(ref + offset));
    for (const [side, price] of [
      ['buy', bid],
      ['sell', ask],
    ] as const) {
      const order = newBookOrder({
        id: `mm-${opts.symbol}-${++state.placed}`,
        owner: MARKET_MAKER,
        side,
        type: 'limit',
        tif: 'gtc',
        qty: params.size * (i + 1),
        price,
      });
      const r = book.submit(order, opts.hooks);
      result.fills.push(...r.fills);
      result.changed.push(...r.changed);
      if (r.activated) (result.activated ??= []).push(...r.activated);
      if (order.status === 'new' || order.status === 'partially_filled') state.quotes.push(order.id);
    }
  }
  return result;
}
