import { createHash } from 'node:crypto';

import { MAX_JSON_DEPTH } from '@svc/contract';
import { DomainError } from '@svc/kit';

/** The item arrays of a snapshot (and of the working changes), merged and diffed by item id. */
export const ITEM_KINDS = ['constraints', 'exemplars', 'comparisons'] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

export type Item = Record<string, unknown>;
export type Snapshot = Record<string, unknown>;

/**
 * How a version's snapshot is stored: its top-level keys in order, each item array as a list of
 * chunk hashes, and the other keys (latentScores, computed data) inline.
 */
export interface Manifest {
  keys: string[];
  lists: Record<string, string[]>;
  rest: Record<string, unknown>;
}

export interface Chunk {
  hash: string;
  /** A JSON array of items, exactly as stored. */
  body: string;
}

/**
 * Content-defined chunking (as Dolt's prolly trees and lakeFS's ranges do): a chunk ends after
 * an item whose hash hits the mask, so inserting or editing one item rewrites one chunk, and the
 * chunks before and after it keep their hashes. Average 32 items, at most 128 or 64 KB.
 */
const BOUNDARY_MASK = 31;
const MAX_CHUNK_ITEMS = 128;
const MAX_CHUNK_CHARS = 64 * 1024;

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export const chunkHash = (body: string) => createHash('sha256').update(body).digest('base64url').slice(0, 24);

export function chunkItems(items: unknown[]): Chunk[] {
  const out: Chunk[] = [];
  let cur: string[] = [];
  let size = 0;
  const flush = () => {
    const body = `[${cur.join(',')}]`;
    out.push({ hash: chunkHash(body), body });
    cur = [];
    size = 0;
  };
  for (const item of items) {
    const s = JSON.stringify(item);
    cur.push(s);
    size += s.length;
    // Mix the length in so that short, similar items still spread over the mask.
    if (((fnv1a(s) ^ s.length) & BOUNDARY_MASK) === 0 || cur.length >= MAX_CHUNK_ITEMS || size >= MAX_CHUNK_CHARS) flush();
  }
  if (cur.length) flush();
  return out;
}

/** Splits a snapshot into its manifest and the chunks it references. */
export function toManifest(snapshot: Snapshot): { manifest: Manifest; chunks: Chunk[]; bytes: number } {
  const manifest: Manifest = { keys: [], lists: {}, rest: {} };
  const chunks: Chunk[] = [];
  let bytes = 2;
  for (const [key, value] of Object.entries(snapshot)) {
    if (value === undefined) continue;
    manifest.keys.push(key);
    bytes += key.length + 4;
    if ((ITEM_KINDS as readonly string[]).includes(key) && Array.isArray(value)) {
      const cs = chunkItems(value);
      manifest.lists[key] = cs.map((c) => c.hash);
      for (const c of cs) {
        chunks.push(c);
        bytes += c.body.length - 1;
      }
    } else {
      manifest.rest[key] = value;
      bytes += JSON.stringify(value).length;
    }
  }
  return { manifest, chunks, bytes };
}

export const EMPTY_MANIFEST: Manifest = { keys: [], lists: {}, rest: {} };

export function manifestHashes(m: Manifest): string[] {
  return Object.values(m.lists).flat();
}

/** The snapshot's JSON text, assembled from stored chunk text without parsing the items. */
export function snapshotText(m: Manifest, chunks: Map<string, string>): string {
  const parts: string[] = [];
  for (const key of m.keys) {
    const list = m.lists[key];
    if (list) {
      const inner = list.map((h) => chunkBody(chunks, h).slice(1, -1)).join(',');
      parts.push(`${JSON.stringify(key)}:[${inner}]`);
    } else {
      parts.push(`${JSON.stringify(key)}:${JSON.stringify(m.rest[key])}`);
    }
  }
  return `{${parts.join(',')}}`;
}

/**
 * The snapshot as objects (for commits, diffs and merges), and where each chunk starts in its
 * list. Parsed chunks come from `parsed` when it has them; the arrays returned are fresh, the items
 * in them may be shared with the cache: treat them as read-only.
 */
