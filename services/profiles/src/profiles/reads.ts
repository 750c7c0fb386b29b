import { DomainError, type Principal } from '@svc/kit';

import { type ProfileCore, profileNotFound, scopeOf, versionNotFound } from './core.js';
import { diffText } from './diff-text.js';
import { chain } from './history.js';
import { snapshotText } from './snapshots.js';
import { decodeCursor, encodeCursor, versionJson, versionView } from './views.js';

/** Reads of history: a branch's log, one version with its snapshot, and the diff between two states. */

/** A branch's history, newest first, without snapshots. */
export async function log(core: ProfileCore, p: Principal, id: string, input: { branchId?: string; limit: number; cursor?: string }) {
  const scope = scopeOf(p);
  const limit = Math.min(Math.max(input.limit || 50, 1), 200);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    const branch = core.branch(l, input.branchId ?? l.row.current_branch_id);
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
export async function version(core: ProfileCore, p: Principal, id: string, versionId: string) {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const row = await core.store.profile(q, id, scope);
    if (!row) throw profileNotFound();
    const v = (await core.versionsOf(q, row.id, true)).find((x) => x.id === versionId);
    if (!v) throw versionNotFound(versionId);
    const m = (await core.store.manifests(q, row.id, [v.id])).get(v.id)!;
    return versionJson(v, snapshotText(m, await core.chunksFor(q, row.id, [m])));
  });
}

/**
 * What changed between two states, per item: `from` and `to` are version ids or branch ids
 * (their heads). `to` defaults to the current branch's head and `from` to the parent of `to`.
 */
export async function diff(core: ProfileCore, p: Principal, id: string, input: { from?: string; to?: string }): Promise<string> {
  const scope = scopeOf(p);
  // The snapshots are read in the transaction and compared after it: the comparison can take a
  // while (diff-text.ts), and on the embedded database a transaction holds its one connection.
  const { from, to, a, b } = await core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    const resolve = (ref: string): string | null => {
      if (l.history.versions.some((v) => v.id === ref)) return ref;
      const b = l.history.branches.find((x) => x.id === ref);
      if (b) return b.headVersionId;
      throw new DomainError('not_found', 'ref_not_found', `${ref} is neither a version nor a branch of this profile.`);
    };
    const to = input.to !== undefined ? resolve(input.to) : core.branch(l, l.row.current_branch_id).headVersionId;
    const from = input.from !== undefined ? resolve(input.from) : to ? (l.history.versions.find((v) => v.id === to)?.parentVersionId ?? null) : null;
    const a = await core.snapshotOf(q, l.row.id, from);
    const b = await core.snapshotOf(q, l.row.id, to);
    return { from, to, a, b };
  });
  return diffText({ from, to }, a, b);
}

/** The most snapshot text one ExportHistory answer carries, unless asked for less. */
const EXPORT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The history as the Git front needs it (docs/git.md): branches in order, every version's metadata
 * in commit order (a version's parents always come before it), and the snapshots of
 * `snapshotVersionIds`, in that order, while they total at most `maxBytes` (at least one); the
 * caller asks again for the rest. JSON text: snapshots are spliced in as stored.
 */
export async function exportHistory(core: ProfileCore, p: Principal, id: string, input: { snapshotVersionIds: string[]; maxBytes?: number }) {
  const scope = scopeOf(p);
  const budget = input.maxBytes && input.maxBytes > 0 ? Math.min(input.maxBytes, EXPORT_MAX_BYTES) : EXPORT_MAX_BYTES;
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    const byId = new Map(l.versions.map((v) => [v.id, v]));
    const wanted: string[] = [];
    let bytes = 0;
    for (const vid of input.snapshotVersionIds) {
      const v = byId.get(vid);
      if (!v) throw versionNotFound(vid);
      if (wanted.length && bytes + v.snapshot_bytes > budget) break;
      wanted.push(vid);
      bytes += v.snapshot_bytes;
    }
    const manifests = await core.store.manifests(q, l.row.id, wanted);
    const chunks = await core.chunksFor(q, l.row.id, [...manifests.values()]);
    const snapshots = wanted.map((vid) => `{"id":${JSON.stringify(vid)},"snapshot":${snapshotText(manifests.get(vid)!, chunks)}}`);
    const meta = {
      id: l.row.id,
      branches: l.history.branches.map((b) => ({ id: b.id, name: b.name, headVersionId: b.headVersionId })),
      versions: l.versions.map((v) => ({
        id: v.id,
        branchId: v.branch_id,
        parentVersionId: v.parent_version_id,
        mergeParentId: v.merge_parent_id,
        message: v.message,
        createdAt: v.created_at.toISOString(),
        createdBy: v.created_by,
      })),
    };
    return `${JSON.stringify(meta).slice(0, -1)},"snapshots":[${snapshots.join(',')}]}`;
  });
}
