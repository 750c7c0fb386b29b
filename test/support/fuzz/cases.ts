import type { Route } from '@svc/api';

import {
  CONTENT_TYPES,
  CURSORS,
  encodeLoose,
  HEADER_VALUES,
  jsonText,
  nestedArrays,
  nestedObjects,
  NUMBERS,
  PATH_TRICKS,
  UNICODE,
  WRONG_TYPES,
} from './hostile';
import { type HttpRequest, type Input, type Overrides, propertiesOf, queryString, shapesOf, toHttp, validInput } from './input';
import { type IdPool, idPrefixesFor } from './pools';
import { hashSeed, Rng } from './prng';
import { patternOf, resolve, type Schema, typesOf } from './values';

/** Who sends a case: the tenant's person, its agent, nobody, a made-up key, or the other tenant's person acting in this account. */
export type Principal = 'human' | 'agent' | 'none' | 'garbage' | 'basic' | 'other';

export interface Case {
  route: Route;
  /** The case's number for its operation (0: the valid case, 1: the other tenant's ids). */
  n: number;
  /** The seed its values came from: `FUZZ_SEED` and the operation id replay it. */
  seed: number;
  kind: string;
  detail: string;
  principal: Principal;
  request: HttpRequest;
  /** The input it was written from (before its mutation's overrides). */
  input: Input;
  /** The schemas accept the input (the valid case). */
  valid: boolean;
  /** It names the other tenant's resources: a success would act on them. */
  otherTenant: boolean;
  /** It acts in an account its key has no part in (x-svc-account): no operation that needs a key may succeed. */
  foreignAccount: boolean;
  /** Its path is not the route's (a path trick): the answer may be another operation's. */
  pathChanged: boolean;
}

export interface Pools {
  own: IdPool;
  other: IdPool;
  /** The other tenant's account id (to act in it with the header `x-svc-account`). */
  otherAccountId: string;
}

/** The mutations, in the order the bounded run cycles through them. */
export const MUTATIONS = [
  'wrong-type',
  'missing',
  'extra',
  'boundary',
  'huge',
  'deep',
  'unicode',
  'number',
  'path',
  'content-type',
  'query',
  'headers',
  'auth',
  'method',
] as const;
export type Mutation = (typeof MUTATIONS)[number];

type Part = 'params' | 'query' | 'body' | 'headers';
interface Field {
  part: Part;
  path: string[];
  schema?: Schema;
}

/** The fields of an input a mutation may change: path params, query and body fields (nested too), declared headers. */
function fieldsOf(route: Route, input: Input): Field[] {
  const s = shapesOf(route);
  const out: Field[] = [];
  for (const [k, sch] of Object.entries(propertiesOf(s.params))) out.push({ part: 'params', path: [k], schema: sch });
  for (const [k, sch] of Object.entries(propertiesOf(s.query))) out.push({ part: 'query', path: [k], schema: sch });
  for (const [k, sch] of Object.entries(propertiesOf(s.headers))) out.push({ part: 'headers', path: [k], schema: sch });
  if (s.body) {
    const seen = new Set<string>();
    const walk = (schema: Schema | undefined, value: unknown, path: string[], depth: number) => {
      const r = schema ? resolve(schema, s.body!) : undefined;
      const key = path.join('.');
      if (path.length && !seen.has(key)) {
        seen.add(key);
        out.push({ part: 'body', path, schema: r });
      }
      if (depth > 4) return;
      const props = r?.properties ?? {};
      const names = new Set([...Object.keys(props), ...(value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [])]);
      for (const name of names) walk(props[name], (value as Record<string, unknown> | undefined)?.[name], [...path, name], depth + 1);
      if (Array.isArray(value) && value.length) walk(r?.items, value[0], [...path, '0'], depth + 1);
    };
    walk(s.body, input.body, [], 0);
    if (!out.some((f) => f.part === 'body')) out.push({ part: 'body', path: [] });
  }
  return out;
}

function setField(input: Input, f: Field, value: unknown): Input {
  const next: Input = structuredClone(input);
  if (f.part === 'body' && f.path.length === 0) {
    next.body = value;
    return next;
  }
  let target: any = next[f.part];
  if (f.part === 'body' && (typeof target !== 'object' || target === null)) target = next.body = {};
  for (const k of f.path.slice(0, -1)) {
    if (typeof target[k] !== 'object' || target[k] === null) target[k] = {};
    target = target[k];
  }
  target[f.path.at(-1)!] = value;
  return next;
}

function deleteField(input: Input, f: Field): Input {
  const next: Input = structuredClone(input);
  let target: any = f.part === 'body' ? next.body : next[f.part];
  for (const k of f.path.slice(0, -1)) target = target?.[k];
  if (target && typeof target === 'object') delete target[f.path.at(-1)!];
  return next;
}

