import { formatScaled } from '../orders/symbols.js';

/** Exact decimals for the views: bigint counts of 10⁻¹⁸ (signed), from and to strings without trailing zeros. */
export const SCALE = 10n ** 18n;

export function dec(s: string): bigint {
  const neg = s.startsWith('-');
  const [int, frac = ''] = (neg ? s.slice(1) : s).split('.');
  const v = BigInt(int || '0') * SCALE + BigInt((frac + '0'.repeat(18)).slice(0, 18) || '0');
  return neg ? -v : v;
}

export const str = (v: bigint, decimals = 18) => formatScaled(decimals === 18 ? v : v / 10n ** BigInt(18 - decimals), decimals);
export const mul = (a: bigint, b: bigint) => (a * b) / SCALE;
export const div = (a: bigint, b: bigint) => (b === 0n ? 0n : (a * SCALE) / b);
/** A ratio as a JS number (percentages, basis points): display only. */
export const ratio = (a: bigint, b: bigint) => (b === 0n ? 0 : Number((a * 1_000_000n) / b) / 1_000_000);
export const money = (v: bigint) => str(v, 9);
