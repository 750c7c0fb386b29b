import { keyedPaced, Pacer } from './pace.js';
import { computeDerived, deepEqual, ITEM_KINDS, type ItemKind, type Snapshot } from './snapshots.js';

/** Kinds that diff and merge compare: the item arrays (by item id) and latentScores (by key). */
export type MergeKind = ItemKind | 'latentScores';
export type Side = 'ours' | 'theirs';

export const items = (s: Snapshot, k: ItemKind): unknown[] => (Array.isArray(s[k]) ? (s[k] as unknown[]) : []);
export const scores = (s: Snapshot): Record<string, unknown> =>
  s.latentScores && typeof s.latentScores === 'object' && !Array.isArray(s.latentScores) ? (s.latentScores as Record<string, unknown>) : {};

export const publicId = (key: string, item: unknown) => (key.startsWith('id:') ? (item as { id: unknown }).id : null);

export interface ItemDiff {
  added: unknown[];
  removed: unknown[];
  changed: Array<{ id: unknown; from: unknown; to: unknown }>;
}
export interface ScoreDiff {
  added: Record<string, unknown>;
  removed: Record<string, unknown>;
  changed: Record<string, { from: unknown; to: unknown }>;
}
export type SnapshotDiff = Record<ItemKind, ItemDiff> & { latentScores: ScoreDiff };

/** Per item (matched by id, or by content for items without one): added, removed, changed; in slices (pace.ts). */
export async function diffSnapshots(from: Snapshot, to: Snapshot): Promise<SnapshotDiff> {
  const pace = new Pacer();
  const out = {} as SnapshotDiff;
  for (const k of ITEM_KINDS) {
    const a = new Map(await keyedPaced(items(from, k), pace));
    const b = new Map(await keyedPaced(items(to, k), pace));
    const d: ItemDiff = { added: [], removed: [], changed: [] };
    for (const [key, item] of b) {
      const old = a.get(key);
      if (!a.has(key)) d.added.push(item);
      else if (!deepEqual(old, item)) d.changed.push({ id: publicId(key, item), from: old, to: item });
      const y = pace.step();
      if (y) await y;
    }
    for (const [key, item] of a) {
      if (!b.has(key)) d.removed.push(item);
      const y = pace.step();
      if (y) await y;
    }
    out[k] = d;
  }
  const a = scores(from);
  const b = scores(to);
  const s: ScoreDiff = { added: {}, removed: {}, changed: {} };
  for (const [key, v] of Object.entries(b)) {
    if (!(key in a)) s.added[key] = v;
    else if (!deepEqual(a[key], v)) s.changed[key] = { from: a[key], to: v };
  }
  for (const [key, v] of Object.entries(a)) if (!(key in b)) s.removed[key] = v;
  out.latentScores = s;
  return out;
}

export interface Conflict {
  kind: MergeKind;
  /** The item id (or the latentScores key); null for an item without an id. */
  id: unknown;
  base: unknown;
  ours: unknown;
  theirs: unknown;
  /** How it was resolved, or null while it blocks the merge. */
  resolution: Side | null;
}

export type Resolutions = Partial<Record<MergeKind, Record<string, Side>>>;

const ABSENT = Symbol('absent');
type Maybe = unknown | typeof ABSENT;
const present = (v: Maybe): v is unknown => v !== ABSENT;
const shown = (v: Maybe) => (present(v) ? v : null);
const same = (a: Maybe, b: Maybe) => (present(a) && present(b) ? deepEqual(a, b) : !present(a) && !present(b));

/**
 * Three-way merge of one keyed collection. Returns the merged entries (ours' order, then what
 * theirs added, in theirs' order) and the conflicts, resolved where the caller said how. Paced
 * (pace.ts): a merge of large branches gives the event loop back as it goes.
 */
async function merge3(
  kind: MergeKind,
  base: Array<[string, unknown]>,
  ours: Array<[string, unknown]>,
  theirs: Array<[string, unknown]>,
  resolve: (kind: MergeKind, key: string, id: unknown) => Side | undefined,
  conflicts: Conflict[],
  pace: Pacer,
): Promise<Array<[string, unknown]>> {
  const b = new Map(base);
  const o = new Map(ours);
  const t = new Map(theirs);
  const decide = (key: string): Maybe => {
    const bv: Maybe = b.has(key) ? b.get(key) : ABSENT;
    const ov: Maybe = o.has(key) ? o.get(key) : ABSENT;
    const tv: Maybe = t.has(key) ? t.get(key) : ABSENT;
    if (same(ov, tv)) return ov;
    if (same(ov, bv)) return tv;
    if (same(tv, bv)) return ov;
    const sample = present(ov) ? ov : present(tv) ? tv : bv;
    const id = kind === 'latentScores' ? key : publicId(key, sample);
    const side = resolve(kind, key, id);
    conflicts.push({ kind, id, base: shown(bv), ours: shown(ov), theirs: shown(tv), resolution: side ?? null });
    return side === 'theirs' ? tv : ov;
  };
  const out: Array<[string, unknown]> = [];
  const done = new Set<string>();
  const take = (key: string) => {
    done.add(key);
    const v = decide(key);
    if (present(v)) out.push([key, v]);
    return pace.step();
  };
  for (const [key] of ours) {
    const y = take(key);
    if (y) await y;
  }
  for (const [key] of theirs) {
    if (done.has(key)) continue;
    const y = take(key);
    if (y) await y;
  }
  // Deleted on both sides, or on ours with theirs unchanged: decide() keeps them out; a base item
  // ours deleted while theirs changed it is a conflict even though neither list holds it twice.
  for (const [key] of base) {
    if (done.has(key)) continue;
    const y = take(key);
    if (y) await y;
  }
  return out;
}

export interface MergeOutcome {
  snapshot: Snapshot;
  conflicts: Conflict[];
}

/** Three-way merge of two snapshots against their common ancestor, in slices (pace.ts). */
export async function mergeSnapshots(
  base: Snapshot,
  ours: Snapshot,
  theirs: Snapshot,
  opts: { strategy?: Side; resolutions?: Resolutions },
): Promise<MergeOutcome> {
  const pace = new Pacer();
  const resolve = (kind: MergeKind, key: string, id: unknown): Side | undefined => {
    const r = opts.resolutions?.[kind];
    const byId = r && (id !== null && id !== undefined ? r[String(id)] : undefined);
    return byId ?? r?.[key] ?? opts.strategy;
  };
  const conflicts: Conflict[] = [];
  const out: Snapshot = { ...ours };
  const keyedOf = (s: Snapshot, k: ItemKind) => keyedPaced(items(s, k), pace);
  for (const k of ITEM_KINDS) {
    const merged = await merge3(k, await keyedOf(base, k), await keyedOf(ours, k), await keyedOf(theirs, k), resolve, conflicts, pace);
    out[k] = merged.map(([, v]) => v);
  }
  const entries = (s: Snapshot) => Object.entries(scores(s));
  out.latentScores = Object.fromEntries(await merge3('latentScores', entries(base), entries(ours), entries(theirs), resolve, conflicts, pace));
  Object.assign(out, computeDerived(out));
  return { snapshot: out, conflicts };
}
