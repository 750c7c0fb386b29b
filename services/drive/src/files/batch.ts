/** Batches: many items deleted or moved in one call, each on its own (one failing does not stop the others). */
import { DomainError, type Principal } from '@svc/kit';

import type { DriveDomain } from '../domain.js';
import { deleteItem, updateItem } from '../tree.js';

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