const isString = (f: Field) => !f.schema || typesOf(f.schema).includes('string') || f.part !== 'body';
/** A field that takes a resource's id: its pattern is the prefixed-id form, or (without a pattern) its name says so. */
const takesId = (f: Field) => (f.schema?.pattern ? /_\[0-9a-z\]\{26\}/.test(f.schema.pattern) : idPrefixesFor(f.path.at(-1) ?? '') !== null);

interface Built {
  kind: string;
  detail: string;
  input: Input;
  overrides?: Overrides;
  principal?: Principal;
  otherTenant?: boolean;
  foreignAccount?: boolean;
  /** Another HTTP method than the operation's. */
  method?: string;
}

/** One mutation of a valid input (null: it does not apply to this operation). */
function mutate(kind: Mutation, route: Route, input: Input, rng: Rng, pools: Pools): Built | null {
  const fields = fieldsOf(route, input);
  const pick = (filter: (f: Field) => boolean = () => true) => {
    const candidates = fields.filter(filter);
    return candidates.length ? rng.pick(candidates) : null;
  };
  const name = (f: Field) => `${f.part}.${f.path.join('.') || '(whole)'}`;
  switch (kind) {
    case 'wrong-type': {
      const f = pick((x) => x.part !== 'headers');
      if (!f) return null;
      const v = rng.pick(WRONG_TYPES);
      return { kind, detail: `${name(f)} = ${JSON.stringify(v)}`, input: setField(input, f, v) };
    }
    case 'missing': {
      const s = shapesOf(route);
      const required = (resolve(s.body ?? {}, s.body ?? {}).required ?? []) as string[];
      if (required.length && input.body && typeof input.body === 'object') {
        const k = rng.pick(required);
        return { kind, detail: `body.${k} left out`, input: deleteField(input, { part: 'body', path: [k] }) };
      }
      if (route.body) return { kind, detail: 'no body', input: { ...input, body: undefined } };
      const p = pick((x) => x.part === 'params');
      if (p) return { kind, detail: `${name(p)} empty`, input, overrides: { rawParams: { [p.path[0]!]: '' } } };
      return { kind, detail: 'no query', input: { ...input, query: {} } };
    }
    case 'extra': {
      if (route.body && input.body && typeof input.body === 'object' && !Array.isArray(input.body)) {
        const body = { ...(input.body as object), ['__proto__']: { polluted: true }, constructor: { prototype: { polluted: true } }, zzUnknown: 1 };
        return { kind, detail: 'body with __proto__, constructor and an unknown field', input: { ...input, body } };
      }
      return {
        kind,
        detail: 'query with __proto__ and unknown fields',
        input,
        overrides: { rawQuery: [queryString(input.query), '__proto__[polluted]=1&constructor[prototype][x]=1&zz=1'].filter(Boolean).join('&') },
      };
    }
    case 'boundary': {
      const f = pick(
        (x) =>
          !!x.schema &&
          ['minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems', 'exclusiveMinimum', 'exclusiveMaximum'].some(
            (k) => k in x.schema!,
          ),
      );
      if (!f) return null;
      const s = f.schema!;
      const options: Array<[string, unknown]> = [];
      if (s.maxLength !== undefined)
        options.push([`length ${s.maxLength}`, 'b'.repeat(s.maxLength)], [`length ${s.maxLength + 1}`, 'b'.repeat(s.maxLength + 1)]);
      if (s.minLength !== undefined) options.push([`length ${s.minLength - 1}`, 'b'.repeat(Math.max(0, s.minLength - 1))]);
      for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) {
        if (s[k] === undefined || !Number.isFinite(s[k])) continue;
        options.push([`${k} ${s[k]}`, s[k]], [`${k} ${s[k]} - 1`, s[k] - 1], [`${k} ${s[k]} + 1`, s[k] + 1], [`${k} ${s[k]} + 0.5`, s[k] + 0.5]);
      }
      if (s.maxItems !== undefined && s.maxItems <= 100_000)
        options.push([`${s.maxItems + 1} items`, Array.from({ length: s.maxItems + 1 }, () => 1)]);
      if (s.minItems !== undefined) options.push([`${s.minItems - 1} items`, []]);
      if (!options.length) return null;
      const [what, v] = rng.pick(options);
      return { kind, detail: `${name(f)}: ${what}`, input: setField(input, f, v) };
    }
    case 'huge': {
      const f = pick((x) => x.part !== 'headers');
      if (!f) return { kind, detail: 'query of 10,000 characters', input, overrides: { rawQuery: 'zz=' + 'q'.repeat(10_000) } };
      const size = f.part === 'body' ? 1 << 20 : rng.pick([4000, 12_000, 70_000]);
      const v = f.part === 'body' && rng.chance(0.3) ? Array.from({ length: 200_000 }, (_, i) => i) : 'h'.repeat(size);
      return { kind, detail: `${name(f)}: ${Array.isArray(v) ? '200,000 items' : `${size} characters`}`, input: setField(input, f, v) };
    }
    case 'deep': {
      const levels = rng.pick([60, 65, 500, 5000]);
      const v = rng.chance(0.5) ? nestedArrays(levels) : nestedObjects(levels);
      const f = pick((x) => x.part === 'body');
      if (f) return { kind, detail: `${name(f)}: nested ${levels} levels`, input: setField(input, f, v) };
      const q = pick((x) => x.part === 'query');
      if (q) return { kind, detail: `query ${q.path[0]} nested brackets`, input, overrides: { rawQuery: `${q.path[0]}${'[a]'.repeat(levels)}=1` } };
      return { kind, detail: `body nested ${levels} levels`, input, overrides: { rawBody: { contentType: 'application/json', body: jsonText(v) } } };
    }
    case 'unicode': {
      const f = pick(isString);
      if (!f) return null;
      const u = rng.pick(UNICODE);
      const current = f.part === 'body' ? undefined : (input[f.part] as Record<string, unknown>)[f.path[0]!];
      const v = rng.chance(0.5) && typeof current === 'string' ? current + u : u;
      if (f.part === 'headers') return null;
      return { kind, detail: `${name(f)} = ${JSON.stringify(v).slice(0, 60)}`, input: setField(input, f, v) };
    }
    case 'number': {
      const f =
        pick((x) => x.part !== 'headers' && !!x.schema && typesOf(x.schema).some((t) => t === 'number' || t === 'integer')) ??
        pick((x) => x.part !== 'headers');
      if (!f) return null;
      const v = rng.pick(NUMBERS);
      const shown = typeof v === 'string' ? v.replace(/^\u0001raw:|\u0001$/g, '') : String(v);
      if (f.part !== 'body') {
        return { kind, detail: `${name(f)} = ${shown}`, input: setField(input, f, shown) };
      }
      return { kind, detail: `${name(f)} = ${shown}`, input: setField(input, f, v) };
    }
    case 'path': {
      const trick = rng.pick(PATH_TRICKS);
      const p = pick((x) => x.part === 'params');
      if (p) {
        const current = String(input.params[p.path[0]!] ?? '');
        const seg = rng.chance(0.3) ? `${encodeLoose(current)}${trick.startsWith('%') || trick.startsWith(';') ? trick : '/' + trick}` : trick;
        return { kind, detail: `${name(p)} = ${seg.slice(0, 60)}`, input, overrides: { rawParams: { [p.path[0]!]: seg } } };
      }
      const base = route.path;
      const rawPath = rng.chance(0.5) ? `${base}/${trick}` : `/${trick}/..${base}`;
      return { kind, detail: `path ${rawPath.slice(0, 60)}`, input, overrides: { rawPath } };
    }
    case 'content-type': {
      const [type, make] = rng.pick(CONTENT_TYPES);
      const json = route.body ? jsonText(input.body ?? {}) : '{"a":1}';
      return {
        kind,
        detail: `Content-Type ${type}: ${JSON.stringify(String(make(json)).slice(0, 40))}`,
        input,
        overrides: { rawBody: { contentType: type, body: make(json) } },
      };
    }
    case 'query': {
      const q = pick((x) => x.part === 'query');
      const key = q?.path[0] ?? 'zz';
      const cur = String(input.query[key] ?? '1');
      const tricks = [
        `${key}=${encodeLoose(cur)}&${key}=${encodeLoose(cur)}`,
        `${key}[a]=1`,
        `${key}[]=1&${key}[]=2`,
        `${key}=%00`,
        `${key}=%zz`,
        `${key}=%ff`,
        `${key}=`,
        `${key}`,
        `${key}=99999999999999999999999`,
        `&&&=&=${key}`,
        `${key}=${rng.pick(CURSORS)}`,
      ];
      const rawQuery = rng.pick(tricks);
      return { kind, detail: `query ${rawQuery.slice(0, 60)}`, input, overrides: { rawQuery } };
    }
    case 'headers': {
      const h = pick((x) => x.part === 'headers');
      if (h && rng.chance(0.7)) {
        const v = rng.pick(HEADER_VALUES);
        return { kind, detail: `${h.path[0]}: ${v.slice(0, 40)}`, input, overrides: { headers: { [h.path[0]!]: v } } };
      }
      const options: Array<[string, Record<string, string>]> = [
        ['x-svc-account of the other tenant', { 'x-svc-account': pools.otherAccountId }],
        ['x-svc-account garbage', { 'x-svc-account': '../acct' }],
        ['accept: text/event-stream', { accept: 'text/event-stream' }],
        ['accept: application/xml', { accept: 'application/xml' }],
        ['last-event-id: -1', { 'last-event-id': '-1' }],
      ];
      if (route.method === 'post')
        options.push(['idempotency-key hostile', { 'idempotency-key': rng.pick(['', 'k'.repeat(5000), '\xff\xfe', '../../x']) }]);
      const [what, headers] = rng.pick(options);
      const foreignAccount = 'x-svc-account' in headers && headers['x-svc-account'] === pools.otherAccountId;
      return { kind, detail: what, input, overrides: { headers }, otherTenant: foreignAccount, foreignAccount };
    }
    case 'method': {
      const methods = ['OPTIONS', 'PUT', 'PATCH', 'POST', 'PROPFIND', 'TRACE'].filter((m) => m !== route.method.toUpperCase());
      if (route.method === 'get') methods.push('HEAD', 'HEAD', 'HEAD');
      const method = rng.pick(methods);
      return { kind, detail: `method ${method}`, input, method };
    }
    case 'auth': {
      if (route.auth === 'none') return { kind, detail: 'a made-up key on a public operation', input, principal: 'garbage' };
      const principal = rng.pick<Principal>(['none', 'garbage', 'basic', 'agent', 'other']);
      return { kind, detail: `as ${principal}`, input, principal, otherTenant: principal === 'other', foreignAccount: principal === 'other' };
    }
  }
}

