import { RUN_LIMIT_BOUNDS } from './contract.js';

/**
 * The limits of one run, their defaults, and the operator's maxima. A caller may ask for any value
 * up to the operator's maximum; the default applies when it asks for nothing (and is itself never
 * above the maximum).
 */
export interface RunLimits {
  /** Wall-clock time the script may run, in milliseconds. */
  timeoutMs: number;
  /** Memory the interpreter may use for the script's heap, in MiB (at least 16). */
  memoryLimitMb: number;
  /** Bytes of console output and result JSON together (UTF-8; each console entry counts 32 more for its place in the answer). */
  maxOutputBytes: number;
}

/** What a run uses when the caller asks for nothing. */
export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({ timeoutMs: 5_000, memoryLimitMb: 64, maxOutputBytes: 64 * 1024 });

/** The operator's maxima when the operator says nothing. */
export const DEFAULT_MAX_LIMITS: Readonly<RunLimits> = Object.freeze({ timeoutMs: 30_000, memoryLimitMb: 256, maxOutputBytes: 1024 * 1024 });

/** Bounds no setting can pass: what the pool and its children are built for (contract.ts, which the API advertises). */
export const LIMIT_BOUNDS: Readonly<Record<keyof RunLimits, { min: number; max: number }>> = RUN_LIMIT_BOUNDS;

/** The QuickJS stack: small enough that its own check fires long before the process's stack ends. */
export const STACK_SIZE_BYTES = 256 * 1024;

/** The limit a caller asked for is above the operator's maximum (or not a positive whole number). */
export class LimitError extends Error {
  override name = 'LimitError';
  constructor(
    readonly field: keyof RunLimits,
    message: string,
  ) {
    super(message);
  }
}

const UNITS: Record<keyof RunLimits, string> = { timeoutMs: 'ms', memoryLimitMb: 'MiB', maxOutputBytes: 'bytes' };

/**
 * The limits of one run: what the caller asked for, each checked against the operator's maximum,
 * or the default (lowered to the maximum when the operator set a lower one).
 */
export function resolveLimits(asked: Partial<RunLimits>, max: RunLimits): RunLimits {
  const out = {} as RunLimits;
  for (const field of Object.keys(DEFAULT_LIMITS) as Array<keyof RunLimits>) {
    const value = asked[field];
    if (value === undefined) {
      out[field] = Math.min(DEFAULT_LIMITS[field], max[field]);
      continue;
    }
    const min = LIMIT_BOUNDS[field].min;
    if (!Number.isInteger(value) || value < min) throw new LimitError(field, `${field} must be a whole number of at least ${min}.`);
    if (value > max[field]) throw new LimitError(field, `${field} may be at most ${max[field]} ${UNITS[field]} (the operator's maximum).`);
    out[field] = value;
  }
  return out;
}

/** Checks the operator's maxima against LIMIT_BOUNDS. */
export function checkMaxLimits(max: RunLimits): RunLimits {
  for (const field of Object.keys(LIMIT_BOUNDS) as Array<keyof RunLimits>) {
    const { min, max: top } = LIMIT_BOUNDS[field];
    const v = max[field];
    if (!Number.isInteger(v) || v < min || v > top) throw new RangeError(`the maximum ${field} must be a whole number from ${min} to ${top}`);
  }
  return { ...max };
}
