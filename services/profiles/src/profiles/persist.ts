import type { Principal, Queryable } from '@svc/kit';

import type { Event, Loaded, ProfileCore } from './core.js';
import { type BranchState, type Change, checkHistory, type VersionMeta } from './history.js';
import { type Chunk, type Manifest, manifestHashes, type Snapshot, toManifest } from './snapshots.js';
import type { NewVersion, ProfileRow, VersionAuthor } from './store.js';
import { etagOf } from './views.js';

/** Who makes a version: the principal's kind, its own id (a person's user id, an agent's id) and the key used. */
export function authorOf(p: Principal): VersionAuthor {
  const id = p.kind === 'human' ? p.userId : p.kind === 'agent' ? p.agentId : undefined;
  return { kind: p.kind, id: id ?? p.accountId, keyId: p.keyId ?? null };
}

/** A version a write adds, with its snapshot (to store) or its manifest ready (and the chunks it adds). */
export interface Addition {
  meta: VersionMeta;
  snapshot?: Snapshot;
  manifest?: { manifest: Manifest; bytes: number; chunks?: Chunk[] };
}

/**
 * Writes a checked change: chunks and versions first (immutable rows), then branches and the
 * profile row (its revision, hence its ETag, moves on), and the events, all in the caller's
 * transaction.
 */
export async function persist(
  core: ProfileCore,
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
    for (const m of (await core.store.manifests(q, l.row.id, parentIds)).values()) for (const h of manifestHashes(m)) known.add(h);
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
      created_by: authorOf(p),
    });
  }
  await core.store.insertChunks(q, l.row.id, [...fresh.values()]);
  for (const c of fresh.values()) core.chunkCache.set(c.hash, c.body);
  await core.store.insertVersions(q, l.row.id, rows);
  if (!sameBranches(l.history.branches, change.branches)) {
    await core.store.saveBranches(
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
  const row = await core.store.updateProfile(q, l.row.id, {
    name: opts.name ?? l.row.name,
    current_branch_id: change.currentBranchId,
    working: opts.working ?? l.row.working,
    next_seq: seq,
  });
  await core.emit(q, row, [
    ...historyEvents(l, change, opts.operation),
    ...(opts.events ?? []),
    {
      subject: 'profiles.profile.updated',
      data: {
        profileId: row.id,
        operation: opts.operation,
        currentBranchId: row.current_branch_id,
        etag: etagOf(row),
        byKeyId: p.keyId ?? null,
      },
    },
  ]);
  return row;
}

/** The same branches in the same order, field by field (createdAt aside: it never changes). */
export function sameBranches(a: BranchState[], b: BranchState[]): boolean {
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
