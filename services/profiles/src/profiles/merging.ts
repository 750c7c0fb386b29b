import { MergeProfileBody } from '@svc/contract';
import { DomainError, newId, type Principal } from '@svc/kit';

import type { ProfileCore } from './core.js';
import { ancestors, type Change, mergeBase, unprocessable, type VersionMeta } from './history.js';
import { parse } from './input.js';
import { type Conflict, diffSnapshots, mergeSnapshots, type Resolutions, type Side, type SnapshotDiff } from './merge.js';
import { persist } from './persist.js';
import { type VersionView, versionView } from './views.js';

/** The merge operation: loads the three snapshots, merges them (../merge.ts), and commits the outcome. */

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

/**
 * Three-way merge of a source branch into a target branch (the current one by default), item by
 * item. Conflicts block the merge (409) unless resolved per item or by a strategy; `dryRun`
 * previews the outcome and changes nothing.
 */
export async function merge(core: ProfileCore, p: Principal, id: string, body: unknown, ifMatch?: string) {
  const input = parse(MergeProfileBody, body);
  return core.operate<MergeResult>(p, id, ifMatch, async (q, l) => {
    const target = core.branch(l, input.targetBranchId ?? l.row.current_branch_id);
    const source = core.branch(l, input.sourceBranchId);
    if (source.id === target.id) throw unprocessable('merge_same_branch', 'A branch cannot be merged into itself.');
    const all = new Map(l.history.versions.map((v) => [v.id, v]));
    const baseId = mergeBase(all, target.headVersionId, source.headVersionId);
    const common = { sourceBranchId: source.id, targetBranchId: target.id, mergeBaseVersionId: baseId, dryRun: input.dryRun ?? false };
    const upToDate = source.headVersionId === null || ancestors(all, target.headVersionId).has(source.headVersionId);
    if (upToDate) {
      return { row: null, result: { ...common, merged: false, upToDate: true, conflicts: [], version: null, changes: null } };
    }
    const base = await core.snapshotOf(q, l.row.id, baseId);
    const ours = await core.snapshotOf(q, l.row.id, target.headVersionId);
    const theirs = await core.snapshotOf(q, l.row.id, source.headVersionId);
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
    const row = await persist(core, q, p, l, change, [{ meta, snapshot: outcome.snapshot }], {
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