export function snapshotParts(
  m: Manifest,
  chunks: Map<string, string>,
  parsed?: ParsedCache,
): { snapshot: Snapshot; offsets: Record<string, number[]> } {
  const snapshot: Snapshot = {};
  const offsets: Record<string, number[]> = {};
  for (const key of m.keys) {
    const list = m.lists[key];
    if (list) {
      const items: unknown[] = [];
      const starts: number[] = [];
      for (const h of list) {
        starts.push(items.length);
        let arr = parsed?.get(h);
        if (!arr) {
          arr = JSON.parse(chunkBody(chunks, h)) as unknown[];
          parsed?.set(h, arr, chunkBody(chunks, h).length);
        }
        for (const it of arr) items.push(it);
      }
      snapshot[key] = items;
      offsets[key] = starts;
    } else {
      snapshot[key] = structuredClone(m.rest[key]);
    }
  }
  return { snapshot, offsets };
}

export function snapshotObject(m: Manifest, chunks: Map<string, string>, parsed?: ParsedCache): Snapshot {
  return snapshotParts(m, chunks, parsed).snapshot;
}

/**
 * A manifest for `next`, which differs from the snapshot `prev` (stored as `prevManifest`) only in
 * lists from `firstChanged[key]` on: the chunks before the one holding that item are reused as they
 * are (content-defined boundaries there depend on those items only), the rest is re-chunked. The
 * result equals toManifest(next).
 */
export function nextManifest(
  next: Snapshot,
  prevManifest: Manifest,
  offsets: Record<string, number[]>,
  firstChanged: Record<string, number>,
  chunkLength: (hash: string) => number,
): { manifest: Manifest; chunks: Chunk[]; bytes: number } {
  const manifest: Manifest = { keys: [], lists: {}, rest: {} };
  const chunks: Chunk[] = [];
  let bytes = 2;
  for (const [key, value] of Object.entries(next)) {
    if (value === undefined) continue;
    manifest.keys.push(key);
    bytes += key.length + 4;
    if ((ITEM_KINDS as readonly string[]).includes(key) && Array.isArray(value)) {
      const prev = prevManifest.lists[key];
      const starts = offsets[key];
      const from = firstChanged[key];
      let keep = 0;
      if (prev && starts && from !== undefined) {
        // The last chunk that starts at or before the first changed item is re-chunked with it.
        while (keep < prev.length && starts[keep]! <= from) keep++;
        keep = Math.max(0, keep - 1);
      }
      const tail = chunkItems(keep ? value.slice(starts![keep]) : value);
      manifest.lists[key] = [...(prev ?? []).slice(0, keep), ...tail.map((c) => c.hash)];
      for (const c of tail) {
        chunks.push(c);
        bytes += c.body.length - 1;
      }
      for (const h of (prev ?? []).slice(0, keep)) bytes += chunkLength(h) - 1;
    } else {
      manifest.rest[key] = value;
      bytes += JSON.stringify(value).length;
    }
  }
  return { manifest, chunks, bytes };
}

function chunkBody(chunks: Map<string, string>, hash: string): string {
  const body = chunks.get(hash);
  if (body === undefined) throw new Error(`snapshot chunk ${hash} is missing`);
  return body;
}

/**
 * Chunks are immutable and named by their content, so a process-wide cache never needs
 * invalidating. Bounded by characters held.
 */
export class ChunkCache {
  private readonly map = new Map<string, string>();
  private chars = 0;

  constructor(private readonly maxChars = 32 * 1024 * 1024) {}

  get(hash: string): string | undefined {
    const v = this.map.get(hash);
    if (v !== undefined) {
      this.map.delete(hash);
      this.map.set(hash, v);
    }
    return v;
  }

  set(hash: string, body: string): void {
    if (this.map.has(hash) || body.length > this.maxChars / 4) return;
    this.map.set(hash, body);
    this.chars += body.length;
    while (this.chars > this.maxChars) {
      const [k, v] = this.map.entries().next().value as [string, string];
      this.map.delete(k);
      this.chars -= v.length;
    }
  }
}

/** Parsed chunks (arrays of items), bounded by the characters of their source text. Read-only. */
export class ParsedCache {
  private readonly map = new Map<string, { items: unknown[]; chars: number }>();
  private chars = 0;

