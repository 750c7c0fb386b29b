import { z } from 'zod';

import { type IdPool, idPrefixesFor } from './pools';
import type { Rng } from './prng';
import { sampleRegex } from './regex';

/** A JSON Schema (draft 2020-12) as zod 4 writes one. */
export type Schema = Record<string, any>;

/** The JSON Schema of what an operation takes (the input side: before defaults and transforms). */
export function inputSchema(schema: z.ZodType): Schema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', cycles: 'ref', reused: 'inline' }) as Schema;
}

export interface GenContext {
  rng: Rng;
  /** The ids a field that takes one is filled with. */
  pool: IdPool;
  /** The document `$ref`s point into. */
  root: Schema;
}

/** Follows `$ref`s (`#/$defs/X`) and merges a single `allOf`. */
export function resolve(s: Schema | undefined, root: Schema): Schema {
  let cur: Schema = s ?? {};
  for (let hops = 0; typeof cur.$ref === 'string' && hops < 20; hops++) {
    const target = cur.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], root);
    const { $ref: _ref, ...rest } = cur;
    cur = { ...(target ?? {}), ...rest };
  }
  if (Array.isArray(cur.allOf) && cur.allOf.length) {
    const merged = cur.allOf.reduce((acc: Schema, part: Schema) => ({ ...acc, ...resolve(part, root) }), {});
    const { allOf: _allOf, ...rest } = cur;
    cur = { ...merged, ...rest };
  }
  return cur;
}

/** The types a schema allows (`type` may be a list; enums and consts say it by their values). */
export function typesOf(s: Schema): string[] {
  if (Array.isArray(s.type)) return s.type;
  if (typeof s.type === 'string') return [s.type];
  if ('const' in s) return [s.const === null ? 'null' : typeof s.const];
  if (Array.isArray(s.enum) && s.enum.length) return [...new Set(s.enum.map((v: unknown) => (v === null ? 'null' : typeof v)))] as string[];
  if (s.properties || s.additionalProperties) return ['object'];
  if (s.items || s.prefixItems) return ['array'];
  return [];
}

const patterns = new Map<string, RegExp>();
/** A schema's `pattern` as a RegExp (compiled once). */
export function patternOf(source: string): RegExp {
  let re = patterns.get(source);
  if (!re) patterns.set(source, (re = new RegExp(source)));
  return re;
}

/** Values a free-text field of this name takes in the fixtures (a venue, a symbol, a provider). */
const VALUE_HINTS: Record<string, string[]> = {
  venue: ['paper'],
  symbol: ['ETH/USD', 'BTC/USD'],
  provider: ['openai', 'anthropic'],
  model: ['svc/first'],
  kind: ['organization'],
};

const WORDS = ['alpha', 'fuzz', 'main', 'paper', 'web', 'notes', 'ETH/USD', 'svc/first', 'buy', 'limit', 'account', 'hello'];

/** A string a schema accepts, preferring real ids (a field that takes an id gets one of the pool's). */
function stringFor(s: Schema, ctx: GenContext, name: string): string {
  const min: number = s.minLength ?? 0;
  // A pattern sets the length itself (an id's is 31 characters): no default bound beside it.
  const max: number = s.maxLength ?? (s.pattern ? Infinity : Math.max(min, 24));
  const fits = (v: string) => v.length >= min && v.length <= max && (!s.pattern || patternOf(s.pattern).test(v));
  const ids = ctx.pool.all();
  if (s.pattern) {
    const matching = ids.filter((id) => patternOf(s.pattern).test(id));
    if (matching.length) return ctx.rng.pick(matching);
  } else {
    const prefixes = idPrefixesFor(name);
    if (prefixes) {
      const hinted = prefixes.flatMap((p) => ctx.pool.withPrefix(p));
      if (hinted.length) return ctx.rng.pick(hinted);
    }
  }
  const hinted = VALUE_HINTS[name]?.filter(fits);
  if (hinted?.length && ctx.rng.chance(0.8)) return ctx.rng.pick(hinted);
  switch (s.format) {
    case 'email':
      return `fuzz.${ctx.rng.int(1, 1e6)}@example.com`;
    case 'date-time':
      return new Date(Date.UTC(2025, 0, 1 + ctx.rng.int(0, 300))).toISOString();
    case 'date':
      return '2025-01-01';
    case 'uri':
    case 'url':
      // Loopback, a port nothing listens on: nothing generated ever leaves the machine.
      return 'http://127.0.0.1:9/';
    case 'uuid':
      return '00000000-0000-4000-8000-' + String(ctx.rng.int(0, 1e11)).padStart(12, '0');
  }
  for (let attempt = 0; attempt < 8 && s.pattern; attempt++) {
    const v = sampleRegex(s.pattern, ctx.rng);
    if (v !== null && fits(v)) return v;
  }
  const candidates = [...WORDS, ...ids].filter(fits);
  if (candidates.length && ctx.rng.chance(0.5)) return ctx.rng.pick(candidates);
  const len = Math.min(max, Math.max(min, ctx.rng.int(3, 12)));
  let out = '';
  for (let i = 0; i < len; i++) out += 'abcdefghijklmnopqrstuvwxyz'[ctx.rng.int(0, 25)];
  return out;
}

