import { PROFILE_LIMITS, ProfileBranchName, ProfileMessage } from '@svc/contract';
import { DomainError, newId, type Principal } from '@svc/kit';

import { type ProfileCore, scopeOf, versionNotFound } from './core.js';
import { chain, type Change, unprocessable, type VersionMeta } from './history.js';
import { parse } from './input.js';
import { diffSnapshots, type SnapshotDiff } from './merge.js';
import { persist } from './persist.js';
import { canonical, computeDerived, deepEqual, ITEM_KINDS, itemKey, type Snapshot } from './snapshots.js';
import { versionView } from './views.js';

/** Reading a profile's content (search, statistics), copying a profile, and reverting one version. */

const list = (s: Snapshot, k: string): unknown[] => (Array.isArray(s[k]) ? (s[k] as unknown[]) : []);
const obj = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** Items of a version (default: the current branch head) whose JSON holds a text, case-insensitive. */
export async function searchItems(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { query: string; kind?: string; versionId?: string; limit?: number },
) {
  const text = input.query.trim().toLowerCase();
  if (!text || text.length > 200) throw new DomainError('invalid_argument', 'invalid_request', 'q: must be 1–200 characters.');
  if (input.kind !== undefined && !(ITEM_KINDS as readonly string[]).includes(input.kind)) {
    throw new DomainError('invalid_argument', 'invalid_request', 'kind: must be constraints, exemplars or comparisons.');
  }
  const limit = Math.min(Math.max(input.limit || 50, 1), 200);
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    let versionId = core.branch(l, l.row.current_branch_id).headVersionId;
    if (input.versionId !== undefined) {
      if (!l.history.versions.some((v) => v.id === input.versionId)) throw versionNotFound(input.versionId);
      versionId = input.versionId;
    }
    const snapshot = await core.snapshotOf(q, l.row.id, versionId);
    const items: Array<{ kind: string; item: unknown }> = [];
    let total = 0;
    for (const k of ITEM_KINDS) {
      if (input.kind !== undefined && input.kind !== k) continue;
      for (const item of list(snapshot, k)) {
        if (!canonical(item).toLowerCase().includes(text)) continue;
        total++;
        if (items.length < limit) items.push({ kind: k, item });
      }
    }
    return { versionId, items, total };
  });
}

/**
 * Versions across every branch, newest first, filtered: made on a branch, by an author (a person's
 * user id or an agent's id), with a text in the message, within a time range. Offset cursor.
 */
export async function findVersions(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { branchId?: string; authorId?: string; q?: string; since?: string; until?: string; limit?: number; cursor?: string },
) {
  const time = (v: string | undefined, where: string) => {
    if (v === undefined) return undefined;
    const t = Date.parse(v);
    if (Number.isNaN(t)) throw new DomainError('invalid_argument', 'invalid_request', `${where}: must be an ISO 8601 time.`);
    return t;
  };
  const since = time(input.since, 'since');
  const until = time(input.until, 'until');
  const text = input.q?.toLowerCase();
  const limit = Math.min(Math.max(input.limit || 50, 1), 200);
  const offset = input.cursor ? Number(Buffer.from(input.cursor, 'base64url').toString()) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    if (input.branchId !== undefined) core.branch(l, input.branchId);
    const found = [...l.versions].reverse().filter((v) => {
      const at = v.created_at.getTime();
      return (
        (input.branchId === undefined || v.branch_id === input.branchId) &&
        (input.authorId === undefined || v.created_by?.id === input.authorId) &&
        (text === undefined || v.message.toLowerCase().includes(text)) &&
        (since === undefined || at >= since) &&
        (until === undefined || at < until)
      );
    });
    const page = found.slice(offset, offset + limit);
    return {
      versions: page.map((v) => ({ ...versionView(v), createdBy: v.created_by })),
      total: found.length,
      nextCursor: found.length > offset + limit ? Buffer.from(String(offset + limit)).toString('base64url') : null,
    };
  });
}

/** Counts: history, branches, the head's items, the working changes, sizes. */
export async function profileStats(core: ProfileCore, p: Principal, id: string) {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    const head = core.branch(l, l.row.current_branch_id).headVersionId;
    const snapshot = await core.snapshotOf(q, l.row.id, head);
    const count = (s: Record<string, unknown>) => Object.fromEntries(ITEM_KINDS.map((k) => [k, list(s, k).length]));
    const authors = new Set(l.versions.map((v) => (v.created_by ? `${v.created_by.kind}:${v.created_by.id}` : 'unknown')));
    return {
      currentBranchId: l.row.current_branch_id,
      headVersionId: head,
      versionCount: l.versions.length,
      branchCount: l.history.branches.length,
      authorCount: authors.size,
      items: { ...count(snapshot), latentScores: Object.keys(obj(snapshot.latentScores)).length },
      workingChanges: count(l.row.working),
      headSnapshotBytes: l.versions.find((v) => v.id === head)?.snapshot_bytes ?? 0,
      historyBytes: l.versions.reduce((n, v) => n + v.snapshot_bytes, 0),
      firstCommitAt: l.versions[0]?.created_at.toISOString() ?? null,
      lastCommitAt: l.versions[l.versions.length - 1]?.created_at.toISOString() ?? null,
    };
  });
}