/** The input with every field that takes an id filled with the other tenant's (null: no field takes one). */
function otherTenant(route: Route, input: Input, rng: Rng, pools: Pools): Built | null {
  let next = input;
  const changed: string[] = [];
  for (const f of fieldsOf(route, input)) {
    if (f.part === 'headers' || !takesId(f)) continue;
    const ids = pools.other.everything().filter((id) => {
      if (f.schema?.pattern) return patternOf(f.schema.pattern).test(id);
      const prefixes = idPrefixesFor(f.path.at(-1) ?? '') ?? [];
      return prefixes.some((p) => id.startsWith(p + '_'));
    });
    if (!ids.length) continue;
    const id = rng.pick(ids);
    next = setField(next, f, typesOf(f.schema ?? {}).includes('array') ? [id] : id);
    changed.push(`${f.part}.${f.path.join('.')}`);
  }
  if (!changed.length) return null;
  return { kind: 'other-tenant', detail: `the other tenant's ids in ${changed.join(', ')}`, input: next, otherTenant: true };
}

/**
 * Case `n` of an operation. 0 is the valid case, 1 the other tenant's ids, the rest mutations:
 * in the bounded run each operation takes the mutations in turn, starting at a place of its own.
 */
export function makeCase(route: Route, n: number, runSeed: number, pools: Pools, accepted?: Input): Case {
  const seed = hashSeed(runSeed, route.id, n);
  const rng = new Rng(seed);
  const generated = validInput(route, rng, pools.own);
  // Mutations start from an input the operation accepted, when one did: they reach further.
  const { input, valid } = n > 0 && accepted ? { input: accepted, valid: true } : generated;
  let built: Built | null = null;
  if (n === 0) built = { kind: 'valid', detail: valid ? 'accepted by the schemas' : 'generated (the schemas refine further)', input };
  else if (n === 1) built = otherTenant(route, input, rng, pools);
  if (!built && n > 0) {
    const start = n === 1 ? 0 : (n - 2 + hashSeed(route.id)) % MUTATIONS.length;
    for (let k = 0; k < MUTATIONS.length && !built; k++) built = mutate(MUTATIONS[(start + k) % MUTATIONS.length]!, route, input, rng, pools);
  }
  built ??= { kind: 'valid', detail: 'no mutation applies', input };
  const overrides = { v1: rng.chance(0.3), ...(built.overrides ?? {}) };
  return {
    route,
    n,
    seed,
    kind: built.kind,
    detail: built.detail,
    principal: built.principal ?? (route.auth === 'none' ? 'none' : 'human'),
    request: { ...toHttp(route, built.input, overrides), ...(built.method ? { method: built.method } : {}) },

    input: built.input,
    valid: n === 0 && valid,
    otherTenant: built.otherTenant ?? false,
    foreignAccount: built.foreignAccount ?? false,

    pathChanged:
      !!(overrides.rawParams || overrides.rawPath) ||
      Object.values(built.input.params).some((v) => v === '' || v === null || v === undefined || typeof v === 'object'),
  };
}
