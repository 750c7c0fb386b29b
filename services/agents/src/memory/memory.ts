import { z } from 'zod';

import { actorOf, DomainError, parseInput, type Principal, type Queryable, type Sql } from '@svc/kit';

import { type MemoryRow, MemoryStore } from './store.js';

/**
 * Agent memory (docs/memory.md): durable JSON values of the acting account, by namespace and key,
 * shared by its people and agents across threads. Every write of a key makes its next version and
 * a line of its history (the last HISTORY_KEPT), so a value can be compared-and-set, read back at
 * an earlier version and restored. An expired entry is gone for every read and write.
 */

export const MAX_VALUE_BYTES = 65_536;
export const MAX_ENTRIES = 10_000;
export const MAX_BATCH = 100;
const MAX_TTL = 366 * 24 * 3600;

const Namespace = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be 1–64 of a-z 0-9 . _ - (starting with a letter or digit)')
  .refine((s) => s !== 'search', 'must not be "search" (reserved)');
const Key = z.string().regex(/^[A-Za-z0-9._:@-]{1,200}$/, 'must be 1–200 of A-Z a-z 0-9 . _ : @ -');
const Ttl = z.number().int().min(1, 'must be at least 1').max(MAX_TTL, `must be at most ${MAX_TTL}`);

const notFound = () => new DomainError('not_found', 'memory_not_found', 'No such memory entry.');
const mismatch = (want: number, cur: MemoryRow | null) =>
  new DomainError('conflict', 'version_mismatch', `The entry is at version ${cur ? cur.version : 'none (absent)'}, not ${want}.`);

function parseValue(json: string, where: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_request', `${where}: must be JSON.`);
  }
  if (Buffer.byteLength(json) > MAX_VALUE_BYTES) {
    throw new DomainError('too_large', 'value_too_large', `${where}: a value holds at most ${MAX_VALUE_BYTES} bytes of JSON.`);
  }
  return v;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

type Change = { value: unknown; expiresAt?: Date | null } | 'delete';

export const encodeKeyCursor = (k: string) => Buffer.from(k).toString('base64url');
export function decodeKeyCursor(c: string | undefined): string | undefined {
  if (!c) return undefined;
  const k = Buffer.from(c, 'base64url').toString();
  if (!k || k.length > 200) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return k;
}

const expiry = (ttl: number | undefined) => (ttl === undefined ? null : new Date(Date.now() + ttl * 1000));

export class MemoryDomain {
  readonly store: MemoryStore;

  constructor(private readonly sql: Sql) {
    this.store = new MemoryStore(sql);
  }

  ns(namespace: string): string {
    return parseInput(Namespace, namespace, { where: 'namespace' });
  }

  key(key: string, where = 'key'): string {
    return parseInput(Key, key, { where });
  }

  ttl(ttl: number | undefined): number | undefined {
    return ttl === undefined ? undefined : parseInput(Ttl, ttl, { where: 'ttlSeconds' });
  }

  keys(keys: string[]): string[] {
    if (keys.length < 1 || keys.length > MAX_BATCH) {
      throw new DomainError('invalid_argument', 'invalid_request', `keys: must hold 1 to ${MAX_BATCH} keys.`);
    }
    return [...new Set(keys.map((k, i) => this.key(k, `keys.${i}`)))];
  }

  /** One write of a key in the caller's transaction (the key already locked). */
  async writeIn(q: Queryable, p: Principal, ns: string, key: string, op: string, fn: (cur: MemoryRow | null) => Change): Promise<MemoryRow | null> {
    const cur = await this.store.entry(q, p.accountId, ns, key);
    const change = fn(cur);
    const by = actorOf(p);
    if (change === 'delete') {
      if (!cur) return null;
      await this.store.remove(q, p.accountId, ns, key);
      await this.store.record(q, p.accountId, ns, key, { version: cur.version + 1, op, value: undefined, by });
      return null;
    }
    if (Buffer.byteLength(JSON.stringify(change.value) ?? '') > MAX_VALUE_BYTES) {
      throw new DomainError('too_large', 'value_too_large', `The value would hold more than ${MAX_VALUE_BYTES} bytes of JSON.`);
    }
    if (!cur && (await this.store.count(q, p.accountId)) >= MAX_ENTRIES) {
      throw new DomainError('conflict', 'memory_full', `The account's memory holds ${MAX_ENTRIES} entries: delete some first.`);
    }
    const version = cur ? cur.version + 1 : await this.store.nextVersion(q, p.accountId, ns, key);
    const expiresAt = change.expiresAt === undefined ? (cur?.expires_at ?? null) : change.expiresAt;
    const row = await this.store.upsert(q, { accountId: p.accountId, namespace: ns, key, value: change.value, version, expiresAt, by });
    await this.store.record(q, p.accountId, ns, key, { version, op, value: change.value, by });
    return row;
  }

