import { createHash } from 'node:crypto';

import { DomainError, enqueueEvent, ifMatchPasses, newId, type OutboxRelay, type Principal, type Queryable, type Sql } from '@svc/kit';

import {
  ancestors,
  type BranchState,
  type Change,
  chain,
  checkHistory,
  type History,
  MAIN,
  mergeBase,
  patchToChange,
  unprocessable,
  type VersionMeta,
} from './history.js';
import { type Conflict, diffSnapshots, mergeSnapshots, type Resolutions, type Side, type SnapshotDiff } from './merge.js';
import {
  CreateProfileIn,
  LIMITS,
  Message,
  MergeIn,
  parse,
  parseJson,
  ProfilePatchIn,
  ProjectId,
  RefId,
} from './schemas.js';
import {
  applyItemsAt,
  type Chunk,
  ChunkCache,
  computeDerived,
  deepEqual,
  duplicateItemId,
  EMPTY_MANIFEST,
  ITEM_KINDS,
  type Manifest,
  manifestHashes,
  nextManifest,
  ParsedCache,
  type Snapshot,
  snapshotObject,
  snapshotParts,
  snapshotText,
  toManifest,
} from './snapshots.js';
import {
  type BranchRow,
  type NewVersion,
  type ProfileRow,
  ProfileStore,
  SCHEMA,
  type Scope,
  type SummaryRow,
  type VersionRow,
} from './store.js';

/** GET includes every version's snapshot on its own while they total at most this (JSON characters). */
export const AUTO_SNAPSHOTS_BUDGET = 1024 * 1024;
/** ...and at most this when asked to (`?snapshots=true`). */
export const MAX_SNAPSHOTS_BYTES = 3 * 1024 * 1024;

export const EMPTY_WORKING = { constraints: [], exemplars: [], comparisons: [] };

const profileNotFound = () => new DomainError('not_found', 'profile_not_found', 'Profile not found.');
const branchNotFound = (id: string) => new DomainError('not_found', 'branch_not_found', `Branch ${id} was not found in this profile.`);
const versionNotFound = (id: string) => new DomainError('not_found', 'version_not_found', `Version ${id} was not found in this profile.`);

/** A quoted strong entity tag that changes on every write. */
export function etagOf(row: { id: string; rev: number }): string {
  return `"${createHash('sha256').update(`${row.id}:${row.rev}`).digest('base64url').slice(0, 27)}"`;
}

function scopeOf(p: Principal): Scope {
  if (p.kind === 'host') throw new DomainError('forbidden', 'principal_not_allowed', 'A host credential cannot use profiles.');
  return { accountId: p.accountId, projectId: p.projectId };
}

// Views --------------------------------------------------------------------------------------------

export interface VersionView {
  id: string;
  branchId: string;
  parentVersionId: string | null;
  message: string;
  createdAt: string;
  snapshot?: Snapshot;
}

function versionView(v: VersionRow | VersionMeta): VersionView {
  const r = 'branch_id' in v ? v : null;
  return r
    ? { id: r.id, branchId: r.branch_id, parentVersionId: r.parent_version_id, message: r.message, createdAt: r.created_at.toISOString() }
    : {
        id: v.id,
        branchId: (v as VersionMeta).branchId,
        parentVersionId: (v as VersionMeta).parentVersionId,
        message: v.message,
        createdAt: (v as VersionMeta).createdAt.toISOString(),
      };
}

function versionJson(v: VersionRow, snapshot?: string): string {
  const base = JSON.stringify(versionView(v));
  return snapshot === undefined ? base : `${base.slice(0, -1)},"snapshot":${snapshot}}`;
}

export function branchView(b: BranchState) {
  return {
    id: b.id,
    name: b.name,
    ...(b.description !== null ? { description: b.description } : {}),
    headVersionId: b.headVersionId,
    ...(b.parentBranchId !== null ? { parentBranchId: b.parentBranchId } : {}),
    createdAt: b.createdAt.toISOString(),
  };
}

export function summaryView(r: SummaryRow) {
  return {
    id: r.id,
    name: r.name,
    projectId: r.project_id,
    currentBranchId: r.current_branch_id,
    versionCount: r.version_count,
    branchCount: r.branch_count,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    etag: etagOf(r),
  };
}

