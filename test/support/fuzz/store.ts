import type { Operation } from './graph';
import { ID_RE, type IdPool } from './pools';
import type { Rng } from './prng';

/** An id an answer carried, with the path values of the request it answered (its parents, for a child). */
interface Found {
  value: string;
  context: string[];
}

/** Path values bound from the store: by parameter name, and whether every id parameter got a live id. */
export interface Binding {
  params: Record<string, string>;
  live: boolean;
  /** The values, in path order (what a failing request is replayed with). */
  values: string[];
}

/**
 * The live resources of one tenant: every id its answers carried (by prefix, with the path values
 * of the request that got it, so a comment is bound with its own task), the path values of every
 * request that succeeded (by slot key, so a memory entry's namespace and key are used together
 * again), and the ids it deleted (never bound again as live; probed after the deletions).
 */
export class LiveStore {
  private readonly ids = new Map<string, Found[]>();
  private readonly bindings = new Map<string, string[][]>();
  readonly dead = new Set<string>();
  /** Ids never bound (the fuzzer's own key, account and agent). */
  readonly protected: Set<string>;
  /** The same ids for body fields (the generator fills id fields from it). */
  readonly pool: IdPool;

  constructor(pool: IdPool) {
    this.pool = pool;
    this.protected = pool.protected;
    for (const id of pool.everything()) this.found(id, []);
  }

  private found(value: string, context: string[]): void {
    const prefix = value.slice(0, value.indexOf('_'));
    const list = this.ids.get(prefix) ?? [];
    const same = list.find((f) => f.value === value);
    if (!same) list.push({ value, context });
    else if (!same.context.length && context.length) same.context = context;
    this.ids.set(prefix, list);
  }

  /** Records a successful answer of `op` sent with path `values`: its ids, its path values, and (a producer's) the new member. */
  success(op: Operation, values: string[], text: string): void {
    this.pool.harvest(text);
    for (const m of text.matchAll(ID_RE)) if (!values.includes(m[0])) this.found(m[0], values);
    for (let i = 0; i < op.slots.length; i++) this.bind(op.slots[i]!.key, values.slice(0, i + 1));
    if (op.produces) {
      let made: unknown;
      try {
        made = JSON.parse(text)?.id;
      } catch {
        // not JSON
      }
      const id = typeof made === 'string' ? made : [...text.matchAll(ID_RE)].map((m) => m[0]).find((x) => !values.includes(x));
      if (id) this.bind(op.produces, [...values, id]);
    }
  }

  private bind(key: string, values: string[]): void {
    if (values.some((v) => this.dead.has(v))) return;
    const list = this.bindings.get(key) ?? [];
    if (!list.some((b) => b.join('/') === values.join('/'))) list.push(values);
    this.bindings.set(key, list);
  }

  /** Marks the last of `values` deleted: never bound as live again. */
  deleted(values: string[]): void {
    const id = values.at(-1);
    if (!id) return;
    this.dead.add(id);
    this.pool.forget(id);
    for (const [key, list] of this.bindings) {
      this.bindings.set(
        key,
        list.filter((b) => !b.includes(id)),
      );
    }
  }

  private usable = (v: string) => !this.dead.has(v) && !this.protected.has(v);

  /**
   * Path values for `op`: a whole binding of its deepest slot when one was recorded; else slot by
   * slot, an id of the slot's prefix (one found under the parent bound before it first), or a
   * recorded value of that slot. Null for a slot with nothing recorded: the caller generates it.
   */
  bindFor(op: Operation, rng: Rng, opts: { deadOnly?: boolean } = {}): Binding | null {
    const ok = opts.deadOnly ? (v: string) => this.dead.has(v) : this.usable;
    const slots = op.slots;
    if (!slots.length) return { params: {}, live: true, values: [] };
    const whole = (this.bindings.get(slots.at(-1)!.key) ?? []).filter(
      (b) => b.length === slots.length && b.every((v, i) => !slots[i]!.prefixes.length || this.usable(v)),
    );
    if (whole.length && !opts.deadOnly) return this.named(op, rng.pick(whole), true);
    const values: string[] = [];
    let live = true;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      const parent = values[i - 1];
      const recorded = (this.bindings.get(slot.key) ?? []).filter((b) => b.length === i + 1 && values.every((v, j) => b[j] === v)).map((b) => b[i]!);
      const found = slot.prefixes.flatMap((p) => this.ids.get(p) ?? []).filter((f) => (i === slots.length - 1 ? ok(f.value) : this.usable(f.value)));
      // A slot without a prefix that takes ids (a profile's `versionId`): the ids found under its parent it takes.
      const loose =
        !slot.prefixes.length && /Id$/.test(slot.name) && parent
          ? [...this.ids.values()].flatMap((l) => l.filter((f) => f.context.includes(parent) && ok(f.value) && slot.accepts(f.value)))
          : [];
      const under = parent ? [...found.filter((f) => f.context.includes(parent)), ...loose] : [];
      const pickFrom = recorded.filter((v) => (slot.prefixes.length ? this.usable(v) : true));
      let v: string | undefined;
      if (!opts.deadOnly && pickFrom.length) v = rng.pick(pickFrom);
      else if (under.length) v = rng.pick(under).value;
      else if (found.length) v = rng.pick(found).value;
      if (v === undefined) {
        if (slot.prefixes.length || opts.deadOnly) return null;
        live = false;
        v = '';
      }
      values.push(v);
    }
    return this.named(op, values, live);
  }

  private named(op: Operation, values: string[], live: boolean): Binding {
    const params: Record<string, string> = {};
    op.slots.forEach((s, i) => {
      if (values[i]) params[s.name] = values[i]!;
    });
    return { params, live, values };
  }

  /** How many ids and recorded bindings the store holds (the report). */
  size(): { ids: number; bindings: number; dead: number } {
    let ids = 0;
    for (const l of this.ids.values()) ids += l.length;
    let bindings = 0;
    for (const l of this.bindings.values()) bindings += l.length;
    return { ids, bindings, dead: this.dead.size };
  }

  /** Whether `id` is one of this tenant's (to tell another tenant's ids apart). */
  owns(id: string): boolean {
    return this.pool.has(id) || this.dead.has(id);
  }
}