  private write(p: Principal, ns: string, key: string, op: string, fn: (cur: MemoryRow | null) => Change) {
    return this.sql.tx(async (q) => {
      await this.store.lockKey(q, p.accountId, ns, key);
      return this.writeIn(q, p, ns, key, op, fn);
    });
  }

  async get(p: Principal, namespace: string, key: string): Promise<MemoryRow> {
    const row = await this.store.entry(this.sql, p.accountId, this.ns(namespace), this.key(key));
    if (!row) throw notFound();
    return row;
  }

  async set(p: Principal, r: { namespace: string; key: string; valueJson: string; ttlSeconds?: number; ifVersion?: number }) {
    const [ns, key, ttl] = [this.ns(r.namespace), this.key(r.key), this.ttl(r.ttlSeconds)];
    const value = parseValue(r.valueJson, 'value');
    return (await this.write(p, ns, key, 'set', (cur) => {
      if (r.ifVersion !== undefined && (cur?.version ?? 0) !== Number(r.ifVersion)) throw mismatch(Number(r.ifVersion), cur);
      return { value, expiresAt: expiry(ttl) };
    }))!;
  }

  async remove(p: Principal, namespace: string, key: string, ifVersion?: number): Promise<number> {
    const [ns, k] = [this.ns(namespace), this.key(key)];
    let existed = false;
    await this.write(p, ns, k, 'delete', (cur) => {
      if (ifVersion !== undefined && ifVersion > 0 && cur?.version !== Number(ifVersion)) throw mismatch(Number(ifVersion), cur);
      existed = !!cur;
      return 'delete';
    });
    return existed ? 1 : 0;
  }

  async list(p: Principal, r: { namespace: string; prefix: string; limit: number; cursor?: string }) {
    const ns = this.ns(r.namespace);
    if (r.prefix.length > 200) throw new DomainError('invalid_argument', 'invalid_request', 'prefix: must be at most 200 characters.');
    const limit = Math.min(Math.max(r.limit || 50, 1), 200);
    const rows = await this.store.list(p.accountId, ns, r.prefix, decodeKeyCursor(r.cursor), limit + 1);
    const page = rows.slice(0, limit);
    return { rows: page, nextCursor: rows.length > limit ? encodeKeyCursor(page[page.length - 1]!.key) : undefined };
  }

  async search(p: Principal, r: { query: string; namespace?: string; limit: number }) {
    const text = r.query.trim();
    if (!text || text.length > 200) throw new DomainError('invalid_argument', 'invalid_request', 'q: must be 1–200 characters.');
    const ns = r.namespace ? this.ns(r.namespace) : undefined;
    return this.store.search(p.accountId, text, ns, Math.min(Math.max(r.limit || 20, 1), 100));
  }

  async getMany(p: Principal, namespace: string, keys: string[]) {
    const ns = this.ns(namespace);
    const wanted = this.keys(keys);
    const rows = await this.store.entries(this.sql, p.accountId, ns, wanted);
    const found = new Set(rows.map((r) => r.key));
    return { rows, missing: wanted.filter((k) => !found.has(k)) };
  }

  /** Sets every item in one transaction: all of them or none. */
  async setMany(p: Principal, namespace: string, items: { key: string; valueJson: string; ttlSeconds?: number }[]) {
    const ns = this.ns(namespace);
    if (items.length < 1 || items.length > MAX_BATCH) {
      throw new DomainError('invalid_argument', 'invalid_request', `entries: must hold 1 to ${MAX_BATCH} entries.`);
    }
    const parsed = items.map((it, i) => ({
      key: this.key(it.key, `entries.${i}.key`),
      value: parseValue(it.valueJson, `entries.${i}.value`),
      expiresAt: expiry(it.ttlSeconds === undefined ? undefined : parseInput(Ttl, it.ttlSeconds, { where: `entries.${i}.ttlSeconds` })),
    }));
    if (new Set(parsed.map((x) => x.key)).size !== parsed.length) {
      throw new DomainError('invalid_argument', 'invalid_request', 'entries: each key at most once.');
    }
    return this.sql.tx(async (q) => {
      for (const k of parsed.map((x) => x.key).sort()) await this.store.lockKey(q, p.accountId, ns, k);
      const out: MemoryRow[] = [];
      for (const it of parsed) out.push((await this.writeIn(q, p, ns, it.key, 'set', () => ({ value: it.value, expiresAt: it.expiresAt })))!);
      return out;
    });
  }

