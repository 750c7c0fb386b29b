import { CreateProfileBody, PatchProfileBody, PROFILE_LIMITS, type ProfileDataInput, ProjectId } from '@svc/contract';
import { DomainError, enqueueEvent, newId, type Principal, type Queryable } from '@svc/kit';

import { EMPTY_WORKING, type Loaded, type ProfileCore, profileNotFound, scopeOf } from './core.js';
import { checkHistory, patchToChange, unprocessable } from './history.js';
import { parse } from './input.js';
import { type Addition, persist, sameBranches } from './persist.js';
import { deepEqual, duplicateItemId, ITEM_KINDS, type Manifest, snapshotObject, toManifest } from './snapshots.js';
import { SCHEMA } from './store.js';
import { decodeCursor, encodeCursor, type ProfileDoc, summaryView } from './views.js';

/** Profiles as documents: create (or import), list, get, PATCH (history kept true) and delete. */

export async function createProfile(core: ProfileCore, p: Principal, body: unknown): Promise<ProfileDoc> {
  const scope = scopeOf(p);
  const input = parse(CreateProfileBody, body);
  if (p.projectId && input.projectId && input.projectId !== p.projectId) {
    throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
  }
  const out = await core.sql.tx(async (q) => {
    const row = await core.store.insertProfile(q, {
      id: newId('prof'),
      account_id: scope.accountId,
      project_id: scope.projectId ?? input.projectId ?? null,
      name: input.name ?? 'Untitled profile',
      working: EMPTY_WORKING,
    });
    await core.emit(q, row, [{ subject: 'profiles.profile.created', data: { profileId: row.id, name: row.name, projectId: row.project_id } }]);
    if (!input.profileData) return core.render(q, row, {});
    // Created with history (an import): the same rules as a PATCH on the fresh profile.
    const loaded = await core.load(q, row);
    return applyPatch(core, q, p, loaded, { profileData: input.profileData }, {});
  });
  core.outbox()?.kick();
  return out;
}

export async function listProfiles(
  core: ProfileCore,
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
  const rows = await core.store.list({ ...scope, projectId: scope.projectId ?? input.projectId, before, limit: limit + 1 });
  const page = rows.slice(0, limit);
  return {
    profiles: page.map(summaryView),
    nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined,
  };
}

export async function getProfile(core: ProfileCore, p: Principal, id: string, opts: { snapshots?: boolean } = {}): Promise<ProfileDoc> {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const row = await core.store.profile(q, id, scope);
    if (!row) throw profileNotFound();
    return core.render(q, row, { ...opts, fill: true });
  });
}

/** PATCH: arrays replaced as sent, history kept true (422 otherwise), effectiveSnapshot recomputed. */
export async function updateProfile(
  core: ProfileCore,
  p: Principal,
  id: string,
  body: unknown,
  ifMatch?: string,
  opts: { snapshots?: boolean } = {},
): Promise<ProfileDoc> {
  const patch = parse(PatchProfileBody, body);
  if (patch.id !== undefined && patch.id !== id) {
    throw new DomainError('invalid_argument', 'invalid_request', `body.id: must be ${id}, the profile being updated.`);
  }
  return core.write(p, id, ifMatch, (q, loaded) => applyPatch(core, q, p, loaded, patch, opts));
}

export async function removeProfile(core: ProfileCore, p: Principal, id: string, ifMatch?: string): Promise<void> {
  await core.write(
    p,
    id,
    ifMatch,
    async (q, { row }) => {
      await core.store.deleteProfile(q, row.id);
      await enqueueEvent(q, SCHEMA, {
        subject: 'profiles.profile.deleted',
        accountId: row.account_id,
        data: { profileId: row.id, byKeyId: p.keyId ?? null },
      });
      return { json: '', etag: '' };
    },
    { versions: false },
  );
}

async function applyPatch(
  core: ProfileCore,
  q: Queryable,
  p: Principal,
  l: Loaded,
  patch: { name?: string; profileData?: ProfileDataInput },
  opts: { snapshots?: boolean },
): Promise<ProfileDoc> {
  const data = patch.profileData ?? {};
  const { change, newSnapshots, sentSnapshots } = patchToChange(l.history, data, new Date());
  checkHistory(l.history, change);
  if (l.history.versions.length + change.newVersions.length > PROFILE_LIMITS.versions) {
    throw unprocessable('too_many_versions', `A profile holds at most ${PROFILE_LIMITS.versions} versions.`);
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
    const stored = await core.store.manifests(q, l.row.id, [...sentSnapshots.keys()]);
    for (const [vid, sent] of sentSnapshots) {
      const m = stored.get(vid)!;
      if (sameManifest(m, toManifest(sent).manifest)) continue;
      const current = snapshotObject(m, await core.chunksFor(q, l.row.id, [m]));
      if (!deepEqual(current, sent)) {
        throw unprocessable('version_immutable', `Version ${vid} is committed and its snapshot cannot change: commits are immutable.`);
      }
    }
  }
  // A PATCH that changes nothing writes nothing: the ETag stays, so another editor's If-Match still holds.
  const unchanged =
    change.newVersions.length === 0 &&
    sameBranches(l.history.branches, change.branches) &&
    change.currentBranchId === l.row.current_branch_id &&
    (patch.name === undefined || patch.name === l.row.name) &&
    (data.workingChanges === undefined || deepEqual(data.workingChanges, l.row.working));
  if (unchanged) return core.render(q, l.row, opts);
  const additions: Addition[] = change.newVersions.map((meta) => ({ meta, snapshot: newSnapshots.get(meta.id)! }));
  const row = await persist(core, q, p, l, change, additions, {
    working: data.workingChanges,
    name: patch.name,
    operation: 'patch',
  });
  return core.render(q, row, opts);
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