/**
 * A new profile holding a copy of this one: every version (same ids, authors and times, also those
 * off every branch after a reset), its branches, the current branch and the working changes. The
 * stored rows are copied as they are (they passed the history rules when written).
 */
export async function duplicateProfile(core: ProfileCore, p: Principal, id: string, input: { name?: string }) {
  const scope = scopeOf(p);
  const name = input.name === undefined ? undefined : parse(ProfileBranchName, input.name, 'body.name');
  const out = await core.sql.tx(async (q) => {
    const l = await core.loadFor(q, id, scope);
    const row = await core.store.insertProfile(q, {
      id: newId('prof'),
      account_id: l.row.account_id,
      project_id: l.row.project_id,
      name: name ?? `${l.row.name} (copy)`.slice(0, PROFILE_LIMITS.name),
      working: l.row.working,
    });
    const manifests = await core.store.manifests(
      q,
      l.row.id,
      l.versions.map((v) => v.id),
    );
    const chunks = await core.chunksFor(q, l.row.id, [...manifests.values()]);
    await core.store.insertChunks(
      q,
      row.id,
      [...chunks].map(([hash, body]) => ({ hash, body })),
    );
    await core.store.insertVersions(
      q,
      row.id,
      l.versions.map((v) => ({ ...v, manifest: manifests.get(v.id)!, created_by: v.created_by })),
    );
    await core.store.saveBranches(q, row.id, l.branches);
    const copy = await core.store.updateProfile(q, row.id, {
      name: row.name,
      current_branch_id: l.row.current_branch_id,
      working: l.row.working,
      next_seq: l.row.next_seq,
    });
    await core.emit(q, copy, [
      { subject: 'profiles.profile.created', data: { profileId: copy.id, name: copy.name, projectId: copy.project_id, copiedFrom: l.row.id } },
    ]);
    return core.render(q, copy, {});
  });
  core.outbox()?.kick();
  return out;
}

/** A diff the other way round: what undoes it. */
function invert(d: SnapshotDiff): SnapshotDiff {
  const out = {} as SnapshotDiff;
  for (const k of ITEM_KINDS) {
    out[k] = { added: d[k].removed, removed: d[k].added, changed: d[k].changed.map((c) => ({ id: c.id, from: c.to, to: c.from })) };
  }
  const s = d.latentScores;
  out.latentScores = {
    added: s.removed,
    removed: s.added,
    changed: Object.fromEntries(Object.entries(s.changed).map(([k, c]) => [k, { from: c.to, to: c.from }])),
  };
  return out;
}

/**
 * Applies a diff to a head, item by item: an added item is added (unless the head holds it
 * already, equal), a removed one removed and a changed one changed, each only where the head
 * still holds what the diff started from; anything else is a conflict.
 */
function applyDiff(head: Snapshot, d: SnapshotDiff): { out: Snapshot; conflicts: string[] } {
  const conflicts: string[] = [];
  const out: Snapshot = { ...head };
  for (const k of ITEM_KINDS) {
    let items = [...list(head, k)];
    const at = (item: unknown) => items.findIndex((x) => itemKey(x) === itemKey(item));
    for (const added of d[k].added) {
      const i = at(added);
      if (i < 0) items.push(added);
      else if (!deepEqual(items[i], added)) conflicts.push(`${k} ${itemKey(added)}`);
    }
    for (const removed of d[k].removed) {
      const i = at(removed);
      if (i < 0) continue;
      if (!deepEqual(items[i], removed)) conflicts.push(`${k} ${itemKey(removed)}`);
      else items = items.filter((_, j) => j !== i);
    }
    for (const c of d[k].changed) {
      const i = at(c.from);
      if (i < 0 || !deepEqual(items[i], c.from)) conflicts.push(`${k} ${itemKey(c.from)}`);
      else items[i] = c.to;
    }
    out[k] = items;
  }
  const scores = { ...obj(head.latentScores) };
  for (const [key, v] of Object.entries(d.latentScores.added)) {
    if (key in scores && !deepEqual(scores[key], v)) conflicts.push(`latentScores ${key}`);
    else scores[key] = v;
  }
  for (const [key, v] of Object.entries(d.latentScores.removed)) {
    if (!(key in scores)) continue;
    if (!deepEqual(scores[key], v)) conflicts.push(`latentScores ${key}`);
    else delete scores[key];
  }
  for (const [key, c] of Object.entries(d.latentScores.changed)) {
    if (!deepEqual(scores[key], c.from)) conflicts.push(`latentScores ${key}`);
    else scores[key] = c.to;
  }
  out.latentScores = scores;
  return { out, conflicts };
}