  async deleteMany(p: Principal, namespace: string, keys: string[]): Promise<number> {
    const ns = this.ns(namespace);
    const wanted = this.keys(keys).sort();
    return this.sql.tx(async (q) => {
      let n = 0;
      for (const k of wanted) {
        await this.store.lockKey(q, p.accountId, ns, k);
        await this.writeIn(q, p, ns, k, 'delete', (cur) => {
          if (cur) n++;
          return 'delete';
        });
      }
      return n;
    });
  }

  async increment(p: Principal, r: { namespace: string; key: string; by: number; ttlSeconds?: number }) {
    const [ns, key, ttl] = [this.ns(r.namespace), this.key(r.key), this.ttl(r.ttlSeconds)];
    if (!Number.isFinite(r.by)) throw new DomainError('invalid_argument', 'invalid_request', 'by: must be a finite number.');
    return (await this.write(p, ns, key, 'increment', (cur) => {
      if (cur && typeof cur.value !== 'number') {
        throw new DomainError('unprocessable', 'value_not_number', 'The entry’s value is not a number: increment works on numbers only.');
      }
      const value = ((cur?.value as number | undefined) ?? 0) + r.by;
      return cur ? { value } : { value, expiresAt: expiry(ttl) };
    }))!;
  }

  async append(p: Principal, r: { namespace: string; key: string; valuesJson: string[]; maxLength?: number }) {
    const [ns, key] = [this.ns(r.namespace), this.key(r.key)];
    if (r.valuesJson.length < 1 || r.valuesJson.length > MAX_BATCH) {
      throw new DomainError('invalid_argument', 'invalid_request', `values: must hold 1 to ${MAX_BATCH} items.`);
    }
    const values = r.valuesJson.map((v, i) => parseValue(v, `values.${i}`));
    if (r.maxLength !== undefined && (!Number.isInteger(r.maxLength) || r.maxLength < 1 || r.maxLength > 10_000)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'maxLength: must be 1 to 10000.');
    }
    return (await this.write(p, ns, key, 'append', (cur) => {
      if (cur && !Array.isArray(cur.value)) {
        throw new DomainError('unprocessable', 'value_not_list', 'The entry’s value is not a list: append works on lists only.');
      }
      const list = [...((cur?.value as unknown[] | undefined) ?? []), ...values];
      return { value: r.maxLength ? list.slice(-r.maxLength) : list };
    }))!;
  }

  async pop(p: Principal, r: { namespace: string; key: string; from: string; count: number }) {
    const [ns, key] = [this.ns(r.namespace), this.key(r.key)];
    const from = parseInput(z.enum(['start', 'end'], { error: 'must be start or end' }), r.from || 'end', { where: 'from' });
    const count = r.count || 1;
    if (!Number.isInteger(count) || count < 1 || count > MAX_BATCH)
      throw new DomainError('invalid_argument', 'invalid_request', 'count: must be 1 to 100.');
    let popped: unknown[] = [];
    const row = await this.write(p, ns, key, 'pop', (cur) => {
      if (!cur) throw notFound();
      if (!Array.isArray(cur.value))
        throw new DomainError('unprocessable', 'value_not_list', 'The entry’s value is not a list: pop works on lists only.');
      const list = [...cur.value];
      popped = from === 'start' ? list.splice(0, count) : list.splice(Math.max(list.length - count, 0)).reverse();
      return { value: list };
    });
    return { popped, row: row! };
  }

  async merge(p: Principal, r: { namespace: string; key: string; patchJson: string; ifVersion?: number }) {
    const [ns, key] = [this.ns(r.namespace), this.key(r.key)];
    const patch = parseValue(r.patchJson, 'patch');
    if (!isObject(patch)) throw new DomainError('invalid_argument', 'invalid_request', 'patch: must be a JSON object.');
    return (await this.write(p, ns, key, 'merge', (cur) => {
      if (r.ifVersion !== undefined && (cur?.version ?? 0) !== Number(r.ifVersion)) throw mismatch(Number(r.ifVersion), cur);
      if (cur && !isObject(cur.value)) {
        throw new DomainError('unprocessable', 'value_not_object', 'The entry’s value is not an object: merge works on objects only.');
      }
      return { value: mergePatch(cur?.value ?? {}, patch) };
    }))!;
  }

  async expire(p: Principal, r: { namespace: string; key: string; ttlSeconds?: number }) {
    const [ns, key, ttl] = [this.ns(r.namespace), this.key(r.key), this.ttl(r.ttlSeconds)];
    return (await this.write(p, ns, key, 'expire', (cur) => {
      if (!cur) throw notFound();
      return { value: cur.value, expiresAt: expiry(ttl) };
    }))!;
  }

  async rename(p: Principal, r: { namespace: string; key: string; newKey: string; overwrite: boolean }) {
    const [ns, key, to] = [this.ns(r.namespace), this.key(r.key), this.key(r.newKey, 'newKey')];
    if (key === to) throw new DomainError('invalid_argument', 'invalid_request', 'newKey: must differ from the key.');
    return this.sql.tx(async (q) => {
      for (const k of [key, to].sort()) await this.store.lockKey(q, p.accountId, ns, k);
      const src = await this.store.entry(q, p.accountId, ns, key);
      if (!src) throw notFound();
      const row = await this.writeIn(q, p, ns, to, 'rename', (cur) => {
        if (cur && !r.overwrite) throw new DomainError('conflict', 'key_exists', `The key ${to} holds a value: pass overwrite true to replace it.`);
        return { value: src.value, expiresAt: src.expires_at };
      });
      await this.writeIn(q, p, ns, key, 'rename', () => 'delete');
      return row!;
    });
  }

  async history(p: Principal, namespace: string, key: string, limit: number) {
    const [ns, k] = [this.ns(namespace), this.key(key)];
    const rows = await this.store.history(p.accountId, ns, k, Math.min(Math.max(limit || 20, 1), 100));
    if (!rows.length) throw notFound();
    return rows;
  }

  async restore(p: Principal, r: { namespace: string; key: string; version: number }) {
    const [ns, key] = [this.ns(r.namespace), this.key(r.key)];
    const version = Number(r.version);
    return (await this.sql.tx(async (q) => {
      await this.store.lockKey(q, p.accountId, ns, key);
      const old = await this.store.version(q, p.accountId, ns, key, version);
      if (!old || old.op === 'delete') {
        throw new DomainError('not_found', 'version_not_found', `The key has no value at version ${version} in its history.`);
      }
      return this.writeIn(q, p, ns, key, 'restore', () => ({ value: old.value }));
    }))!;
  }

  async namespaces(p: Principal, limit: number, cursor?: string) {
    const n = Math.min(Math.max(limit || 50, 1), 200);
    const rows = await this.store.namespaces(p.accountId, decodeKeyCursor(cursor), n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? encodeKeyCursor(page[page.length - 1]!.name) : undefined };
  }

  async clear(p: Principal, namespace: string): Promise<number> {
    return this.store.clear(p.accountId, this.ns(namespace));
  }

  /** Copies every live entry of a namespace into another (each a new version there). */
  async copy(p: Principal, r: { namespace: string; to: string; overwrite: boolean }) {
    const [ns, to] = [this.ns(r.namespace), parseInput(Namespace, r.to, { where: 'to' })];
    if (ns === to) throw new DomainError('invalid_argument', 'invalid_request', 'to: must differ from the namespace.');
    return this.sql.tx(async (q) => {
      const rows = await this.store.allLive(q, p.accountId, ns);
      if (!rows.length) throw new DomainError('not_found', 'namespace_not_found', 'The namespace holds no entries.');
      let copied = 0;
      let skipped = 0;
      for (const src of rows) {
        await this.store.lockKey(q, p.accountId, to, src.key);
        if (!r.overwrite && (await this.store.entry(q, p.accountId, to, src.key))) {
          skipped++;
          continue;
        }
        await this.writeIn(q, p, to, src.key, 'copy', () => ({ value: src.value, expiresAt: src.expires_at }));
        copied++;
      }
      return { copied, skipped };
    });
  }
}
