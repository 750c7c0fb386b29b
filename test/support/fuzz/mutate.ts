import { NUMBERS, UNICODE, WRONG_TYPES } from './hostile';
import type { Input } from './input';
import type { Rng } from './prng';

/** What the stateful fuzzer does to a valid body (or query) sent to live ids. */
export const BODY_MUTATIONS = ['wrong-type', 'missing', 'null', 'huge', 'odd-string', 'number', 'unicode-all', 'empty', 'not-object'] as const;
export type BodyMutation = (typeof BODY_MUTATIONS)[number];

const ODD = [
  '',
  ' ',
  '\t\n',
  'a'.repeat(10_000),
  '0',
  '-1',
  'null',
  'undefined',
  '[]',
  '{}',
  'main',
  '*',
  '%',
  '\\',
  '"',
  '../x',
  'x'.repeat(255) + 'y',
];
const NEGATIVE_AND_ZERO: unknown[] = [0, -1, -0.5, -999999999, 2147483648, 0.1, 1e21];

/** The dotted paths of every leaf and object of a JSON value (at most 4 deep). */
function paths(value: unknown, prefix: string[] = [], depth = 0): string[][] {
  if (!value || typeof value !== 'object' || depth > 4) return prefix.length ? [prefix] : [];
  const keys = Array.isArray(value) ? (value.length ? ['0'] : []) : Object.keys(value);
  const out: string[][] = prefix.length ? [prefix] : [];
  for (const k of keys) out.push(...paths((value as Record<string, unknown>)[k], [...prefix, k], depth + 1));
  return out;
}

function setAt(root: any, path: string[], value: unknown, remove = false): void {
  let target = root;
  for (const k of path.slice(0, -1)) target = target?.[k];
  if (!target || typeof target !== 'object') return;
  if (remove) {
    if (Array.isArray(target)) target.splice(Number(path.at(-1)), 1);
    else delete target[path.at(-1)!];
  } else target[path.at(-1)!] = value;
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, f)]));
  return value;
}

/**
 * One mutation of a valid input: of a body field when the operation takes a body, else of a query
 * field. Returns what was done (the report's line) and the input; null when nothing applies.
 */
export function mutateInput(input: Input, kind: BodyMutation, rng: Rng): { detail: string; input: Input } | null {
  const next: Input = structuredClone(input);
  const part: 'body' | 'query' = next.body !== undefined ? 'body' : 'query';
  const root = part === 'body' ? next.body : next.query;
  if (part === 'query' && !Object.keys(next.query).length && kind !== 'unicode-all') return null;
  const fields = paths(root);
  const field = fields.length ? rng.pick(fields) : null;
  const at = (value: unknown, what: string) => {
    if (!field) {
      if (part !== 'body') return null;
      next.body = value;
      return { detail: `body = ${what}`, input: next };
    }
    setAt(root, field, value);
    return { detail: `${part}.${field.join('.')} = ${what}`, input: next };
  };
  switch (kind) {
    case 'wrong-type': {
      const v = rng.pick(WRONG_TYPES);
      return at(v, JSON.stringify(v));
    }
    case 'missing':
      if (!field) return null;
      setAt(root, field, undefined, true);
      return { detail: `${part}.${field.join('.')} missing`, input: next };
    case 'null':
      return at(null, 'null');
    case 'huge': {
      const n = rng.pick([70_000, 1_100_000]);
      return at('x'.repeat(n), `${n} characters`);
    }
    case 'odd-string': {
      const v = rng.pick(ODD);
      return at(v, JSON.stringify(v.slice(0, 40)));
    }
    case 'number': {
      const v = rng.pick([...NEGATIVE_AND_ZERO, ...NUMBERS]);
      return at(v, String(v));
    }
    case 'unicode-all': {
      const u = rng.pick(UNICODE);
      if (part === 'body') next.body = mapStrings(next.body, (s) => s + u);
      else next.query = mapStrings(next.query, (s) => s + u) as Record<string, unknown>;
      return { detail: `every string of the ${part} + ${JSON.stringify(u.slice(0, 20))}`, input: next };
    }
    case 'empty':
      if (part !== 'body') return null;
      next.body = {};
      return { detail: 'body = {}', input: next };
    case 'not-object':
      if (part !== 'body') return null;
      next.body = rng.pick([[], 'text', 42, null, [next.body]]);
      return { detail: `body = ${JSON.stringify(next.body).slice(0, 60)}`, input: next };
  }
}
