/** Batches: many items deleted or moved in one call, each on its own (one failing does not stop the others). */
import { DomainError, type Principal } from '@svc/kit';

import type { DriveDomain } from '../items/domain.js';
import { deleteItem, updateItem } from '../items/tree.js';
import { isText, readBytes } from './io.js';
import { removeTags, setTags, validTags } from './tags.js';

type Result = { id: string; ok: boolean; errorCode: string; errorMessage: string; deleted: number };

async function each(ids: string[], fn: (id: string) => Promise<number>) {
  if (!ids.length || ids.length > 100) throw new DomainError('invalid_argument', 'invalid_request', 'ids: 1 to 100 item ids.');
  if (new Set(ids).size !== ids.length) throw new DomainError('invalid_argument', 'invalid_request', 'ids: each id once.');
  const results: Result[] = [];
  for (const id of ids) {
    try {
      results.push({ id, ok: true, errorCode: '', errorMessage: '', deleted: await fn(id) });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      results.push({ id, ok: false, errorCode: err.code, errorMessage: err.message, deleted: 0 });
    }
  }
  const succeeded = results.filter((r) => r.ok).length;
  return { results, succeeded, failed: results.length - succeeded };
}

export function batchDelete(drive: DriveDomain, p: Principal, input: { ids: string[]; recursive: boolean }) {
  return each(input.ids, (id) => deleteItem(drive, p, { id, recursive: input.recursive, lockTokens: [] }));
}

export function batchMove(drive: DriveDomain, p: Principal, input: { ids: string[]; parentId?: string }) {
  return each(input.ids, async (id) => {
    await updateItem(drive, p, { id, parentId: input.parentId ?? '', overwrite: false, lockTokens: [] });
    return 0;
  });
}

/** Adds and removes tags on up to 100 items, each on its own. */
export function batchTag(drive: DriveDomain, p: Principal, input: { ids: string[]; add: string[]; remove: string[] }) {
  if (!input.add.length && !input.remove.length) throw new DomainError('invalid_argument', 'invalid_request', 'add or remove: at least one tag.');
  validTags([...input.add, ...input.remove]);
  return each(input.ids, async (id) => {
    if (input.remove.length) await removeTags(drive, p, { id, tags: input.remove });
    if (input.add.length) await setTags(drive, p, { id, tags: input.add }, false);
    return 0;
  });
}

/** The most bytes one readMany answers (all files together). */
const READ_MANY_BYTES = 2 * 1024 * 1024;

/** Up to 50 files read at once, each as text (or base64), with its path; each fails on its own. */
export async function readMany(drive: DriveDomain, p: Principal, ids: string[]) {
  if (!ids.length || ids.length > 50) throw new DomainError('invalid_argument', 'invalid_request', 'ids: 1 to 50 file ids.');
  let budget = READ_MANY_BYTES;
  const out = [];
  for (const id of ids) {
    try {
      const row = await drive.visible(drive.sql, p, id);
      if (row.size > budget) throw new DomainError('too_large', 'file_too_large', `Past the ${READ_MANY_BYTES} bytes one call reads; read it alone.`);
      const bytes = await readBytes(drive, row);
      budget -= bytes.length;
      const text = isText(bytes);
      const { path } = await drive.ancestry(drive.sql, p.accountId, row.id);
      out.push({
        id,
        ok: true,
        path,
        etag: `"${row.sha256}"`,
        content: bytes.toString(text ? 'utf8' : 'base64'),
        encoding: text ? 'utf8' : 'base64',
        errorCode: '',
        errorMessage: '',
      });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      out.push({ id, ok: false, path: '', etag: '', content: '', encoding: '', errorCode: err.code, errorMessage: err.message });
    }
  }
  return { files: out };
}
