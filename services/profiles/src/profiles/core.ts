import { DomainError, enqueueEvent, ifMatchPasses, type OutboxRelay, type Principal, type Queryable, type Sql } from '@svc/kit';

import type { BranchState, History } from './history.js';
import { ChunkCache, EMPTY_MANIFEST, type Manifest, manifestHashes, ParsedCache, type Snapshot, snapshotObject, snapshotText } from './snapshots.js';
import { type BranchRow, type ProfileRow, ProfileStore, SCHEMA, type Scope, type VersionRow } from './store.js';
import { branchView, etagOf, type ProfileDoc, toBranch, toMeta, versionJson } from './views.js';

/**
 * What every profile operation stands on: consistent reads, locked writes with If-Match, loading
 * a profile's history, chunks and snapshots through the caches, events, and the profile as JSON.
 */

/** 412: a write's If-Match names another state of the profile. */
const etagMismatch = () =>
  new DomainError('precondition_failed', 'etag_mismatch', 'The profile has changed since you read it (If-Match does not match its ETag).');

/** GET includes every version's snapshot on its own while they total at most this (JSON characters). */
export const AUTO_SNAPSHOTS_BUDGET = 1024 * 1024;
/** ...and at most this when asked to (`?snapshots=true`). */
export const MAX_SNAPSHOTS_BYTES = 3 * 1024 * 1024;

export const EMPTY_WORKING = { constraints: [], exemplars: [], comparisons: [] };

export const profileNotFound = () => new DomainError('not_found', 'profile_not_found', 'Profile not found.');
export const branchNotFound = (id: string) => new DomainError('not_found', 'branch_not_found', `Branch ${id} was not found in this profile.`);
export const versionNotFound = (id: string) => new DomainError('not_found', 'version_not_found', `Version ${id} was not found in this profile.`);

export function scopeOf(p: Principal): Scope {
  if (p.kind === 'host') throw new DomainError('forbidden', 'principal_not_allowed', 'A host credential cannot use profiles.');
  return { accountId: p.accountId, projectId: p.projectId };
}

/** What a write loaded under the row lock. */
export interface Loaded {
  row: ProfileRow;
  branches: BranchRow[];
  versions: VersionRow[];
  history: History;
}

export type Event = { subject: string; data: Record<string, unknown> };

/**
 * Version rows are immutable and numbered from 0 per profile: a process keeps those it read, and
 * asks the database only for the ones after them.
 */
class VersionCache {
  private readonly map = new Map<string, VersionRow[]>();
  private rows = 0;

  constructor(private readonly maxRows = 200_000) {}

  get(profileId: string): VersionRow[] | undefined {
    const v = this.map.get(profileId);
    if (v) {
      this.map.delete(profileId);
      this.map.set(profileId, v);
    }
    return v;
  }

  set(profileId: string, rows: VersionRow[]): void {
    const old = this.map.get(profileId);
    if (old) {
      this.map.delete(profileId);
      this.rows -= old.length;
    }
    if (rows.length > this.maxRows / 4) return;
    this.map.set(profileId, rows);
    this.rows += rows.length;
    while (this.rows > this.maxRows) {
      const [k, v] = this.map.entries().next().value as [string, VersionRow[]];
      this.map.delete(k);
      this.rows -= v.length;
    }
  }
}

export class ProfileCore {
  readonly store: ProfileStore;
  readonly chunkCache = new ChunkCache();
  readonly parsedCache = new ParsedCache();
  private readonly versionCache = new VersionCache();

  constructor(
    readonly sql: Sql,
    readonly outbox: () => OutboxRelay | undefined = () => undefined,
  ) {
    this.store = new ProfileStore(sql);
  }

