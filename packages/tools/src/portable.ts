import type { JsonSchema } from './schemas.js';

/**
 * Tool schemas in the spelling that clients mapping them onto narrower dialects accept (the MCP
 * inspector's `--strict` check names both): a nullable `type: ["string", "null"]` becomes
 * `anyOf` branches of one type each, with each branch carrying the keywords that apply to its type
 * and the annotations staying outside; an empty schema `{}` for `additionalProperties` becomes
 * `true`, which means the same (as `items` the inspector refuses a bare `true`, so `{}` stays
 * there, as it does for a value that may be any JSON). A timestamp's pattern is left out for its
 * size (zod spells RFC 3339 out in 330 characters, and the catalogue is listed whole to clients):
 * `format: date-time` says the same, and the server checks it; `propertyNames: {type: "string"}`
 * is left out, as every JSON key is a string. Nothing else changes.
 */
export function portableSchema(s: JsonSchema): JsonSchema {
  return walk(s) as JsonSchema;
}

/** Keywords that apply to one type of value (JSON Schema 2020-12, validation vocabulary). */
const BY_TYPE: Record<string, readonly string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  array: ['items', 'prefixItems', 'minItems', 'maxItems', 'uniqueItems', 'contains', 'minContains', 'maxContains'],
  object: ['properties', 'required', 'additionalProperties', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties'],
  boolean: [],
  null: [],
};
const TYPED = new Set(Object.values(BY_TYPE).flat());

/** Where a schema stands for "any value" and `true` says the same, in the spelling clients expect. */
const ANY_SLOTS = new Set(['additionalProperties']);

const isEmptyObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

function walk(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(walk);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, child] of Object.entries(v)) {
    if (ANY_SLOTS.has(k) && isEmptyObject(child)) out[k] = true;
    else if (k === 'properties' || k === '$defs' || k === 'patternProperties') out[k] = mapValues(child, walk);
    else out[k] = walk(child);
  }
  // A timestamp's pattern (zod spells RFC 3339 out as a 330-character expression) says what
  // `format: date-time` says: the format stays, the server checks the value either way.
  if (out.format === 'date-time' && typeof out.pattern === 'string') delete out.pattern;
  // Every key of a JSON object is a string: `propertyNames: {type: "string"}` (zod's record) says nothing.
  if (isStringOnly(out.propertyNames)) delete out.propertyNames;
  return Array.isArray(out.type) ? splitTypes(out) : out;
}

const isStringOnly = (v: unknown) =>
  typeof v === 'object' && v !== null && Object.keys(v).length === 1 && (v as { type?: unknown }).type === 'string';

const mapValues = (o: unknown, f: (x: unknown) => unknown) =>
  typeof o === 'object' && o !== null ? Object.fromEntries(Object.entries(o).map(([k, x]) => [k, f(x)])) : o;

/** `{type: [a, b], ...}` → `{...annotations, anyOf: [{type: a, ...a's keywords}, {type: b, ...}]}`. */
function splitTypes(s: Record<string, unknown>): Record<string, unknown> {
  const { type, ...rest } = s;
  const types = type as string[];
  if (types.length === 1) return { type: types[0], ...rest };
  const outer: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(rest)) if (!TYPED.has(k)) outer[k] = x;
  const branches = types.map((t) => {
    const branch: Record<string, unknown> = { type: t };
    for (const k of BY_TYPE[t] ?? []) if (k in rest) branch[k] = rest[k];
    return branch;
  });
  // An anyOf already there (rare) must hold as well as the type: both become an allOf.
  if (outer.anyOf) {
    const { anyOf, ...others } = outer;
    return { ...others, allOf: [{ anyOf }, { anyOf: branches }] };
  }
  return { ...outer, anyOf: branches };
}
