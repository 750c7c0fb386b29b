import { MergeProfileBody } from '@svc/contract';
import { DomainError, newId, type Principal } from '@svc/kit';

import type { ProfileCore } from './core.js';
import { diffText } from './diff-text.js';
import { ancestors, type Change, mergeBase, unprocessable, type VersionMeta } from './history.js';
import { parse } from './input.js';
import { type Conflict, mergeSnapshots, type Resolutions, type Side } from './merge.js';
import { persist } from './persist.js';
import type { Snapshot } from './snapshots.js';
import { etagOf, type VersionView, versionView } from './views.js';

/** The merge operation: loads the three snapshots, merges them (../merge.ts), and commits the outcome. */

/** The most of a merge's conflicts its answer lists, in JSON bytes; the rest are counted in `conflictsOmitted`. */
const CONFLICTS_MAX_BYTES = 1024 * 1024;
/**
 * The most conflicts a 409 merge_conflict lists in its details, and their most JSON bytes: details
 * travel in a call's trailers, bounded by kit's ERROR_DETAILS_MAX_BYTES (8 KiB).
 */
const REFUSAL_CONFLICTS = 100;
const REFUSAL_CONFLICTS_BYTES = 6 * 1024;

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

const parseMergeBody = (body: unknown) => parse(MergeProfileBody, body);
type MergeProfileInput = ReturnType<typeof parseMergeBody>;

/** How many times a merge reads and compares again when a head moved while it compared. */
const MERGE_ATTEMPTS = 3;

/** What a merge read: the heads it compares, and their snapshots. */
interface MergePlan {
  common: Pick<MergeResult, 'sourceBranchId' | 'targetBranchId' | 'mergeBaseVersionId' | 'dryRun'>;
  etag: string;
  targetHead: string | null;
  sourceHead: string | null;
  /** Null when the target holds the source head already (up to date). */
  snapshots: { base: Snapshot; ours: Snapshot; theirs: Snapshot } | null;
}

/** Reads what a merge compares, in a read transaction (If-Match checked as a write checks it). */
function readPlan(core: ProfileCore, p: Principal, id: string, input: MergeProfileInput, ifMatch: string | undefined): Promise<MergePlan> {
  return core.read(async (q) => {
    const l = await core.loadForWrite(q, p, id, ifMatch);
    const target = core.branch(l, input.targetBranchId ?? l.row.current_branch_id);
    const source = core.branch(l, input.sourceBranchId);
    if (source.id === target.id) throw unprocessable('merge_same_branch', 'A branch cannot be merged into itself.');
    const all = new Map(l.history.versions.map((v) => [v.id, v]));
    const baseId = mergeBase(all, target.headVersionId, source.headVersionId);
    const plan = {
      common: { sourceBranchId: source.id, targetBranchId: target.id, mergeBaseVersionId: baseId, dryRun: input.dryRun ?? false },
      etag: etagOf(l.row),
      targetHead: target.headVersionId,
      sourceHead: source.headVersionId,
    };
    if (source.headVersionId === null || ancestors(all, target.headVersionId).has(source.headVersionId)) return { ...plan, snapshots: null };
    const base = await core.snapshotOf(q, l.row.id, baseId);
    const ours = await core.snapshotOf(q, l.row.id, target.headVersionId);
    const theirs = await core.snapshotOf(q, l.row.id, source.headVersionId);
    return { ...plan, snapshots: { base, ours, theirs } };
  });
}

/**
 * Three-way merge of a source branch into a target branch (the current one by default), item by
 * item. Conflicts block the merge (409) unless resolved per item or by a strategy; `dryRun`
 * previews the outcome and changes nothing.
 *
 * The snapshots are read in a read transaction and compared outside any (paced: pace.ts), then
 * the outcome is written in a short write transaction that checks the two heads are still the
 * ones compared; if one moved meanwhile, the merge reads and compares again (MERGE_ATTEMPTS, then
 * 409 `changed_concurrently`). Compared inside the write transaction, a merge of two branches of
 * 60,000 changed items held the embedded database's one connection, which every tenant's
 * statements wait for, for 1.2 s (docs/profiles.md, "Performance").
 */
export async function merge(core: ProfileCore, p: Principal, id: string, body: unknown, ifMatch?: string): Promise<{ json: string; etag: string }> {
  const input = parseMergeBody(body);
  for (let attempt = 1; ; attempt++) {
    const plan = await readPlan(core, p, id, input, ifMatch);
    const { common, snapshots } = plan;
    if (!snapshots) {
      const result: MergeResult = { ...common, merged: false, upToDate: true, conflicts: [], version: null, changes: null };
      return { json: await answerText(result, null), etag: plan.etag };
    }
    const outcome = await mergeSnapshots(snapshots.base, snapshots.ours, snapshots.theirs, {
      strategy: input.strategy as Side | undefined,
      resolutions: input.resolutions as Resolutions | undefined,
    });
    const compared = { ours: snapshots.ours, outcome: outcome.snapshot };
    if (input.dryRun) {
      const result: MergeResult = { ...common, merged: false, upToDate: false, conflicts: outcome.conflicts, version: null, changes: null };
      return { json: await answerText(result, compared), etag: plan.etag };
    }
    const open = outcome.conflicts.filter((c) => c.resolution === null);
    if (open.length) {
      const listed = listConflicts(open, REFUSAL_CONFLICTS_BYTES, REFUSAL_CONFLICTS);
      const which = !listed.omitted ? 'them' : listed.texts.length ? `the first ${listed.texts.length}` : 'none, too large to list here';
      throw new DomainError(
        'conflict',
        'merge_conflict',
        `${open.length} item${open.length === 1 ? '' : 's'} changed on both branches: resolve ` +
          `${open.length === 1 ? 'it' : 'them'} with resolutions or a strategy (details.conflicts lists ${which}` +
          `${listed.omitted ? '; a dry run lists them all' : ''}).`,
        { conflicts: listed.texts.map((t) => JSON.parse(t) as Conflict), conflictCount: open.length },
      );
    }
    const done = await core.operate<MergeResult | null>(p, id, ifMatch, async (q, l) => {
      const target = core.branch(l, common.targetBranchId);
      const source = core.branch(l, common.sourceBranchId);
      // A head moved since the read: what was compared is not what would be written over.
      if (target.headVersionId !== plan.targetHead || source.headVersionId !== plan.sourceHead) return { row: null, result: null };
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
              mergeBaseVersionId: common.mergeBaseVersionId,
              conflictsResolved: outcome.conflicts.length,
            },
          },
        ],
      });
      return { row, result: { ...common, merged: true, upToDate: false, conflicts: outcome.conflicts, version: versionView(meta), changes: null } };
    });
    if (done.result) return { json: await answerText(done.result, compared), etag: done.etag };
    if (attempt >= MERGE_ATTEMPTS) {
      throw new DomainError('conflict', 'changed_concurrently', `The branches changed while the merge compared them, ${attempt} times: try again.`);
    }
  }
}
