import { DomainError } from '@svc/kit';

import type { MakerParams } from '../engine/market-maker.js';

/**
 * The paper venue's instruments and the decimal arithmetic around them. The engine works in
 * integer ticks and lots; balances are integer "units" of 10⁻⁹ of an asset (bigint), so that cash
 * and positions add up exactly.
 */

export const UNIT_DECIMALS = 9;

export interface Instrument {
  symbol: string;
  base: string;
  quote: string;
  /** Price increment, e.g. "0.01". */
  tickSize: string;
  /** Quantity increment, e.g. "0.00001". */
  lotSize: string;
  /** The market maker around it: start price (decimal), volatility per step, spread and depth. */
  maker: { startPrice: string; volatility: number; halfSpread: number; levelStep: number; levels: number; size: string };
}

/** An instrument with its increments parsed: tick and lot as integers of 10^-decimals. */
export interface Spec extends Instrument {
  priceDecimals: number;
  tickUnits: bigint;
  qtyDecimals: number;
  lotUnits: bigint;
  /** Units (10⁻⁹ of the quote asset) of one tick × one lot. */
  notionalUnits: bigint;
  /** Units (10⁻⁹ of the base asset) of one lot. */
  lotAmount: bigint;
  params: MakerParams;
}

export const PAPER_INSTRUMENTS: Instrument[] = [
  {
    symbol: 'BTC/USD',
    base: 'BTC',
    quote: 'USD',
    tickSize: '0.01',
    lotSize: '0.000001',
    maker: { startPrice: '60000', volatility: 0.0004, halfSpread: 0.0002, levelStep: 0.0002, levels: 5, size: '0.05' },
  },
  {
    symbol: 'ETH/USD',
    base: 'ETH',
    quote: 'USD',
    tickSize: '0.01',
    lotSize: '0.000001',
    maker: { startPrice: '3000', volatility: 0.0005, halfSpread: 0.0003, levelStep: 0.0003, levels: 5, size: '1' },
  },
  {
    symbol: 'AAPL',
    base: 'AAPL',
    quote: 'USD',
    tickSize: '0.01',
    lotSize: '0.000001',
    maker: { startPrice: '190', volatility: 0.0003, halfSpread: 0.0002, levelStep: 0.0002, levels: 5, size: '10' },
  },
  {
    symbol: 'SPY',
    base: 'SPY',
    quote: 'USD',
    tickSize: '0.01',
    lotSize: '0.000001',
    maker: { startPrice: '520', volatility: 0.0002, halfSpread: 0.0001, levelStep: 0.0001, levels: 5, size: '20' },
  },
];

const DECIMAL = /^(\d{1,18})(?:\.(\d{1,18}))?$/;

/** A decimal string as an integer count of 10^-decimals, or null when it has more decimals. */
export function scaled(value: string, decimals: number): bigint | null {
  const m = DECIMAL.exec(value);
  if (!m) return null;
  const frac = m[2] ?? '';
  if (frac.replace(/0+$/, '').length > decimals) return null;
  return BigInt(m[1]!) * 10n ** BigInt(decimals) + BigInt((frac + '0'.repeat(decimals)).slice(0, decimals) || '0');
}

