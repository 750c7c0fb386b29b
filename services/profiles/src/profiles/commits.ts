import { ProfileMessage } from '@svc/contract';
import { newId, type Principal } from '@svc/kit';

import { EMPTY_WORKING, type ProfileCore, versionNotFound } from './core.js';
import { chain, type Change, unprocessable, type VersionMeta } from './history.js';
import { parse } from './input.js';
import { type Addition, persist } from './persist.js';
import {
  applyItemsAt,
  computeDerived,
  duplicateItemId,
  EMPTY_MANIFEST,
  ITEM_KINDS,
  manifestHashes,
  nextManifest,
  type Snapshot,
  snapshotParts,
} from './snapshots.js';
import { versionView } from './views.js';

/** New versions on a branch head: committing the working changes, and rolling back to an earlier state. */

/** Commits the working changes onto a branch (the current one by default), and clears them. */
export async function commit(core: ProfileCore, p: Principal, id: string, input: { message: string; branchId?: string }, ifMatch?: string) {
  const message = parse(ProfileMessage, input.message, 'body.message');
  return core.operate(
    p,
    id,
    ifMatch,
    async (q, l) => {
      const branch = core.branch(l, input.branchId ?? l.row.current_branch_id);
      const working = l.row.working;
      for (const k of ITEM_KINDS) {
        const dup = Array.isArray(working[k]) ? duplicateItemId(working[k] as unknown[]) : undefined;
        if (dup) throw unprocessable('duplicate_item_id', `workingChanges.${k} holds item ${dup} more than once.`);
      }
      // Only the chunks from the first changed item on are made anew; the head's others are reused.
      const headManifest = branch.headVersionId
        ? ((await core.store.manifests(q, l.row.id, [branch.headVersionId])).get(branch.headVersionId) ?? EMPTY_MANIFEST)
        : EMPTY_MANIFEST;
      const texts = await core.chunksFor(q, l.row.id, [headManifest]);
      const { snapshot: head, offsets } = snapshotParts(headManifest, texts, core.parsedCache);
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
      const row = await persist(core, q, p, l, change, [addition], { working: EMPTY_WORKING, operation: 'commit' });
      return { row, result: versionView(meta) };
    },
    { versions: false },
  );
}

/** Rolls back by committing, as a new version on top of the head, the state of an earlier one. */
export async function rollback(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { versionId: string; branchId?: string; message?: string },
  ifMatch?: string,
) {
  const message = input.message === undefined ? undefined : parse(ProfileMessage, input.message, 'body.message');
  return core.operate(p, id, ifMatch, async (q, l) => {
    const branch = core.branch(l, input.branchId ?? l.row.current_branch_id);
    const all = new Map(l.history.versions.map((v) => [v.id, v]));
    if (!all.has(input.versionId)) throw versionNotFound(input.versionId);
    if (!chain(all, branch.headVersionId).some((v) => v.id === input.versionId)) {
      throw unprocessable('version_not_in_history', `Version ${input.versionId} is not in the history of branch ${branch.id}.`);
    }
    const source = (await core.store.manifests(q, l.row.id, [input.versionId])).get(input.versionId)!;
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
    const row = await persist(core, q, p, l, change, [{ meta, manifest: { manifest: source, bytes } }], {
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

/** The snapshot a first-class commit makes: the head's, with the working changes applied. */
export function buildCommitSnapshot(head: Snapshot, working: Record<string, unknown>): { snapshot: Snapshot; firstChanged: Record<string, number> } {
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
