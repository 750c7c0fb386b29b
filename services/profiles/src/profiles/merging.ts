import { MergeProfileBody } from '@svc/contract';
import { DomainError, newId, type Principal } from '@svc/kit';

import type { ProfileCore } from './core.js';
import { diffText } from './diff-text.js';
import { ancestors, type Change, mergeBase, unprocessable, type VersionMeta } from './history.js';
import { parse } from './input.js';
import { type Conflict, mergeSnapshots, type Resolutions, type Side } from './merge.js';
import { Pacer } from './pace.js';
import { persist } from './persist.js';
import type { Snapshot } from './snapshots.js';
import { type VersionView, versionView } from './views.js';

/** The merge operation: loads the three snapshots, merges them (../merge.ts), and commits the outcome. */

/** The most of a merge's conflicts its answer lists, in JSON bytes; the rest are counted in `conflictsOmitted`. */
const CONFLICTS_MAX_BYTES = 1024 * 1024;
/** The most conflicts a 409 merge_conflict lists in its details. */
const REFUSAL_CONFLICTS = 100;

export interface MergeResult {
  sourceBranchId: string;
  targetBranchId: string;
  mergeBaseVersionId: string | null;
  dryRun: boolean;
  merged: boolean;
  upToDate: boolean;
  conflicts: Conflict[];
  version: VersionView | null;
  /** What the merge does (or would do) to the target's head, per item: written by answerText. */
  changes: null;
}

/**
 * The conflicts that fit in `maxBytes` of JSON (at most `most` of them), as JSON texts, and how
 * many were left out: a merge of two large branches can conflict on every item, each conflict
 * carrying three versions of it.
 */
function listConflicts(conflicts: Conflict[], maxBytes: number, most = Infinity): { texts: string[]; omitted: number } {
  const texts: string[] = [];
  let bytes = 0;
  for (const c of conflicts) {
    if (texts.length >= most) break;
    const text = JSON.stringify(c);
    bytes += Buffer.byteLength(text) + 1;
    if (bytes > maxBytes) break;
    texts.push(text);
  }
  return { texts, omitted: conflicts.length - texts.length };
}

/**
 * A merge's answer as JSON text, bounded: its conflicts up to CONFLICTS_MAX_BYTES, and its changes
 * (the target's head against the outcome, written in slices after the transaction: diff-text.ts)
 * unless they pass DIFF_MAX_BYTES, when `changes` is null and `changesOmitted` true. Unbounded, the
 * answer of a merge of two branches of 80,000 changed items passed the 16 MiB of a message
 * between the services and the client was told 500 for a merge that had been committed.
 */
async function answerText(result: MergeResult, compared: { ours: Snapshot; outcome: Snapshot } | null): Promise<string> {
  const { conflicts, changes: _none, ...rest } = result;
  const listed = listConflicts(conflicts, CONFLICTS_MAX_BYTES);
  let changes = 'null';
  let changesOmitted = false;
  if (compared) {
    try {
      changes = await diffText(null, compared.ours, compared.outcome);
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'diff_too_large')) throw err;
      changesOmitted = true;
    }
  }
  const head = JSON.stringify({ ...rest, conflictsOmitted: listed.omitted, changesOmitted });
  return `${head.slice(0, -1)},"conflicts":[${listed.texts.join(',')}],"changes":${changes}}`;
}

/**
 * Three-way merge of a source branch into a target branch (the current one by default), item by
 * item. Conflicts block the merge (409) unless resolved per item or by a strategy; `dryRun`
 * previews the outcome and changes nothing.
 */
export async function merge(core: ProfileCore, p: Principal, id: string, body: unknown, ifMatch?: string): Promise<{ json: string; etag: string }> {
  const input = parse(MergeProfileBody, body);
  let compared: { ours: Snapshot; outcome: Snapshot } | null = null;
  const done = await core.operate<MergeResult>(p, id, ifMatch, async (q, l) => {
    compared = null;
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
    // Inside the write transaction: on PostgreSQL it holds this profile's row, and the merge gives
    // the event loop back as it goes; on the embedded database it holds the one connection every
    // tenant's statements wait for, so it ends as soon as it can (measured: docs/profiles.md).
    const outcome = await mergeSnapshots(base, ours, theirs, {
      pace: new Pacer(core.sql.kind === 'pg'),
      strategy: input.strategy as Side | undefined,
      resolutions: input.resolutions as Resolutions | undefined,
    });
    const open = outcome.conflicts.filter((c) => c.resolution === null);
    // What the merge does to the target's head is compared after the transaction (answerText).
    compared = { ours, outcome: outcome.snapshot };
    if (input.dryRun) {
      return { row: null, result: { ...common, merged: false, upToDate: false, conflicts: outcome.conflicts, version: null, changes: null } };
    }
    if (open.length) {
      const listed = listConflicts(open, CONFLICTS_MAX_BYTES, REFUSAL_CONFLICTS);
      throw new DomainError(
        'conflict',
        'merge_conflict',
        `${open.length} item${open.length === 1 ? '' : 's'} changed on both branches: resolve ` +
          `${open.length === 1 ? 'it' : 'them'} with resolutions or a strategy (details.conflicts lists ` +
          `${listed.omitted ? `the first ${listed.texts.length}` : 'them'}).`,
        { conflicts: listed.texts.map((t) => JSON.parse(t) as Conflict), conflictCount: open.length },
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
      result: { ...common, merged: true, upToDate: false, conflicts: outcome.conflicts, version: versionView(meta), changes: null },
    };
  });
  return { json: await answerText(done.result, compared), etag: done.etag };
}