function numberFor(s: Schema, ctx: GenContext, integer: boolean): number {
  let lo: number = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : 0.5) : 0);
  let hi: number = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - (integer ? 1 : 0.5) : lo + 10);
  if (!Number.isFinite(lo)) lo = -1e6;
  if (!Number.isFinite(hi)) hi = lo + 10;
  hi = Math.min(hi, lo + 10);
  const v = lo + ctx.rng.next() * (hi - lo);
  return integer ? Math.max(Math.ceil(lo), Math.min(Math.floor(hi), Math.round(v))) : Math.round(v * 100) / 100;
}

/** A value a schema accepts (as far as JSON Schema says: refinements are the caller's check). */
export function generate(schema: Schema | undefined, ctx: GenContext, name = '', depth = 0): unknown {
  const s = resolve(schema, ctx.root);
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return ctx.rng.pick(s.enum);
  if ('default' in s && ctx.rng.chance(0.2)) return s.default;
  if (Array.isArray(s.examples) && s.examples.length && ctx.rng.chance(0.5)) return ctx.rng.pick(s.examples);
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches) && branches.length) {
    const nonNull = branches.filter((b: Schema) => !typesOf(resolve(b, ctx.root)).includes('null'));
    return generate(ctx.rng.pick(nonNull.length ? nonNull : branches), ctx, name, depth);
  }
  const types = typesOf(s).filter((t) => t !== 'null');
  const type = types.length ? ctx.rng.pick(types) : typesOf(s).includes('null') ? 'null' : 'string';
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return ctx.rng.chance(0.5);
    case 'integer':
      return numberFor(s, ctx, true);
    case 'number':
      return numberFor(s, ctx, false);
    case 'array': {
      const min: number = s.minItems ?? 0;
      const max: number = Math.min(s.maxItems ?? min + 2, min + 2);
      const n = depth > 4 ? min : ctx.rng.int(min, Math.max(min, max));
      if (Array.isArray(s.prefixItems)) return s.prefixItems.map((p: Schema) => generate(p, ctx, name, depth + 1));
      const items = Array.from({ length: n }, () => generate(s.items, ctx, name.replace(/s$/, ''), depth + 1));
      return s.uniqueItems ? [...new Map(items.map((x) => [JSON.stringify(x), x])).values()] : items;
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const required = new Set<string>(s.required ?? []);
      for (const [key, prop] of Object.entries<Schema>(s.properties ?? {})) {
        // An opaque cursor cannot be made up: only one an answer gave is valid.
        if (!required.has(key) && /cursor/i.test(key)) continue;
        if (required.has(key) || (depth < 4 && ctx.rng.chance(0.5))) out[key] = generate(prop, ctx, key, depth + 1);
      }
      if (s.additionalProperties && typeof s.additionalProperties === 'object' && !s.properties && ctx.rng.chance(0.5)) {
        out[`k${ctx.rng.int(1, 99)}`] = generate(s.additionalProperties, ctx, 'value', depth + 1);
      }
      return out;
    }
    default:
      return stringFor(s, ctx, name);
  }
}