/** How many times a revert or cherry-pick reads and compares again when the branch moved meanwhile. */
const APPLY_ATTEMPTS = 3;

/**
 * A new version on a branch head (the current branch by default) applying what one version changed
 * from its parent: forward (cherry-pick: that change onto another branch) or backward (revert: undo
 * it). An item changed otherwise since is a conflict (409) and nothing is written. As a merge does
 * (merging.ts), it reads in a read transaction, compares outside any, and writes in a short one
 * that checks the branch head is still the one it compared (again if not, then 409 `changed_concurrently`).
 */
export async function applyVersion(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { versionId: string; branchId?: string; message?: string; direction: 'revert' | 'cherry_pick' },
  ifMatch?: string,
) {
  const message = input.message === undefined ? undefined : parse(ProfileMessage, input.message, 'body.message');
  const revert = input.direction === 'revert';
  for (let attempt = 1; ; attempt++) {
    const plan = await core.read(async (q) => {
      const l = await core.loadForWrite(q, p, id, ifMatch);
      const branch = core.branch(l, input.branchId ?? l.row.current_branch_id);
      const target = l.history.versions.find((v) => v.id === input.versionId);
      if (!target) throw versionNotFound(input.versionId);
      if (revert && !branch.headVersionId) throw unprocessable('branch_empty', `Branch ${branch.id} has no version to revert on.`);
      if (!revert && chain(new Map(l.history.versions.map((v) => [v.id, v])), branch.headVersionId).some((v) => v.id === target.id)) {
        throw unprocessable('version_in_history', `Version ${target.id} is in the history of branch ${branch.id} already.`);
      }
      const before = await core.snapshotOf(q, l.row.id, target.parentVersionId);
      const after = await core.snapshotOf(q, l.row.id, target.id);
      const head = await core.snapshotOf(q, l.row.id, branch.headVersionId);
      return { branchId: branch.id, headVersionId: branch.headVersionId, target, before, after, head };
    });
    const d = await diffSnapshots(plan.before, plan.after);
    const { out, conflicts } = applyDiff(plan.head, revert ? invert(d) : d);
    const { target } = plan;
    if (conflicts.length) {
      const code = revert ? 'revert_conflict' : 'cherry_pick_conflict';
      throw new DomainError('conflict', code, `Changed otherwise since ${target.id}, so not applied: ${conflicts.slice(0, 10).join(', ')}.`);
    }
    Object.assign(out, computeDerived(out));
    const done = await core.operate(p, id, ifMatch, async (q, l) => {
      const branch = core.branch(l, plan.branchId);
      // The branch moved since the read: the change was applied to another head than this one.
      if (branch.headVersionId !== plan.headVersionId) return { row: null, result: null };
      const meta: VersionMeta = {
        id: newId('ver'),
        branchId: branch.id,
        parentVersionId: branch.headVersionId,
        message: message ?? (revert ? `Revert ${target.id}: ${target.message}` : target.message).slice(0, PROFILE_LIMITS.message),
        createdAt: new Date(),
      };
      const change: Change = {
        newVersions: [meta],
        branches: l.history.branches.map((b) => (b.id === branch.id ? { ...b, headVersionId: meta.id } : b)),
        currentBranchId: l.row.current_branch_id,
      };
      const row = await persist(core, q, p, l, change, [{ meta, snapshot: out }], {
        operation: input.direction,
        events: [
          {
            subject: `profiles.${revert ? 'revert' : 'cherry_pick'}.created`,
            data: { profileId: l.row.id, branchId: branch.id, versionId: meta.id, sourceVersionId: target.id },
          },
        ],
      });
      return { row, result: versionView(meta) };
    });
    if (done.result) return { result: done.result, etag: done.etag };
    if (attempt >= APPLY_ATTEMPTS) {
      throw new DomainError(
        'conflict',
        'changed_concurrently',
        `The branch changed while the ${revert ? 'revert' : 'cherry-pick'} compared it, ${attempt} times: try again.`,
      );
    }
  }
}
