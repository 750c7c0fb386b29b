import { PROFILE_LIMITS } from '@svc/contract';
import { DomainError, type Principal } from '@svc/kit';

import { type ProfileCore, scopeOf, versionNotFound } from './core.js';
import { authorOf } from './persist.js';
import type { TagRow } from './store.js';
import { etagOf } from './views.js';

/** Tags: stable names for versions (a release, a milestone), like Git's; unique per profile. */

const TAG_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

const tagView = (t: TagRow) => ({
  name: t.name,
  versionId: t.version_id,
  message: t.message,
  createdBy: t.created_by,
  createdAt: t.created_at.toISOString(),
});

export async function listTags(core: ProfileCore, p: Principal, id: string) {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const row = await core.store.profile(q, id, scope);
    if (!row) throw new DomainError('not_found', 'profile_not_found', 'Profile not found.');
    return { tags: (await core.store.tags(q, row.id)).map(tagView) };
  });
}

export async function createTag(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { name: string; versionId?: string; message?: string },
  ifMatch?: string,
) {
  if (!TAG_RE.test(input.name)) {
    throw new DomainError('invalid_argument', 'invalid_request', 'body.name: must be 1–100 of A-Z a-z 0-9 . _ - (starting with a letter or digit).');
  }
  if (input.message !== undefined && input.message.length > PROFILE_LIMITS.message) {
    throw new DomainError('invalid_argument', 'invalid_request', `body.message: must be at most ${PROFILE_LIMITS.message} characters.`);
  }
  let etag = '';
  const result = await core.write(p, id, ifMatch, async (q, l) => {
    etag = etagOf(l.row);
    const versionId = input.versionId ?? core.branch(l, l.row.current_branch_id).headVersionId;
    if (!versionId) throw new DomainError('unprocessable', 'branch_empty', 'The current branch has no version to tag: pass versionId.');
    if (!l.history.versions.some((v) => v.id === versionId)) throw versionNotFound(versionId);
    const tag = await core.store.insertTag(q, l.row.id, {
      name: input.name,
      version_id: versionId,
      message: input.message ?? null,
      created_by: authorOf(p),
    });
    if (!tag) throw new DomainError('conflict', 'tag_exists', `A tag named ${input.name} exists already: delete it first.`);
    await core.emit(q, l.row, [{ subject: 'profiles.tag.created', data: { profileId: l.row.id, name: tag.name, versionId } }]);
    return tagView(tag);
  });
  return { result, etag };
}

export async function deleteTag(core: ProfileCore, p: Principal, id: string, name: string, ifMatch?: string) {
  let etag = '';
  const result = await core.write(
    p,
    id,
    ifMatch,
    async (q, l) => {
      etag = etagOf(l.row);
      const deleted = await core.store.deleteTag(q, l.row.id, name);
      if (deleted) await core.emit(q, l.row, [{ subject: 'profiles.tag.deleted', data: { profileId: l.row.id, name } }]);
      return { deleted: deleted ? 1 : 0 };
    },
    { versions: false },
  );
  return { result, etag };
}
