import { ControlError } from '../units/units.js';
import type { Device, Parameter, World } from './world.js';

/** mulberry32: a small seeded PRNG (32-bit state); the same seed gives the same sequence everywhere. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One draw of a parameter. Normal draws use Box–Muller on two uniforms. */
function sample(p: Parameter, rand: () => number): number {
  if (typeof p === 'number') return p;
  const dist = p.distribution ?? (p.sd !== undefined ? 'normal' : p.min !== undefined && p.max !== undefined ? 'uniform' : 'fixed');
  if (dist === 'normal') {
    const u1 = 1 - rand();
    const u2 = rand();
    let x = p.value + (p.sd ?? 0) * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    if (p.min !== undefined) x = Math.max(p.min, x);
    if (p.max !== undefined) x = Math.min(p.max, x);
    return x;
  }
  if (dist === 'uniform') {
    const lo = p.min ?? p.value;
    const hi = p.max ?? p.value;
    return lo + (hi - lo) * rand();
  }
  return p.value;
}

// A small arithmetic language: numbers, names (a.b), + - * / % ^, unary -, parentheses, and functions.
type Node =
  | { t: 'num'; v: number }
  | { t: 'var'; name: string }
  | { t: 'neg'; a: Node }
  | { t: 'bin'; op: string; a: Node; b: Node }
  | { t: 'call'; fn: string; args: Node[] };

const FUNCTIONS: Record<string, (...a: number[]) => number> = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  exp: Math.exp,
  log: Math.log,
  sin: Math.sin,
  cos: Math.cos,
  min: Math.min,
  max: Math.max,
  floor: Math.floor,
  ceil: Math.ceil,
  round: Math.round,
  pow: Math.pow,
};

/** Parses an output expression; a syntax error names where. */
export function parseExpression(src: string): Node {
  const tokens =
    src.match(/\s*(?:(\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)?)|(\S))/gi) ?? [];
  let i = 0;
  const peek = () => tokens[i]?.trim();
  const bad = (why: string) => new ControlError('invalid_expression', `expression ${JSON.stringify(src)}: ${why}`, 400);
  const expect = (s: string) => {
    if (peek() !== s) throw bad(`expected "${s}" at token ${i + 1}`);
    i++;
  };
  const primary = (): Node => {
    const tok = peek();
    if (tok === undefined) throw bad('ends too early');
    i++;
    if (tok === '(') {
      const e = sum();
      expect(')');
      return e;
    }
    if (tok === '-') return { t: 'neg', a: power() };
    if (tok === '+') return power();
    if (/^(\d|\.\d)/.test(tok)) return { t: 'num', v: Number(tok) };
    if (/^[A-Za-z_]/.test(tok)) {
      if (peek() === '(') {
        if (!FUNCTIONS[tok]) throw bad(`unknown function ${tok} (there are ${Object.keys(FUNCTIONS).join(', ')})`);
        i++;
        const args: Node[] = [];
        if (peek() !== ')') {
          args.push(sum());
          while (peek() === ',') {
            i++;
            args.push(sum());
          }
        }
        expect(')');
        return { t: 'call', fn: tok, args };
      }
      return { t: 'var', name: tok };
    }
    throw bad(`unexpected "${tok}"`);
  };
  const power = (): Node => {
    const a = primary();
    if (peek() === '^') {
      i++;
      return { t: 'bin', op: '^', a, b: power() };
    }
    return a;
  };
  const product = (): Node => {
    let a = power();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const op = peek()!;
      i++;
      a = { t: 'bin', op, a, b: power() };
    }
    return a;
  };
  const sum = (): Node => {
    let a = product();
    while (peek() === '+' || peek() === '-') {
      const op = peek()!;
      i++;
      a = { t: 'bin', op, a, b: product() };
    }
    return a;
  };
  const e = sum();
  if (i < tokens.length) throw bad(`unexpected "${peek()}"`);
  return e;
}

export function variables(n: Node, out = new Set<string>()): Set<string> {
  if (n.t === 'var') out.add(n.name);
  else if (n.t === 'neg') variables(n.a, out);
  else if (n.t === 'bin') variables(n.b, variables(n.a, out));
  else if (n.t === 'call') for (const a of n.args) variables(a, out);
  return out;
}

function evaluate(n: Node, env: Map<string, number>): number {
  switch (n.t) {
    case 'num':
      return n.v;
    case 'var':
      return env.get(n.name)!;
    case 'neg':
      return -evaluate(n.a, env);
    case 'call':
      return FUNCTIONS[n.fn]!(...n.args.map((a) => evaluate(a, env)));
    case 'bin': {
      const a = evaluate(n.a, env);
      const b = evaluate(n.b, env);
      switch (n.op) {
        case '+':
          return a + b;
        case '-':
          return a - b;
        case '*':
          return a * b;
        case '/':
          return a / b;
        case '%':
          return a % b;
        default:
          return a ** b;
      }
    }
  }
}

