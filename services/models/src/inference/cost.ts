/**
 * Costs in exact decimals (docs/models.md, "Credits"): catalogue prices are per million tokens
 * (`2.5`, `0.15`), and a call's cost is `(input × inputPrice + output × outputPrice) / 10^6`,
 * computed on integers (BigInt) and written as a decimal string without trailing zeros (`0.000125`),
 * never through a binary float. PostgreSQL keeps it as `numeric`, exactly.
 */

/** Digits after the point that costs and balances keep. */
export const SCALE = 12;
const ONE = 10n ** BigInt(SCALE);

/** A decimal string (`-1.5`, `0.000125`, `3`) as an integer count of 10^-SCALE units. */
export function toUnits(decimal: string): bigint {
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(decimal.trim());
  if (!m) throw new Error(`not a decimal number: ${decimal}`);
  const frac = (m[3] ?? '').padEnd(SCALE, '0');
  if (frac.length > SCALE && /[1-9]/.test(frac.slice(SCALE))) throw new Error(`more than ${SCALE} decimal places: ${decimal}`);
  const units = BigInt(m[2]!) * ONE + BigInt(frac.slice(0, SCALE) || '0');
  return m[1] ? -units : units;
}

/** Units as a decimal string: no trailing zeros, no point for whole numbers. */
export function fromUnits(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  const whole = abs / ONE;
  const frac = (abs % ONE).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/** A catalogue price (a JSON number such as 2.5 or 0.15) as its shortest decimal, exactly. */
const priceUnits = (price: number): bigint => toUnits(price.toFixed(SCALE).replace(/0+$/, '').replace(/\.$/, ''));

/** The cost of a call at a model's prices, a decimal string; "0" for a free model. */
export function costOf(pricing: { inputPerMillion: number; outputPerMillion: number }, inputTokens: number, outputTokens: number): string {
  const units =
    (BigInt(inputTokens) * priceUnits(pricing.inputPerMillion) + BigInt(outputTokens) * priceUnits(pricing.outputPerMillion)) / 1_000_000n;
  return fromUnits(units);
}
