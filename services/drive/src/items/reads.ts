/** Reads: listing a folder, one item, and resolving a path. */
import { normalizeName, type Principal } from '@svc/kit';

import type { DriveDomain } from './domain.js';
import { decodeCursor, encodeCursor } from './rules.js';
import type { ItemRow, Place } from './store.js';
import type { ItemView } from './types.js';

/** A folder's members in name order, a page at a time; `full` adds each one's path, locks and custom properties. */
export async function listItems(
  drive: DriveDomain,
  p: Principal,
  input: { parentId?: string; projectId?: string; limit: number; cursor?: string; full: boolean },
): Promise<{ items: ItemView[]; nextCursor?: string }> {
  const limit = Math.min(Math.max(input.limit || 50, 1), 1000);
  const after = input.cursor ? decodeCursor(input.cursor) : undefined;
  const q = drive.sql;
  const { place, folder } = await drive.folder(q, p, input.parentId, input.projectId);
  const rows = await drive.store.children(q, place, after, limit + 1);
  const page = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? encodeCursor(page[page.length - 1]!) : undefined;
  if (!input.full) return { items: page.map((row) => ({ row })), nextCursor };
  // The full view: each member's path, custom properties, and the locks covering it (its own,
  // and the deep locks of its folder and the folder's ancestors).
  const parent = folder ? await drive.fullView(q, p, folder) : { path: '', locks: [] };
  const props = await drive.store.props(
    q,
    page.map((r) => r.id),
  );
  const own = await drive.store.locksOn(
    q,
    page.map((r) => r.id),
  );
  const inherited = (parent.locks ?? []).filter((l) => l.deep);
  const items = page.map((row) => {
    const path = parent.path ? `${parent.path}/${row.name}` : row.name;
    return {
      row,
      path,
      props: props.filter((x) => x.item_id === row.id),
      locks: [...inherited, ...own.filter((l) => l.item_id === row.id).map((l) => ({ ...l, rootPath: path }))],
    };
  });
  return { items, nextCursor };
}

/** One item; `full` adds its path, locks and custom properties. */
export async function getItem(drive: DriveDomain, p: Principal, id: string, full: boolean): Promise<ItemView> {
  const row = await drive.visible(drive.sql, p, id);
  return full ? drive.fullView(drive.sql, p, row) : { row };
}

/**
 * Walks names from the drive root to an item (for clients that address items by path). A missing
 * item comes with whether its parent folder exists, and which (for creating it there).
 */
export async function resolvePath(
  drive: DriveDomain,
  p: Principal,
  input: { segments: string[]; projectId?: string; full: boolean },
): Promise<{ item?: ItemView; parentExists: boolean; parent?: ItemView }> {
  const q = drive.sql;
  let place: Place = { accountId: p.accountId, projectId: drive.rootProject(p, input.projectId), parentId: null };
  let parent: ItemRow | null = null;
  // Names are stored in NFC (packages/kit/src/names.ts): a path finds them however it is composed.
  const segs = input.segments.map(normalizeName);
  if (!segs.length) return { parentExists: true };
  for (let i = 0; i < segs.length; i++) {
    const row = await drive.store.byName(q, place, segs[i]!);
    const last = i === segs.length - 1;
    if (!row) {
      if (!last) return { parentExists: false };
      const parentView = parent ? (input.full ? await drive.fullView(q, p, parent) : { row: parent }) : undefined;
      return { parentExists: true, parent: parentView };
    }
    if (last) {
      return { item: input.full ? await drive.fullView(q, p, row) : { row }, parentExists: true };
    }
    if (row.kind !== 'folder') return { parentExists: false };
    parent = row;
    place = { accountId: p.accountId, projectId: row.project_id, parentId: row.id };
  }
  return { parentExists: false };
}