  /** A consistent read: one snapshot of the database for every query. */
  read<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.sql.tx(async (q) => {
      if (this.sql.kind === 'pg') await q.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
      return fn(q);
    });
  }

  /** Locks the profile row, checks If-Match, runs the write, and wakes the outbox relay. */
  async write<T>(
    p: Principal,
    id: string,
    ifMatch: string | undefined,
    fn: (q: Queryable, l: Loaded) => Promise<T>,
    opts: { versions?: boolean } = {},
  ): Promise<T> {
    const scope = scopeOf(p);
    const out = await this.sql.tx(async (q) => {
      const row = await this.store.profile(q, id, scope, true);
      if (!row) throw profileNotFound();
      if (ifMatch !== undefined && !ifMatchPasses(ifMatch, etagOf(row))) throw etagMismatch();
      return fn(q, await this.load(q, row, opts));
    });
    this.outbox()?.kick();
    return out;
  }

  /** A first-class operation: its JSON result, and the profile's ETag afterwards. */
  async operate<R>(
    p: Principal,
    id: string,
    ifMatch: string | undefined,
    fn: (q: Queryable, l: Loaded) => Promise<{ row: ProfileRow | null; result: R }>,
    opts: { versions?: boolean } = {},
  ): Promise<{ result: R; etag: string }> {
    let etag = '';
    const result = await this.write(
      p,
      id,
      ifMatch,
      async (q, l) => {
        const { row, result } = await fn(q, l);
        etag = etagOf(row ?? l.row);
        return result;
      },
      opts,
    );
    return { result, etag };
  }

  /**
   * The profile's branches and, unless told not to (operations that only add a version on a head
   * or move branches need no more), its versions.
   */
  async load(q: Queryable, row: ProfileRow, opts: { versions?: boolean; fill?: boolean } = {}): Promise<Loaded> {
    const branches = await this.store.branches(q, row.id);
    const versions = opts.versions === false ? [] : await this.versionsOf(q, row.id, opts.fill ?? false);
    return {
      row,
      branches,
      versions,
      history: { versions: versions.map(toMeta), branches: branches.map(toBranch), currentBranchId: row.current_branch_id },
    };
  }

  /**
   * What a write that compares before it writes (merge, revert, cherry-pick) reads first: the
   * profile as loadFor loads it, refused 412 as write() refuses it when If-Match does not match.
   */
  async loadForWrite(q: Queryable, p: Principal, id: string, ifMatch: string | undefined): Promise<Loaded> {
    const l = await this.loadFor(q, id, scopeOf(p));
    if (ifMatch !== undefined && !ifMatchPasses(ifMatch, etagOf(l.row))) throw etagMismatch();
    return l;
  }

  async loadFor(q: Queryable, id: string, scope: Scope): Promise<Loaded> {
    const row = await this.store.profile(q, id, scope);
    if (!row) throw profileNotFound();
    return this.load(q, row, { fill: true });
  }

  /** Versions in order: cached rows, plus the ones after them. Only reads of committed state fill the cache. */
  async versionsOf(q: Queryable, profileId: string, fill: boolean): Promise<VersionRow[]> {
    const cached = this.versionCache.get(profileId) ?? [];
    const tail = await this.store.versions(q, profileId, cached.length ? cached[cached.length - 1]!.seq + 1 : 0);
    if (!tail.length) return cached;
    const all = cached.length ? [...cached, ...tail] : tail;
    if (fill) this.versionCache.set(profileId, all);
    return all;
  }

  branch(l: Loaded, id: string): BranchState {
    const b = l.history.branches.find((x) => x.id === id);
    if (!b) throw branchNotFound(id);
    return b;
  }

  async chunksFor(q: Queryable, profileId: string, manifests: Manifest[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const missing: string[] = [];
    for (const m of manifests) {
      for (const h of manifestHashes(m)) {
        if (out.has(h)) continue;
        const c = this.chunkCache.get(h);
        if (c !== undefined) out.set(h, c);
        else if (!missing.includes(h)) missing.push(h);
      }
    }
    if (missing.length) {
      for (const c of await this.store.chunks(q, profileId, missing)) {
        out.set(c.hash, c.body);
        this.chunkCache.set(c.hash, c.body);
      }
    }
    return out;
  }

  async snapshotOf(q: Queryable, profileId: string, versionId: string | null): Promise<Snapshot> {
    if (!versionId) return {};
    const m = (await this.store.manifests(q, profileId, [versionId])).get(versionId);
    if (!m) return {};
    return snapshotObject(m, await this.chunksFor(q, profileId, [m]), this.parsedCache);
  }

  async emit(q: Queryable, row: ProfileRow, events: Event[]): Promise<void> {
    for (const e of events) await enqueueEvent(q, SCHEMA, { subject: e.subject, accountId: row.account_id, data: e.data });
  }

  /** The profile as JSON text, assembled from stored pieces. */
  async render(q: Queryable, row: ProfileRow, opts: { snapshots?: boolean; fill?: boolean }): Promise<ProfileDoc> {
    const branches = (await this.store.branches(q, row.id)).map(toBranch);
    const versions = await this.versionsOf(q, row.id, opts.fill ?? false);
    const head = branches.find((b) => b.id === row.current_branch_id)?.headVersionId ?? null;
    const total = versions.reduce((n, v) => n + v.snapshot_bytes, 0);
    if (opts.snapshots === true && total > MAX_SNAPSHOTS_BYTES) {
      throw new DomainError(
        'too_large',
        'snapshots_too_large',
        `The versions' snapshots total ${total} bytes, over ${MAX_SNAPSHOTS_BYTES}: ` +
          'read them one by one (GET /profiles/:id/versions/:versionId).',
      );
    }
    const withSnapshots = opts.snapshots ?? total <= AUTO_SNAPSHOTS_BUDGET;
    const ids = withSnapshots ? versions.map((v) => v.id) : head ? [head] : [];
    const manifests = await this.store.manifests(q, row.id, ids);
    const chunks = await this.chunksFor(q, row.id, [...manifests.values()]);
    const text = (vid: string) => snapshotText(manifests.get(vid) ?? EMPTY_MANIFEST, chunks);
    const effective = head ? text(head) : '{}';
    const versionsJson = versions.map((v) => versionJson(v, withSnapshots ? (v.id === head ? effective : text(v.id)) : undefined));
    const json =
      `{"id":${JSON.stringify(row.id)},"name":${JSON.stringify(row.name)},"projectId":${JSON.stringify(row.project_id)},` +
      `"profileData":{"versions":[${versionsJson.join(',')}],` +
      `"branches":${JSON.stringify(branches.map(branchView))},"currentBranchId":${JSON.stringify(row.current_branch_id)},` +
      `"workingChanges":${JSON.stringify(row.working)}},"effectiveSnapshot":${effective},` +
      `"createdAt":${JSON.stringify(row.created_at.toISOString())},"updatedAt":${JSON.stringify(row.updated_at.toISOString())}}`;
    return { json, etag: etagOf(row) };
  }
}