const toBranch = (b: BranchRow): BranchState => ({
  id: b.id,
  name: b.name,
  description: b.description,
  headVersionId: b.head_version_id,
  baseVersionId: b.base_version_id,
  parentBranchId: b.parent_branch_id,
  createdAt: b.created_at,
});
const toMeta = (v: VersionRow): VersionMeta => ({
  id: v.id,
  branchId: v.branch_id,
  parentVersionId: v.parent_version_id,
  message: v.message,
  createdAt: v.created_at,
  mergeParentId: v.merge_parent_id,
});

/** What a write loaded under the row lock. */
interface Loaded {
  row: ProfileRow;
  branches: BranchRow[];
  versions: VersionRow[];
  history: History;
}

/** A version a write adds, with its snapshot (to store) or its manifest ready (and the chunks it adds). */
interface Addition {
  meta: VersionMeta;
  snapshot?: Snapshot;
  manifest?: { manifest: Manifest; bytes: number; chunks?: Chunk[] };
}

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

type Event = { subject: string; data: Record<string, unknown> };

export interface MergeResult {
  sourceBranchId: string;
  targetBranchId: string;
  mergeBaseVersionId: string | null;
  dryRun: boolean;
  merged: boolean;
  upToDate: boolean;
  conflicts: Conflict[];
  version: VersionView | null;
  /** What the merge does (or would do) to the target's head, per item. */
  changes: SnapshotDiff | null;
}

export interface ProfileDoc {
  /** The profile as JSON text. */
  json: string;
  etag: string;
}

/** Taste profiles: versions, branches, working changes, and the rules that keep history true. */
export class ProfilesDomain {
  readonly store: ProfileStore;
  private readonly chunkCache = new ChunkCache();
  private readonly parsedCache = new ParsedCache();
  private readonly versionCache = new VersionCache();

  constructor(
    private readonly sql: Sql,
    private readonly outbox: () => OutboxRelay | undefined = () => undefined,
  ) {
    this.store = new ProfileStore(sql);
  }

  // Profiles -------------------------------------------------------------------------------------

  async create(p: Principal, body: unknown): Promise<ProfileDoc> {
    const scope = scopeOf(p);
    const input = parse(CreateProfileIn, body);
    if (p.projectId && input.projectId && input.projectId !== p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
    }
    const out = await this.sql.tx(async (q) => {
      const row = await this.store.insertProfile(q, {
        id: newId('prof'),
        account_id: scope.accountId,
        project_id: scope.projectId ?? input.projectId ?? null,
        name: input.name ?? 'Untitled profile',
        working: EMPTY_WORKING,
      });
      await this.emit(q, row, [
        { subject: 'profiles.profile.created', data: { profileId: row.id, name: row.name, projectId: row.project_id } },
      ]);
      if (!input.profileData) return this.render(q, row, {});
      // Created with history (an import): the same rules as a PATCH on the fresh profile.
      const loaded = await this.load(q, row);
      return this.applyPatch(q, p, loaded, { profileData: input.profileData }, {});
    });
    this.outbox()?.kick();
    return out;
  }