/** An integer count of 10^-decimals as a decimal string without trailing zeros ("1.5", "100"). */
export function formatScaled(n: bigint, decimals: number): string {
  const neg = n < 0n;
  const abs = neg ? -n : n;
  const s = abs.toString().padStart(decimals + 1, '0');
  const int = s.slice(0, s.length - decimals);
  const frac = s.slice(s.length - decimals).replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? '.' + frac : ''}`;
}

export const formatUnits = (n: bigint) => formatScaled(n, UNIT_DECIMALS);
export const parseUnits = (s: string): bigint => {
  const v = scaled(s, UNIT_DECIMALS);
  if (v === null) throw new Error(`not an amount: ${s}`);
  return v;
};

function decimalsOf(step: string): { decimals: number; units: bigint } {
  const frac = step.split('.')[1] ?? '';
  const decimals = frac.length;
  const units = scaled(step, decimals);
  if (!units || units <= 0n) throw new Error(`bad increment ${step}`);
  return { decimals, units };
}

export function specOf(i: Instrument): Spec {
  const p = decimalsOf(i.tickSize);
  const q = decimalsOf(i.lotSize);
  if (p.decimals + q.decimals > UNIT_DECIMALS) throw new Error(`${i.symbol}: tick and lot decimals exceed ${UNIT_DECIMALS}`);
  const notionalUnits = p.units * q.units * 10n ** BigInt(UNIT_DECIMALS - p.decimals - q.decimals);
  const lotAmount = q.units * 10n ** BigInt(UNIT_DECIMALS - q.decimals);
  const spec: Spec = {
    ...i,
    priceDecimals: p.decimals,
    tickUnits: p.units,
    qtyDecimals: q.decimals,
    lotUnits: q.units,
    notionalUnits,
    lotAmount,
    params: null!,
  };
  spec.params = {
    startPrice: Number(mustTicks(spec, i.maker.startPrice)),
    volatility: i.maker.volatility,
    halfSpread: i.maker.halfSpread,
    levelStep: i.maker.levelStep,
    levels: i.maker.levels,
    size: Number(mustLots(spec, i.maker.size)),
  };
  return spec;
}

function mustTicks(spec: Spec, v: string): bigint {
  const t = toTicks(spec, v);
  if (typeof t === 'string') throw new Error(`${spec.symbol}: ${t}`);
  return BigInt(t);
}
function mustLots(spec: Spec, v: string): bigint {
  const t = toLots(spec, v);
  if (typeof t === 'string') throw new Error(`${spec.symbol}: ${t}`);
  return BigInt(t);
}

const MAX_INT = BigInt(Number.MAX_SAFE_INTEGER);

/** A price as ticks, or a sentence saying why it is not one. */
export function toTicks(spec: Spec, value: string): number | string {
  const v = scaled(value, spec.priceDecimals);
  if (v === null || v % spec.tickUnits !== 0n) return `must be a multiple of the tick size ${spec.tickSize}`;
  const t = v / spec.tickUnits;
  if (t <= 0n) return 'must be positive';
  if (t > MAX_INT / 1_000_000n) return 'is too large';
  return Number(t);
}

/** A quantity as lots, or a sentence saying why it is not one. */
export function toLots(spec: Spec, value: string): number | string {
  const v = scaled(value, spec.qtyDecimals);
  if (v === null || v % spec.lotUnits !== 0n) return `must be a multiple of the lot size ${spec.lotSize}`;
  const l = v / spec.lotUnits;
  if (l <= 0n) return 'must be positive';
  // Lots are fine-grained (0.000001): a bound of some millions of units; quantity × price is bounded where it is known (orders/trading.ts).
  if (l > MAX_INT / 1_000n) return 'is too large';
  return Number(l);
}

/** The most decimals a notional (an amount of the quote asset, docs/trading.md "Notional orders") may have: cents. */
export const NOTIONAL_DECIMALS = 2;

/**
 * A notional as tick·lots of the symbol (and as quote units), or a sentence saying why it is not
 * one: a positive amount of the quote asset with at most two decimals.
 */
export function toNotional(spec: Spec, value: string): { tickLots: number; units: bigint } | string {
  const cents = scaled(value, NOTIONAL_DECIMALS);
  if (cents === null) return `must be an amount of ${spec.quote} with at most ${NOTIONAL_DECIMALS} decimals (cents)`;
  if (cents <= 0n) return 'must be positive';
  const units = cents * 10n ** BigInt(UNIT_DECIMALS - NOTIONAL_DECIMALS);
  if (units % spec.notionalUnits !== 0n) return `must be a multiple of ${formatUnits(spec.notionalUnits)} ${spec.quote}`;
  const tickLots = units / spec.notionalUnits;
  if (tickLots > MAX_INT / 10n) return 'is too large';
  return { tickLots: Number(tickLots), units };
}

export const ticksToString = (spec: Spec, ticks: number | bigint) => formatScaled(BigInt(ticks) * spec.tickUnits, spec.priceDecimals);
export const lotsToString = (spec: Spec, lots: number | bigint) => formatScaled(BigInt(lots) * spec.lotUnits, spec.qtyDecimals);
/** Tick·lots as quote-asset units. */
export const notionalToUnits = (spec: Spec, tickLots: number | bigint) => BigInt(tickLots) * spec.notionalUnits;
/** Lots as base-asset units. */
export const lotsToUnits = (spec: Spec, lots: number | bigint) => BigInt(lots) * spec.lotAmount;

/** A fee of `bps` basis points on `units`, rounded up to the next unit. */
export const feeOf = (units: bigint, bps: number): bigint => (units * BigInt(bps) + 9999n) / 10000n;

/** Accepts a decimal as a JSON number or string; answers its canonical string. */
export function decimalInput(field: string, v: string | number | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new DomainError('invalid_argument', 'invalid_request', `${field}: must be a finite number.`);
    if (v <= 0) throw new DomainError('invalid_argument', 'invalid_request', `${field}: must be positive.`);
    // Shortest round-trip form, never exponent notation for the sizes orders have.
    const s = v.toString();
    if (/e/i.test(s)) return v.toFixed(18).replace(/0+$/, '').replace(/\.$/, '');
    return s;
  }
  return v.trim();
}

export class Instruments {
  private readonly bySymbol = new Map<string, Spec>();

  constructor(list: Instrument[]) {
    for (const i of list) this.bySymbol.set(i.symbol, specOf(i));
  }

  get(symbol: string): Spec | undefined {
    return this.bySymbol.get(symbol);
  }

  all(): Spec[] {
    return [...this.bySymbol.values()];
  }
}
