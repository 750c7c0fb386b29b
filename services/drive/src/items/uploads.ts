/** Content writes: an upload begins (checked before any byte), then commits or aborts. */
import { contentTooLarge, DomainError, ifMatchPasses, ifNoneMatchPasses, newId, type Principal, type Queryable } from '@svc/kit';

import { FilesStore } from '../files/store.js';
import { charge, judgeWrite, trimVersions, writeState } from '../quotas/quotas.js';
import type { Received } from './content.js';
import { actorOf, type DriveDomain, writer } from './domain.js';
import { currentVersion, folderNotFound, nameTaken, stale } from './errors.js';
import { contentTypeFor, etagOf, validName } from './rules.js';
import type { ItemRow, Place } from './store.js';
import type { UploadCommit, UploadHeader } from './types.js';

const versions = new FilesStore();
/** How many earlier contents a file keeps (docs/drive.md, versions). */
export const KEEP_VERSIONS = 20;

/** The checks a content write can fail before any byte is read (the commit checks again). */
async function writeTarget(
  drive: DriveDomain,
  q: Queryable,
  p: Principal,
  h: UploadHeader,
  lock: boolean,
): Promise<{ place: Place; folder: ItemRow | null; name: string; existing: ItemRow | null }> {
  if (h.requirePrecondition && h.ifMatch === undefined && h.ifNoneMatch === undefined) {
    throw new DomainError(
      'precondition_required',
      'precondition_required',
      'This write must name the version it replaces: send If-Match: "<etag>" with the ETag you read, or If-None-Match: * to create a file that must not exist yet.',
    );
  }
  let place: Place;
  let folder: ItemRow | null;
  let name: string;
  let existing: ItemRow | null;
  if (h.itemId) {
    existing = await drive.visible(q, p, h.itemId, lock);
    if (existing.kind !== 'file') throw new DomainError('conflict', 'not_a_file', 'A folder has no content to replace.');
    place = { accountId: p.accountId, projectId: existing.project_id, parentId: existing.parent_id };
    folder = existing.parent_id ? await drive.store.byId(q, p.accountId, existing.parent_id) : null;
    name = existing.name;
  } else {
    name = validName(h.name);
    ({ place, folder } = await drive.folder(q, p, h.parentId, h.projectId));
    existing = await drive.store.byName(q, place, name, { lock });
    if (existing && existing.kind !== 'file') {
      throw new DomainError('conflict', 'name_taken', `A folder named "${name}" already exists here.`, currentVersion(existing));
    }
  }
  const current = existing ? etagOf(existing) : null;
  if (h.ifNoneMatch !== undefined && !ifNoneMatchPasses(h.ifNoneMatch, current)) {
    throw h.ifNoneMatch.trim() === '*' && existing ? nameTaken('precondition_failed', existing) : stale(existing!);
  }
  if (h.ifMatch !== undefined && !ifMatchPasses(h.ifMatch, current)) {
    if (!existing) {
      throw new DomainError('precondition_failed', 'precondition_failed', `No file named "${name}" exists to replace.`);
    }
    throw stale(existing);
  }
  if (existing && !h.itemId && h.ifMatch === undefined && h.ifNoneMatch === undefined && !h.overwrite) {
    throw nameTaken('conflict', existing);
  }
  const inFolder = await drive.folderScope(q, p, folder);
  // Replacing a file changes the file; creating one changes its folder's members.
  const scope = existing ? { direct: [existing.id], within: [...inFolder.direct, ...inFolder.within] } : inFolder;
  await drive.checkLocks(q, p, h.lockTokens, { ...scope, below: [] });
  return { place, folder, name, existing };
}

/**
 * An upload's first step: the write is checked as far as it can be before any byte (who may
 * write, the precondition, a declared size over the limit), and the upload gets a temporary
 * blob key for its bytes (the gateway writes them there). Whatever fails later (a stale
 * precondition, a client gone mid-body, a crash), the version before stays as it was.
 */
export async function beginUpload(
  drive: DriveDomain,
  p: Principal,
  h: UploadHeader,
): Promise<{ uploadId: string; blobKey: string; limitBytes: number }> {
  writer(p);
  const limit = drive.settings.maxFileBytes;
  if (h.declaredSize !== undefined && h.declaredSize > limit) throw contentTooLarge(limit);
  const { existing } = await writeTarget(drive, drive.sql, p, h, false);
  // The quotas (docs/drive.md, "Quotas"): the rate, and the files' bytes when the size is declared.
  const state = await writeState(drive.sql, p.accountId);
  judgeWrite(drive.settings.quotas, state, h.declaredSize === undefined ? undefined : h.declaredSize - (existing?.size ?? 0));
  const { uploadId, key } = await drive.content.begin(p.accountId);
  return { uploadId, blobKey: key, limitBytes: limit };
}