  async list(
    p: Principal,
    input: { limit: number; cursor?: string; projectId?: string },
  ): Promise<{ profiles: ReturnType<typeof summaryView>[]; nextCursor?: string }> {
    const scope = scopeOf(p);
    if (input.projectId !== undefined) parse(ProjectId, input.projectId, 'query.projectId');
    if (p.projectId && input.projectId && input.projectId !== p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
    }
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    const before = input.cursor ? decodeCursor(input.cursor, /^prof_[0-9a-z]{26}$/) : undefined;
    const rows = await this.store.list({ ...scope, projectId: scope.projectId ?? input.projectId, before, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      profiles: page.map(summaryView),
      nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined,
    };
  }

  async get(p: Principal, id: string, opts: { snapshots?: boolean } = {}): Promise<ProfileDoc> {
    const scope = scopeOf(p);
    return this.read(async (q) => {
      const row = await this.store.profile(q, id, scope);
      if (!row) throw profileNotFound();
      return this.render(q, row, { ...opts, fill: true });
    });
  }

  /** PATCH: arrays replaced as sent, history kept true (422 otherwise), effectiveSnapshot recomputed. */
  async update(p: Principal, id: string, body: unknown, ifMatch?: string, opts: { snapshots?: boolean } = {}): Promise<ProfileDoc> {
    const patch = parse(ProfilePatchIn, body);
    if (patch.id !== undefined && patch.id !== id) {
      throw new DomainError('invalid_argument', 'invalid_request', `body.id: must be ${id}, the profile being updated.`);
    }
    return this.write(p, id, ifMatch, (q, loaded) => this.applyPatch(q, p, loaded, patch, opts));
  }

  async remove(p: Principal, id: string, ifMatch?: string): Promise<void> {
    await this.write(p, id, ifMatch, async (q, { row }) => {
      await this.store.deleteProfile(q, row.id);
      await enqueueEvent(q, SCHEMA, {
        subject: 'profiles.profile.deleted',
        accountId: row.account_id,
        data: { profileId: row.id, byKeyId: p.keyId ?? null },
      });
      return { json: '', etag: '' };
    }, { versions: false });
  }

  // First-class operations -----------------------------------------------------------------------

  /** Commits the working changes onto a branch (the current one by default), and clears them. */
  async commit(p: Principal, id: string, input: { message: string; branchId?: string }, ifMatch?: string) {
    const message = parse(Message, input.message, 'body.message');
    return this.operate(
      p,
      id,
      ifMatch,
      async (q, l) => {
        const branch = this.branch(l, input.branchId ?? l.row.current_branch_id);
        const working = l.row.working;
        for (const k of ITEM_KINDS) {
          const dup = Array.isArray(working[k]) ? duplicateItemId(working[k] as unknown[]) : undefined;
          if (dup) throw unprocessable('duplicate_item_id', `workingChanges.${k} holds item ${dup} more than once.`);
        }
        // Only the chunks from the first changed item on are made anew; the head's others are reused.
        const headManifest = branch.headVersionId
          ? ((await this.store.manifests(q, l.row.id, [branch.headVersionId])).get(branch.headVersionId) ?? EMPTY_MANIFEST)
          : EMPTY_MANIFEST;
        const texts = await this.chunksFor(q, l.row.id, [headManifest]);
        const { snapshot: head, offsets } = snapshotParts(headManifest, texts, this.parsedCache);
        const { snapshot, firstChanged } = buildCommitSnapshot(head, working);
        const next = nextManifest(snapshot, headManifest, offsets, firstChanged, (h) => texts.get(h)?.length ?? 2);
        const known = new Set(manifestHashes(headManifest));
        const meta: VersionMeta = {
          id: newId('ver'),
          branchId: branch.id,
          parentVersionId: branch.headVersionId,
          message,
          createdAt: new Date(),
        };
        const change: Change = {
          newVersions: [meta],
          branches: l.history.branches.map((b) => (b.id === branch.id ? { ...b, headVersionId: meta.id } : b)),
          currentBranchId: l.row.current_branch_id,
        };
        const addition: Addition = {
          meta,
          manifest: { manifest: next.manifest, bytes: next.bytes, chunks: next.chunks.filter((c) => !known.has(c.hash)) },
        };
        const row = await this.persist(q, p, l, change, [addition], { working: EMPTY_WORKING, operation: 'commit' });
        return { row, result: versionView(meta) };
      },
      { versions: false },
    );
  }

  /** A new branch starting at its parent's head (the current branch by default). */
  async createBranch(
    p: Principal,
    id: string,
    input: { name: string; description?: string; parentBranchId?: string },
    ifMatch?: string,
  ) {
    const name = input.name?.trim();
    if (!name || name.length > LIMITS.name || /[\u0000-\u001f\u007f]/.test(name)) {
      throw new DomainError(
        'invalid_argument',
        'invalid_request',
        `body.name: must be 1 to ${LIMITS.name} characters without control characters.`,
      );
    }
    if (input.description !== undefined && input.description.length > LIMITS.description) {
      throw new DomainError('invalid_argument', 'invalid_request', `body.description: must be at most ${LIMITS.description} characters.`);
    }
    return this.operate(p, id, ifMatch, async (q, l) => {
      const parent = this.branch(l, input.parentBranchId ?? l.row.current_branch_id);
      if (l.history.branches.some((b) => b.name === name)) {
        throw new DomainError('conflict', 'branch_name_taken', `A branch named ${JSON.stringify(name)} exists already.`);
      }
      if (l.history.branches.length >= LIMITS.branches) {
        throw unprocessable('too_many_branches', `A profile holds at most ${LIMITS.branches} branches.`);
      }
      const branch: BranchState = {
        id: newId('br'),
        name,
        description: input.description ?? null,
        headVersionId: parent.headVersionId,
        baseVersionId: parent.headVersionId,
        parentBranchId: parent.id,
        createdAt: new Date(),
      };
      const change: Change = {
        newVersions: [],
        branches: [...l.history.branches, branch],
        currentBranchId: l.row.current_branch_id,
      };
      const row = await this.persist(q, p, l, change, [], { operation: 'branch' });
      return { row, result: branchView(branch) };
    }, { versions: false });
  }

  /** Deletes a branch; its versions stay (commits are immutable). */
  async deleteBranch(p: Principal, id: string, branchId: string, ifMatch?: string) {
    return this.operate(p, id, ifMatch, async (q, l) => {
      const branch = this.branch(l, branchId);
      if (branch.id === MAIN) throw unprocessable('main_branch_required', 'The branch main cannot be deleted.');
      if (branch.id === l.row.current_branch_id) {
        throw unprocessable('branch_is_current', `Branch ${branch.id} is checked out: check out another branch first.`);
      }
      const child = l.history.branches.find((b) => b.parentBranchId === branch.id);
      if (child) {
        throw unprocessable('branch_has_children', `Branch ${branch.id} is the parent of branch ${child.id}: delete that one first.`);
      }
      const change: Change = {
        newVersions: [],
        branches: l.history.branches.filter((b) => b.id !== branch.id),
        currentBranchId: l.row.current_branch_id,
      };
      const row = await this.persist(q, p, l, change, [], { operation: 'branch_delete' });
      return { row, result: { success: true as const } };
    }, { versions: false });
  }

  /** Switches branch: the effective snapshot follows it; the working changes carry along. */
  async checkout(p: Principal, id: string, branchId: string, ifMatch?: string, opts: { snapshots?: boolean } = {}): Promise<ProfileDoc> {
    return this.write(p, id, ifMatch, async (q, l) => {
      const branch = this.branch(l, branchId);
      const change: Change = { newVersions: [], branches: l.history.branches, currentBranchId: branch.id };
      const row = await this.persist(q, p, l, change, [], { operation: 'checkout' });
      return this.render(q, row, opts);
    }, { versions: false });
  }

  /** Rolls back by committing, as a new version on top of the head, the state of an earlier one. */
  async rollback(p: Principal, id: string, input: { versionId: string; branchId?: string; message?: string }, ifMatch?: string) {
    const message = input.message === undefined ? undefined : parse(Message, input.message, 'body.message');
    return this.operate(p, id, ifMatch, async (q, l) => {
      const branch = this.branch(l, input.branchId ?? l.row.current_branch_id);
      const all = new Map(l.history.versions.map((v) => [v.id, v]));
      if (!all.has(input.versionId)) throw versionNotFound(input.versionId);
      if (!chain(all, branch.headVersionId).some((v) => v.id === input.versionId)) {
        throw unprocessable('version_not_in_history', `Version ${input.versionId} is not in the history of branch ${branch.id}.`);
      }
      const source = (await this.store.manifests(q, l.row.id, [input.versionId])).get(input.versionId)!;
      const bytes = l.versions.find((v) => v.id === input.versionId)!.snapshot_bytes;
      const meta: VersionMeta = {
        id: newId('ver'),
        branchId: branch.id,
        parentVersionId: branch.headVersionId,
        message: message ?? `Roll back to ${input.versionId}`,
        createdAt: new Date(),
      };
      const change: Change = {
        newVersions: [meta],
        branches: l.history.branches.map((b) => (b.id === branch.id ? { ...b, headVersionId: meta.id } : b)),
        currentBranchId: l.row.current_branch_id,
      };
      const row = await this.persist(q, p, l, change, [{ meta, manifest: { manifest: source, bytes } }], {
        operation: 'rollback',
        events: [
          {
            subject: 'profiles.rollback.created',
            data: { profileId: l.row.id, branchId: branch.id, versionId: meta.id, restoredVersionId: input.versionId },
          },
        ],
      });
      return { row, result: versionView(meta) };
    });
  }

  /**
   * Three-way merge of a source branch into a target branch (the current one by default), item by
   * item. Conflicts block the merge (409) unless resolved per item or by a strategy; `dryRun`
   * previews the outcome and changes nothing.
   */
  async merge(p: Principal, id: string, body: unknown, ifMatch?: string) {
    const input = parse(MergeIn, body);
    return this.operate<MergeResult>(p, id, ifMatch, async (q, l) => {
      const target = this.branch(l, input.targetBranchId ?? l.row.current_branch_id);
      const source = this.branch(l, input.sourceBranchId);
      if (source.id === target.id) throw unprocessable('merge_same_branch', 'A branch cannot be merged into itself.');
      const all = new Map(l.history.versions.map((v) => [v.id, v]));
      const baseId = mergeBase(all, target.headVersionId, source.headVersionId);
      const common = { sourceBranchId: source.id, targetBranchId: target.id, mergeBaseVersionId: baseId, dryRun: input.dryRun ?? false };
      const upToDate = source.headVersionId === null || ancestors(all, target.headVersionId).has(source.headVersionId);
      if (upToDate) {
        return { row: null, result: { ...common, merged: false, upToDate: true, conflicts: [], version: null, changes: null } };
      }
      const base = await this.snapshotOf(q, l.row.id, baseId);
      const ours = await this.snapshotOf(q, l.row.id, target.headVersionId);
      const theirs = await this.snapshotOf(q, l.row.id, source.headVersionId);
      const outcome = mergeSnapshots(base, ours, theirs, {
        strategy: input.strategy as Side | undefined,
        resolutions: input.resolutions as Resolutions | undefined,
      });
      const open = outcome.conflicts.filter((c) => c.resolution === null);
      const changes = diffSnapshots(ours, outcome.snapshot);
      if (input.dryRun) {
        return { row: null, result: { ...common, merged: false, upToDate: false, conflicts: outcome.conflicts, version: null, changes } };
      }
      if (open.length) {
        throw new DomainError(
          'conflict',
          'merge_conflict',
          `${open.length} item${open.length === 1 ? '' : 's'} changed on both branches: resolve ` +
            `${open.length === 1 ? 'it' : 'them'} with resolutions or a strategy (details.conflicts lists them).`,
          { conflicts: open.slice(0, 100) },
        );
      }
      const meta: VersionMeta = {
        id: newId('ver'),
        branchId: target.id,
        parentVersionId: target.headVersionId,
        message: input.message ?? `Merge branch ${source.name} into ${target.name}`,
        createdAt: new Date(),
        mergeParentId: source.headVersionId,
      };
      const change: Change = {
        newVersions: [meta],
        branches: l.history.branches.map((b) => (b.id === target.id ? { ...b, headVersionId: meta.id } : b)),
        currentBranchId: l.row.current_branch_id,
      };
      const row = await this.persist(q, p, l, change, [{ meta, snapshot: outcome.snapshot }], {
        operation: 'merge',
        events: [
          {
            subject: 'profiles.merge.completed',
            data: {
              profileId: l.row.id,
              sourceBranchId: source.id,
              targetBranchId: target.id,
              versionId: meta.id,
              mergeBaseVersionId: baseId,
              conflictsResolved: outcome.conflicts.length,
            },
          },
        ],
      });
      return {
        row,
        result: { ...common, merged: true, upToDate: false, conflicts: outcome.conflicts, version: versionView(meta), changes },
      };
    });
  }

  // Reads ----------------------------------------------------------------------------------------

  /** A branch's history, newest first, without snapshots. */
  async log(p: Principal, id: string, input: { branchId?: string; limit: number; cursor?: string }) {
    const scope = scopeOf(p);
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    return this.read(async (q) => {
      const l = await this.loadFor(q, id, scope);
      const branch = this.branch(l, input.branchId ?? l.row.current_branch_id);
      const all = new Map(l.history.versions.map((v) => [v.id, v]));
      const history = chain(all, branch.headVersionId);
      let start = 0;
      if (input.cursor) {
        const from = decodeCursor(input.cursor, /^.{1,128}$/);
        start = history.findIndex((v) => v.id === from);
        if (start < 0) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid for this branch.');
      }
      const page = history.slice(start, start + limit);
      const next = history[start + limit];
      return { branchId: branch.id, versions: page.map(versionView), nextCursor: next ? encodeCursor(next.id) : null };
    });
  }

  /** One version, with its snapshot. */
  async version(p: Principal, id: string, versionId: string) {
    const scope = scopeOf(p);
    return this.read(async (q) => {
      const row = await this.store.profile(q, id, scope);
      if (!row) throw profileNotFound();
      const v = (await this.versionsOf(q, row.id, true)).find((x) => x.id === versionId);
      if (!v) throw versionNotFound(versionId);
      const m = (await this.store.manifests(q, row.id, [v.id])).get(v.id)!;
      return versionJson(v, snapshotText(m, await this.chunksFor(q, row.id, [m])));
    });
  }

  /**
   * What changed between two states, per item: `from` and `to` are version ids or branch ids
   * (their heads). `to` defaults to the current branch's head and `from` to the parent of `to`.
   */
  async diff(p: Principal, id: string, input: { from?: string; to?: string }) {
    const scope = scopeOf(p);
    return this.read(async (q) => {
      const l = await this.loadFor(q, id, scope);
      const resolve = (ref: string): string | null => {
        if (l.history.versions.some((v) => v.id === ref)) return ref;
        const b = l.history.branches.find((x) => x.id === ref);
        if (b) return b.headVersionId;
        throw new DomainError('not_found', 'ref_not_found', `${ref} is neither a version nor a branch of this profile.`);
      };
      const to = input.to !== undefined ? resolve(input.to) : this.branch(l, l.row.current_branch_id).headVersionId;
      const from =
        input.from !== undefined ? resolve(input.from) : to ? (l.history.versions.find((v) => v.id === to)?.parentVersionId ?? null) : null;
      const a = await this.snapshotOf(q, l.row.id, from);
      const b = await this.snapshotOf(q, l.row.id, to);
      return { from, to, ...diffSnapshots(a, b) };
    });
  }

  // Internals ------------------------------------------------------------------------------------

  /** A consistent read: one snapshot of the database for every query. */
  private read<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.sql.tx(async (q) => {
      if (this.sql.kind === 'pg') await q.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
      return fn(q);
    });
  }

