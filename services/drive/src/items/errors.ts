/** The drive's refusals that several operations share, and what a 412 tells the client. */
import { DomainError } from '@svc/kit';

import { etagOf } from './rules.js';
import type { ItemRow } from './store.js';

export const notFound = () => new DomainError('not_found', 'item_not_found', 'File or folder not found.');
export const folderNotFound = () => new DomainError('not_found', 'folder_not_found', 'Folder not found.');
export const nameTaken = (status: 'conflict' | 'precondition_failed', existing: ItemRow) =>
  new DomainError(status, 'name_taken', `An item named "${existing.name}" already exists in this folder.`, currentVersion(existing));

/** What a 412 tells the client so that it can rebase in one round trip. */
export function currentVersion(r: ItemRow): Record<string, unknown> {
  return {
    id: r.id,
    etag: etagOf(r),
    sha256: r.sha256,
    size: r.kind === 'file' ? r.size : null,
    updatedAt: r.updated_at.toISOString(),
    updatedBy: { kind: r.updated_by.kind, id: r.updated_by.id, keyId: r.updated_by.keyId ?? null },
  };
}

export const stale = (r: ItemRow) =>
  new DomainError(
    'precondition_failed',
    'precondition_failed',
    `The ${r.kind} changed since the version you named: it is now ${etagOf(r)}. Nothing was written.`,
    currentVersion(r),
  );
