/** JSON files: a value at a JSON Pointer (RFC 6901), setting one, and merge patches (RFC 7396). */
import { DomainError, type Principal } from '@svc/kit';

import type { DriveDomain } from '../items/domain.js';
import { readText, rewriteText } from './io.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const pointerError = (message: string) => new DomainError('unprocessable', 'pointer_not_found', message);

export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new DomainError('invalid_argument', 'invalid_pointer', 'pointer: "" or starting with "/" (RFC 6901).');
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * The deepest nesting the JSON operations read (a file's own, or a value's). V8 parses any depth
 * but writes (JSON.stringify) only a few thousand levels before its stack runs out, which answered
 * 500; the API's own bodies stop at 64 levels.
 */
export const MAX_JSON_DEPTH = 512;

/** How deep a JSON text nests ([ and { outside strings), in one pass without parsing it. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) deepest = Math.max(deepest, ++depth);
    else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return deepest;
}

function parseJson(text: string, what: string): Json {
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new DomainError('unprocessable', 'json_too_deep', `${what} nests deeper than ${MAX_JSON_DEPTH} levels, the most the JSON operations read.`);
  }
  try {
    return JSON.parse(text) as Json;
  } catch (err) {
    throw new DomainError('unprocessable', 'invalid_json', `${what} is not valid JSON: ${(err as Error).message}`);
  }
}

const isObject = (v: Json | undefined): v is { [k: string]: Json } => typeof v === 'object' && v !== null && !Array.isArray(v);

function at(doc: Json, tokens: string[]): Json {
  let v: Json = doc;
  for (const t of tokens) {
    if (Array.isArray(v) && /^(0|[1-9]\d*)$/.test(t) && Number(t) < v.length) v = v[Number(t)]!;
    else if (isObject(v) && Object.prototype.hasOwnProperty.call(v, t)) v = v[t]!;
    else throw pointerError(`Nothing at /${tokens.join('/')} (no "${t}").`);
  }
  return v;
}

async function jsonOf(drive: DriveDomain, p: Principal, id: string) {
  const row = await drive.visible(drive.sql, p, id);
  return { row, doc: parseJson(await readText(drive, row), `"${row.name}"`) };
}

export async function getJson(drive: DriveDomain, p: Principal, input: { id: string; pointer: string }) {
  const tokens = parsePointer(input.pointer);
  const { row, doc } = await jsonOf(drive, p, input.id);
  return { valueJson: JSON.stringify(at(doc, tokens)), etag: `"${row.sha256}"` };
}

/** Sets (or, without a value, removes) the value at a pointer; "-" appends to an array. */
export async function setJson(drive: DriveDomain, p: Principal, input: { id: string; pointer: string; valueJson?: string; ifMatch?: string }) {
  const tokens = parsePointer(input.pointer);
  const value = input.valueJson === undefined ? undefined : parseJson(input.valueJson, 'value');
  if (!tokens.length && value === undefined) throw new DomainError('invalid_argument', 'invalid_pointer', 'The whole document cannot be removed.');
  return (
    await rewriteText(drive, p, input.id, input.ifMatch, (text) => {
      let doc = parseJson(text, 'The file');
      if (!tokens.length) doc = value!;
      else {
        let parent: Json;
        try {
          parent = at(doc, tokens.slice(0, -1));
        } catch (err) {
          // Removing what is not there is done already (DELETE is idempotent).
          if (value === undefined) return { text, extra: null };
          throw err;
        }
        const last = tokens[tokens.length - 1]!;
        if (Array.isArray(parent)) {
          const idx = last === '-' ? parent.length : /^(0|[1-9]\d*)$/.test(last) ? Number(last) : NaN;
          if (value === undefined && (Number.isNaN(idx) || idx >= parent.length)) return { text, extra: null };
          if (Number.isNaN(idx) || idx > parent.length) throw pointerError(`No index "${last}" in the array.`);
          if (value === undefined) parent.splice(idx, 1);
          else if (last === '-' || idx === parent.length) parent.push(value);
          else parent[idx] = value;
        } else if (isObject(parent)) {
          if (value === undefined) {
            if (!Object.prototype.hasOwnProperty.call(parent, last)) return { text, extra: null };
            delete parent[last];
          } else parent[last] = value;
        } else if (value === undefined) return { text, extra: null };
        else throw pointerError('The parent of the pointer is not an object or an array.');
      }
      return { text: `${JSON.stringify(doc, null, 2)}\n`, extra: null };
    })
  ).row;
}

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: { [k: string]: Json } = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

export async function mergeJson(drive: DriveDomain, p: Principal, input: { id: string; patchJson: string; ifMatch?: string }) {
  const patch = parseJson(input.patchJson, 'patch');
  return (
    await rewriteText(drive, p, input.id, input.ifMatch, (text) => ({
      text: `${JSON.stringify(mergePatch(parseJson(text, 'The file'), patch), null, 2)}\n`,
      extra: null,
    }))
  ).row;
}