/**
 * An upload's last step: its bytes are placed under their SHA-256 and the file's version is
 * swapped in one transaction (the precondition checked again). Whatever the outcome, the upload
 * is over; a blob placed for a commit that lost its race is collected after the grace period.
 */
export async function commitUpload(drive: DriveDomain, p: Principal, h: UploadHeader, c: UploadCommit): Promise<{ row: ItemRow; created: boolean }> {
  writer(p);
  if (!/^[0-9a-f]{64}$/.test(c.sha256)) throw new DomainError('invalid_argument', 'invalid_request', 'sha256: 64 lowercase hex characters.');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new DomainError('invalid_argument', 'invalid_request', 'size: a byte count.');
  if (c.crc32 !== undefined && !(Number.isInteger(c.crc32) && c.crc32 >= 0 && c.crc32 <= 0xffffffff)) {
    throw new DomainError('invalid_argument', 'invalid_request', 'crc32: an unsigned 32-bit CRC.');
  }
  if (c.size > drive.settings.maxFileBytes) {
    await drive.content.abort(p.accountId, c.uploadId);
    throw contentTooLarge(drive.settings.maxFileBytes);
  }
  const received = await drive.content.received(p.accountId, c.uploadId, c.sha256, c.size, c.crc32);
  try {
    // Checked again now that the size is known (a chunked upload declares none): content refused
    // here is never placed. The commit's transaction checks once more, after its change.
    const { existing } = await writeTarget(drive, drive.sql, p, h, false);
    judgeWrite(drive.settings.quotas, await writeState(drive.sql, p.accountId), c.size - (existing?.size ?? 0));
    await drive.content.place(p.accountId, received, drive.settings.graceSeconds);
  } catch (err) {
    await drive.content.discard(received.uploadId, received.tmpKey);
    throw err;
  }
  try {
    // The upload ends in the commit's own transaction (one commit fewer: PGlite's cost ~2 ms each).
    return await commitContent(drive, p, h, received);
  } catch (err) {
    await drive.content.finish(received.uploadId);
    throw err;
  }
}

/** Forgets an upload whose bytes did not arrive (a no-op for one already over). */
export async function abortUpload(drive: DriveDomain, p: Principal, uploadId: string): Promise<void> {
  writer(p);
  await drive.content.abort(p.accountId, uploadId);
}

async function commitContent(drive: DriveDomain, p: Principal, h: UploadHeader, r: Received): Promise<{ row: ItemRow; created: boolean }> {
  const actor = actorOf(p);
  return drive.tx(
    async (q) => {
      await drive.store.endUpload(q, r.uploadId);
      const { place, name, existing } = await writeTarget(drive, q, p, h, true);
      // A replacement keeps the file's content type unless the writer gives one.
      const contentType = h.contentType || !existing?.content_type ? contentTypeFor(h.contentType, name) : existing.content_type;
      if (existing) {
        const row = await drive.store.swapContent(q, existing.id, existing.sha256!, {
          sha256: r.sha256,
          size: r.size,
          contentType,
          actor,
        });
        if (!row) throw stale((await drive.store.byId(q, p.accountId, existing.id))!);
        if (existing.sha256 !== r.sha256) {
          // The content replaced is kept as a version (the oldest beyond the limit go).
          const dropped = await versions.keepVersion(q, newId('ver'), existing, KEEP_VERSIONS);
          // And the account's oldest versions beyond its version quota go.
          const over = await trimVersions(q, p.accountId, drive.settings.quotas);
          await drive.store.release(q, p.accountId, [existing.sha256!, ...dropped, ...over], drive.settings.graceSeconds);
        }
        await drive.emit(q, 'drive.file.updated', row, { previousEtag: etagOf(existing) });
        await charge(q, p.accountId, drive.settings.quotas, r.size - existing.size, h.uncounted ? 0 : 1);
        return { row, created: false };
      }
      const row = await drive.store.insert(q, {
        id: newId('file'),
        account_id: p.accountId,
        project_id: place.projectId,
        parent_id: place.parentId,
        name,
        kind: 'file',
        size: r.size,
        content_type: contentType,
        sha256: r.sha256,
        created_by: actor,
        updated_by: actor,
      });
      await drive.emit(q, 'drive.file.created', row, {});
      await charge(q, p.accountId, drive.settings.quotas, r.size, h.uncounted ? 0 : 1);
      return { row, created: true };
    },
    {
      onUnique: async () => {
        // Another writer created the name between our check and our insert: exactly one wins.
        const winner = h.itemId
          ? null
          : await drive.store.byName(drive.sql, (await drive.folder(drive.sql, p, h.parentId, h.projectId)).place, h.name!);
        if (winner) throw nameTaken(h.ifNoneMatch !== undefined || h.ifMatch !== undefined ? 'precondition_failed' : 'conflict', winner);
        throw new DomainError('precondition_failed', 'precondition_failed', 'The file changed while it was being written.');
      },
      onForeignKey: async () => {
        throw folderNotFound();
      },
    },
  );
}