export interface OutputStats {
  mean: number;
  stddev: number;
  min: number;
  max: number;
  percentiles: Record<string, number>;
  /** Trials whose value was not a finite number (left out of the statistics). */
  nonFinite: number;
}

/** Percentile by linear interpolation between the closest ranks of a sorted array. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

export function statistics(values: Float64Array, percentiles: number[]): OutputStats {
  const finite = values.filter((v) => Number.isFinite(v)).sort();
  const n = finite.length;
  let mean = 0;
  let m2 = 0;
  // Welford: stable for long runs.
  for (let k = 0; k < n; k++) {
    const d = finite[k]! - mean;
    mean += d / (k + 1);
    m2 += d * (finite[k]! - mean);
  }
  const round = (x: number) => (Number.isFinite(x) ? Number(x.toPrecision(12)) : x);
  return {
    mean: round(n ? mean : NaN),
    stddev: round(n > 1 ? Math.sqrt(m2 / (n - 1)) : 0),
    min: round(n ? finite[0]! : NaN),
    max: round(n ? finite[n - 1]! : NaN),
    percentiles: Object.fromEntries(percentiles.map((p) => [`p${p}`, round(percentile(finite, p))])),
    nonFinite: values.length - n,
  };
}

/** Trials between turns given back to the event loop (about 5-10 ms of work). */
const YIELD_EVERY = 5_000;
/** Values kept for the statistics (8 bytes each): 40 MB at most. */
const MAX_VALUES = 5_000_000;

export interface TrialsRequest {
  trials: number;
  seed: number;
  /** Output names to compute (default: every output of the world's simulation). */
  outputs?: string[];
  /** Parameter values fixed for this run (override the world's). */
  overrides?: Record<string, number>;
  percentiles?: number[];
}

/**
 * Runs N trials of a world's simulation: each trial draws every parameter from its distribution
 * (a mulberry32 stream seeded with `seed`, parameters in sorted id order) and evaluates the
 * outputs. Device parameters that are numbers are fixed inputs named `<device>.<parameter>`.
 */
export async function runTrials(world: World, devices: Map<string, Device>, req: TrialsRequest) {
  const outputs = world.simulation?.outputs ?? {};
  const names = req.outputs ?? Object.keys(outputs);
  if (names.length === 0) throw new ControlError('no_simulation', `The world ${world.name} has no simulation outputs (simulation.outputs).`, 400);
  const parsed = names.map((name) => {
    const src = outputs[name];
    if (src === undefined)
      throw new ControlError('unknown_output', `The world has no output ${name} (it has ${Object.keys(outputs).join(', ')}).`, 400);
    return { name, node: parseExpression(src) };
  });
  if (req.trials * parsed.length > MAX_VALUES) {
    throw new ControlError('too_many_trials', `trials × outputs is at most ${MAX_VALUES} (asked ${req.trials} × ${parsed.length}).`, 400);
  }
  const fixed = new Map<string, number>();
  for (const placed of world.devices) {
    const described = devices.get(placed.device)?.parameters ?? {};
    for (const [k, v] of Object.entries({ ...described, ...placed.parameters })) if (typeof v === 'number') fixed.set(`${placed.id}.${k}`, v);
  }
  const params = Object.keys(world.parameters).sort();
  for (const [k, v] of Object.entries(req.overrides ?? {})) {
    if (!(k in world.parameters)) throw new ControlError('unknown_parameter', `The world has no parameter ${k}.`, 400);
    fixed.set(k, v);
  }
  for (const { name, node } of parsed) {
    for (const v of variables(node)) {
      if (!(v in world.parameters) && !fixed.has(v))
        throw new ControlError('invalid_expression', `output ${name}: ${v} is neither a parameter nor a device parameter.`, 400);
    }
  }
  const rand = mulberry32(req.seed);
  const values = parsed.map(() => new Float64Array(req.trials));
  const env = new Map(fixed);
  for (let t = 0; t < req.trials; t++) {
    // Long runs give the event loop a turn (a unit's stop must not wait for a simulation).
    if (t > 0 && t % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    for (const p of params) {
      const draw = sample(world.parameters[p]!, rand); // drawn even when overridden: the stream stays aligned
      if (!req.overrides || !(p in req.overrides)) env.set(p, draw);
    }
    for (let o = 0; o < parsed.length; o++) values[o]![t] = evaluate(parsed[o]!.node, env);
  }
  const pct = req.percentiles ?? [5, 25, 50, 75, 95];
  return {
    trials: req.trials,
    seed: req.seed,
    prng: 'mulberry32',
    outputs: Object.fromEntries(parsed.map((p, o) => [p.name, statistics(values[o]!, pct)])),
  };
}