  /** Locks the profile row, checks If-Match, runs the write, and wakes the outbox relay. */
  private async write<T>(
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
      if (ifMatch !== undefined && !ifMatchPasses(ifMatch, etagOf(row))) {
        throw new DomainError(
          'precondition_failed',
          'etag_mismatch',
          'The profile has changed since you read it (If-Match does not match its ETag).',
        );
      }
      return fn(q, await this.load(q, row, opts));
    });
    this.outbox()?.kick();
    return out;
  }

  /** A first-class operation: its JSON result, and the profile's ETag afterwards. */
  private async operate<R>(
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
  private async load(q: Queryable, row: ProfileRow, opts: { versions?: boolean; fill?: boolean } = {}): Promise<Loaded> {
    const branches = await this.store.branches(q, row.id);
    const versions = opts.versions === false ? [] : await this.versionsOf(q, row.id, opts.fill ?? false);
    return {
      row,
      branches,
      versions,
      history: { versions: versions.map(toMeta), branches: branches.map(toBranch), currentBranchId: row.current_branch_id },
    };
  }

  private async loadFor(q: Queryable, id: string, scope: Scope): Promise<Loaded> {
    const row = await this.store.profile(q, id, scope);
    if (!row) throw profileNotFound();
    return this.load(q, row, { fill: true });
  }

  /** Versions in order: cached rows, plus the ones after them. Only reads of committed state fill the cache. */
  private async versionsOf(q: Queryable, profileId: string, fill: boolean): Promise<VersionRow[]> {
    const cached = this.versionCache.get(profileId) ?? [];
    const tail = await this.store.versions(q, profileId, cached.length ? cached[cached.length - 1]!.seq + 1 : 0);
    if (!tail.length) return cached;
    const all = cached.length ? [...cached, ...tail] : tail;
    if (fill) this.versionCache.set(profileId, all);
    return all;
  }

  private branch(l: Loaded, id: string): BranchState {
    const b = l.history.branches.find((x) => x.id === id);
    if (!b) throw branchNotFound(id);
    return b;
  }

  private async chunksFor(q: Queryable, profileId: string, manifests: Manifest[]): Promise<Map<string, string>> {
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

  private async snapshotOf(q: Queryable, profileId: string, versionId: string | null): Promise<Snapshot> {
    if (!versionId) return {};
    const m = (await this.store.manifests(q, profileId, [versionId])).get(versionId);
    if (!m) return {};
    return snapshotObject(m, await this.chunksFor(q, profileId, [m]), this.parsedCache);
  }

  private async applyPatch(
    q: Queryable,
    p: Principal,
    l: Loaded,
    patch: { name?: string; profileData?: Parameters<typeof patchToChange>[1] },
    opts: { snapshots?: boolean },
  ): Promise<ProfileDoc> {
    const data = patch.profileData ?? {};
    const { change, newSnapshots, sentSnapshots } = patchToChange(l.history, data, new Date());
    checkHistory(l.history, change);
    if (l.history.versions.length + change.newVersions.length > LIMITS.versions) {
      throw unprocessable('too_many_versions', `A profile holds at most ${LIMITS.versions} versions.`);
    }
    for (const [vid, snap] of newSnapshots) {
      for (const k of ITEM_KINDS) {
        const dup = Array.isArray(snap[k]) ? duplicateItemId(snap[k] as unknown[]) : undefined;
        if (dup) throw unprocessable('duplicate_item_id', `The snapshot of version ${vid} holds ${k} item ${dup} more than once.`);
      }
    }
    if (data.workingChanges) {
      for (const k of ITEM_KINDS) {
        const arr = data.workingChanges[k];
        const dup = Array.isArray(arr) ? duplicateItemId(arr) : undefined;
        if (dup) throw unprocessable('duplicate_item_id', `workingChanges.${k} holds item ${dup} more than once.`);
      }
    }
    // A committed version sent back with its snapshot must carry exactly the stored one.
    if (sentSnapshots.size) {
      const stored = await this.store.manifests(q, l.row.id, [...sentSnapshots.keys()]);
      for (const [vid, sent] of sentSnapshots) {
        const m = stored.get(vid)!;
        if (sameManifest(m, toManifest(sent).manifest)) continue;
        const current = snapshotObject(m, await this.chunksFor(q, l.row.id, [m]));
        if (!deepEqual(current, sent)) {
          throw unprocessable('version_immutable', `Version ${vid} is committed and its snapshot cannot change: commits are immutable.`);
        }
      }
    }
    const additions: Addition[] = change.newVersions.map((meta) => ({ meta, snapshot: newSnapshots.get(meta.id)! }));
    const row = await this.persist(q, p, l, change, additions, {
      working: data.workingChanges,
      name: patch.name,
      operation: 'patch',
    });
    return this.render(q, row, opts);
  }

  /**
   * Writes a checked change: chunks and versions first (immutable rows), then branches and the
   * profile row (its revision, hence its ETag, moves on), and the events, all in the caller's
   * transaction.
   */
  private async persist(
    q: Queryable,
    p: Principal,
    l: Loaded,
    change: Change,
    additions: Addition[],
    opts: { working?: unknown; name?: string; operation: string; events?: Event[] },
  ): Promise<ProfileRow> {
    checkHistory(l.history, change);
    let seq = l.row.next_seq;
    const rows: NewVersion[] = [];
    // Chunks the parents already hold need not be sent to the database again.
    const parentIds = [...new Set(additions.map((a) => a.meta.parentVersionId).filter((x): x is string => !!x))];
    const known = new Set<string>();
    if (additions.some((a) => a.snapshot)) {
      for (const m of (await this.store.manifests(q, l.row.id, parentIds)).values()) for (const h of manifestHashes(m)) known.add(h);
    }
    const fresh = new Map<string, Chunk>();
    for (const a of additions) {
      let manifest: Manifest;
      let bytes: number;
      if (a.manifest) {
        ({ manifest, bytes } = a.manifest);
        for (const c of a.manifest.chunks ?? []) {
          if (known.has(c.hash)) continue;
          known.add(c.hash);
          fresh.set(c.hash, c);
        }
      } else {
        const split = toManifest(a.snapshot ?? {});
        ({ manifest, bytes } = split);
        for (const c of split.chunks) {
          if (known.has(c.hash)) continue;
          known.add(c.hash);
          fresh.set(c.hash, c);
        }
      }
      rows.push({
        id: a.meta.id,
        seq: seq++,
        branch_id: a.meta.branchId,
        parent_version_id: a.meta.parentVersionId,
        merge_parent_id: a.meta.mergeParentId ?? null,
        message: a.meta.message,
        created_at: a.meta.createdAt,
        manifest,
        snapshot_bytes: bytes,
      });
    }
    await this.store.insertChunks(q, l.row.id, [...fresh.values()]);
    for (const c of fresh.values()) this.chunkCache.set(c.hash, c.body);
    await this.store.insertVersions(q, l.row.id, rows);
    if (!sameBranches(l.history.branches, change.branches)) {
      await this.store.saveBranches(
        q,
        l.row.id,
        change.branches.map((b) => ({
          id: b.id,
          name: b.name,
          description: b.description,
          head_version_id: b.headVersionId,
          base_version_id: b.baseVersionId,
          parent_branch_id: b.parentBranchId,
          created_at: b.createdAt,
        })),
      );
    }
    const row = await this.store.updateProfile(q, l.row.id, {
      name: opts.name ?? l.row.name,
      current_branch_id: change.currentBranchId,
      working: opts.working ?? l.row.working,
      next_seq: seq,
    });
    await this.emit(q, row, [...historyEvents(l, change, opts.operation), ...(opts.events ?? []), {
      subject: 'profiles.profile.updated',
      data: {
        profileId: row.id,
        operation: opts.operation,
        currentBranchId: row.current_branch_id,
        etag: etagOf(row),
        byKeyId: p.keyId ?? null,
      },
    }]);
    return row;
  }

  private async emit(q: Queryable, row: ProfileRow, events: Event[]): Promise<void> {
    for (const e of events) await enqueueEvent(q, SCHEMA, { subject: e.subject, accountId: row.account_id, data: e.data });
  }

  /** The profile as JSON text, assembled from stored pieces. */
  private async render(q: Queryable, row: ProfileRow, opts: { snapshots?: boolean; fill?: boolean }): Promise<ProfileDoc> {
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

/** The snapshot a first-class commit makes: the head's, with the working changes applied. */
export function buildCommitSnapshot(
  head: Snapshot,
  working: Record<string, unknown>,
): { snapshot: Snapshot; firstChanged: Record<string, number> } {
  const out: Snapshot = { ...head };
  const firstChanged: Record<string, number> = {};
  for (const k of ITEM_KINDS) {
    const base = Array.isArray(head[k]) ? (head[k] as unknown[]) : [];
    const changes = Array.isArray(working[k]) ? (working[k] as unknown[]) : [];
    const applied = applyItemsAt(base, changes);
    out[k] = applied.items;
    firstChanged[k] = applied.firstChanged;
  }
  const obj = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  out.latentScores = { ...obj(head.latentScores), ...obj(working.latentScores) };
  Object.assign(out, computeDerived(out));
  return { snapshot: out, firstChanged };
}

function sameManifest(a: Manifest, b: Manifest): boolean {
  if (a.keys.length !== b.keys.length || a.keys.some((k, i) => k !== b.keys[i])) return false;
  for (const k of a.keys) {
    const la = a.lists[k];
    const lb = b.lists[k];
    if (!la !== !lb) return false;
    if (la && lb) {
      if (la.length !== lb.length || la.some((h, i) => h !== lb[i])) return false;
    } else if (!deepEqual(a.rest[k], b.rest[k])) return false;
  }
  return true;
}

function sameBranches(a: BranchState[], b: BranchState[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => {
      const y = b[i]!;
      return (
        x.id === y.id &&
        x.name === y.name &&
        x.description === y.description &&
        x.headVersionId === y.headVersionId &&
        x.baseVersionId === y.baseVersionId &&
        x.parentBranchId === y.parentBranchId
      );
    })
  );
}

/** Events that say what a change did to history, the same whether it came by PATCH or by an operation. */
function historyEvents(l: Loaded, change: Change, operation: string): Event[] {
  const profileId = l.row.id;
  const out: Event[] = [];
  const before = new Map(l.history.branches.map((b) => [b.id, b]));
  const after = new Map(change.branches.map((b) => [b.id, b]));
  for (const v of change.newVersions) {
    out.push({
      subject: 'profiles.commit.created',
      data: { profileId, versionId: v.id, branchId: v.branchId, parentVersionId: v.parentVersionId, message: v.message, operation },
    });
  }
  for (const b of change.branches) {
    const s = before.get(b.id);
    if (!s) {
      out.push({
        subject: 'profiles.branch.created',
        data: { profileId, branchId: b.id, name: b.name, parentBranchId: b.parentBranchId, headVersionId: b.headVersionId },
      });
    } else if (s.headVersionId !== b.headVersionId && !change.newVersions.some((v) => v.id === b.headVersionId)) {
      out.push({
        subject: 'profiles.branch.reset',
        data: { profileId, branchId: b.id, fromVersionId: s.headVersionId, toVersionId: b.headVersionId },
      });
    }
  }
  for (const s of l.history.branches) {
    if (!after.has(s.id)) out.push({ subject: 'profiles.branch.deleted', data: { profileId, branchId: s.id, name: s.name } });
  }
  if (change.currentBranchId !== l.row.current_branch_id) {
    out.push({
      subject: 'profiles.branch.checked_out',
      data: { profileId, branchId: change.currentBranchId, previousBranchId: l.row.current_branch_id },
    });
  }
  return out;
}

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string, shape: RegExp): string {
  const id = Buffer.from(c, 'base64url').toString();
  if (!shape.test(id) || !RefId.safeParse(id).success) {
    throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  }
  return id;
}