  constructor(private readonly maxChars = 16 * 1024 * 1024) {}

  get(hash: string): unknown[] | undefined {
    const v = this.map.get(hash);
    if (!v) return undefined;
    this.map.delete(hash);
    this.map.set(hash, v);
    return v.items;
  }

  set(hash: string, items: unknown[], chars: number): void {
    if (this.map.has(hash) || chars > this.maxChars / 4) return;
    this.map.set(hash, { items, chars });
    this.chars += chars;
    while (this.chars > this.maxChars) {
      const [k, v] = this.map.entries().next().value as [string, { chars: number }];
      this.map.delete(k);
      this.chars -= v.chars;
    }
  }
}

// Items ------------------------------------------------------------------------------------------

/** How deeply a profile's JSON may nest: the platform's limit (MAX_JSON_DEPTH, @svc/contract). */
export const MAX_DEPTH = MAX_JSON_DEPTH;

const tooDeep = () =>
  new DomainError('invalid_argument', 'invalid_request', `The profile nests deeper than ${MAX_DEPTH} levels of arrays and objects.`);

/**
 * JSON with sorted keys: equality that ignores key order. Refuses (400) a value nested deeper than
 * MAX_DEPTH rather than overflowing the stack: this service may be called by any front.
 */
export function canonical(v: unknown, depth = 0): string {
  if (Array.isArray(v)) {
    if (depth >= MAX_DEPTH) throw tooDeep();
    return `[${v.map((x) => canonical(x, depth + 1)).join(',')}]`;
  }
  if (v && typeof v === 'object') {
    if (depth >= MAX_DEPTH) throw tooDeep();
    const keys = Object.keys(v as object).sort();
    return `{${keys
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k], depth + 1)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Throws a 400 when a parsed JSON value nests deeper than MAX_DEPTH (checked with an explicit stack). */
export function checkDepth(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_DEPTH) throw tooDeep();
    for (const child of Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
}

/**
 * Whether two JSON values are equal as `canonical` sees them (key order ignored, a key whose value
 * is undefined absent, undefined and non-finite numbers as null), compared in place: building both
 * canonical strings cost a diff of 2,000 changed items ~5 ms. Bounded by MAX_DEPTH as canonical is.
 */
export function deepEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  const aObj = typeof a === 'object' && a !== null;
  const bObj = typeof b === 'object' && b !== null;
  if (!aObj || !bObj) return !aObj && !bObj && jsonScalar(a) === jsonScalar(b);
  if (depth >= MAX_DEPTH) throw tooDeep();
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i], depth + 1)) return false;
    return true;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  let count = 0;
  for (const k in ra) {
    if (!Object.hasOwn(ra, k) || ra[k] === undefined) continue;
    count++;
    if (!Object.hasOwn(rb, k) || rb[k] === undefined || !deepEqual(ra[k], rb[k], depth + 1)) return false;
  }
  for (const k in rb) if (Object.hasOwn(rb, k) && rb[k] !== undefined) count--;
  return count === 0;
}

/** A scalar as JSON writes it: undefined, NaN and ±Infinity are null; -0 is 0. */
const jsonScalar = (v: unknown) => (v === undefined || (typeof v === 'number' && !Number.isFinite(v)) ? null : v === 0 ? 0 : v);

/** An item's identity: its `id` (string or number) or, without one, its content. */
export function itemKey(item: unknown): string {
  const id = (item as Item | null)?.id;
  if (typeof id === 'string' || typeof id === 'number') return `id:${id}`;
  return `content:${createHash('sha256').update(canonical(item)).digest('base64url').slice(0, 22)}`;
}

/** An item's key in its list, taken in order: `seen` counts the content keys, so that a repeat gets `#n`. */
export function listKey(item: unknown, seen: Map<string, number>): string {
  const k = itemKey(item);
  if (!k.startsWith('content:')) return k;
  const n = (seen.get(k) ?? 0) + 1;
  seen.set(k, n);
  return n > 1 ? `${k}#${n}` : k;
}

/** The first item id that appears twice in a list, if any. */
export function duplicateItemId(items: unknown[]): string | undefined {
  const seen = new Set<string>();
  for (const it of items) {
    const id = (it as Item | null)?.id;
    if (typeof id !== 'string' && typeof id !== 'number') continue;
    const k = String(id);
    if (seen.has(k)) return k;
    seen.add(k);
  }
  return undefined;
}

export const REMOVE_MARK = '$remove';

/**
 * Applies working changes to committed items: an item whose id matches a committed item replaces
 * it in place, `{"id": …, "$remove": true}` removes it, any other item is appended.
 */
export function applyItems(base: unknown[], changes: unknown[]): unknown[] {
  return applyItemsAt(base, changes).items;
}

/** applyItems, and the index of the first item that differs from `base` (base.length when none). */
export function applyItemsAt(base: unknown[], changes: unknown[]): { items: unknown[]; firstChanged: number } {
  if (!changes.length) return { items: base, firstChanged: base.length };
  const out = [...base];
  const index = new Map<string, number>();
  for (let i = 0; i < out.length; i++) {
    const id = (out[i] as Item | null)?.id;
    if (typeof id === 'string' || typeof id === 'number') index.set(`id:${id}`, i);
  }
  const removed = new Set<number>();
  let first = base.length;
  for (const ch of changes) {
    const id = (ch as Item | null)?.id;
    const k = typeof id === 'string' || typeof id === 'number' ? `id:${id}` : undefined;
    const remove = (ch as Item | null)?.[REMOVE_MARK] === true;
    const at = k !== undefined ? index.get(k) : undefined;
    if (remove) {
      if (at !== undefined && !removed.has(at)) {
        removed.add(at);
        first = Math.min(first, at);
      }
      continue;
    }
    if (at !== undefined && !removed.has(at)) {
      out[at] = ch;
      first = Math.min(first, at);
    } else {
      if (k !== undefined) index.set(k, out.length);
      out.push(ch);
    }
  }
  return { items: removed.size ? out.filter((_, i) => !removed.has(i)) : out, firstChanged: first };
}

/**
 * Data captured at commit for server-built snapshots: the centroid of the good and of the bad
 * exemplars' embeddings (when they carry `embedding` vectors of one size), and a prompt summary
 * of the constraints (question: answer) and exemplar counts.
 */
export interface Derived {
  embeddingCentroids: { good: number[] | null; bad: number[] | null };
  promptSummary: string;
}

export function computeDerived(s: Snapshot): Derived {
  const exemplars = (Array.isArray(s.exemplars) ? s.exemplars : []) as Item[];
  const centroid = (label: string): number[] | null => {
    const vecs = exemplars
      .filter((e) => e && e.label === label && Array.isArray(e.embedding) && (e.embedding as unknown[]).every((x) => typeof x === 'number'))
      .map((e) => e.embedding as number[]);
    if (!vecs.length) return null;
    const dim = vecs[0]!.length;
    const same = vecs.filter((v) => v.length === dim);
    const sum = new Array<number>(dim).fill(0);
    for (const v of same) for (let i = 0; i < dim; i++) sum[i]! += v[i]!;
    return sum.map((x) => x / same.length);
  };
  const constraints = (Array.isArray(s.constraints) ? s.constraints : []) as Item[];
  const rules = constraints
    .map((c) => {
      const q = typeof c?.question === 'string' ? c.question.trim() : '';
      const a = typeof c?.answer === 'string' ? c.answer.trim() : c?.answer === undefined ? '' : JSON.stringify(c.answer);
      return q || a ? `${q}${q && a ? ': ' : ''}${a}` : '';
    })
    .filter(Boolean);
  const good = exemplars.filter((e) => e?.label === 'good').length;
  const bad = exemplars.filter((e) => e?.label === 'bad').length;
  const comparisons = Array.isArray(s.comparisons) ? s.comparisons.length : 0;
  let summary = rules.join('; ');
  if (summary.length > 2000) summary = `${summary.slice(0, 1997)}...`;
  const counts = `${good} good and ${bad} bad exemplars, ${comparisons} comparisons`;
  return {
    embeddingCentroids: { good: centroid('good'), bad: centroid('bad') },
    promptSummary: summary ? `${summary}. (${counts}.)` : `(${counts}.)`,
  };
}
