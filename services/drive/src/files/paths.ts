/** Finding things: a path's item, an item's ancestors, a folder's tree, names, recent files, sizes, duplicates. */
import { DomainError, type Principal } from '@svc/kit';

import { type DriveDomain, writer } from '../items/domain.js';
import { resolvePath } from '../items/reads.js';
import type { ItemRow, Place } from '../items/store.js';
import { createFolder } from '../items/tree.js';
import { quotaOf } from '../quotas/quotas.js';
import { notAFolder, segments } from './io.js';
import { FilesStore, type PathRow, type Start } from './store.js';

export const files = new FilesStore();

export interface PathItem {
  row: ItemRow;
  path: string;
  depth: number;
}

/** The item at a path from the drive root. */
export async function statPath(drive: DriveDomain, p: Principal, input: { path: string; projectId?: string }): Promise<PathItem> {
  const segs = segments(input.path);
  const r = await resolvePath(drive, p, { segments: segs, projectId: input.projectId, full: false });
  if (!r.item) throw new DomainError('not_found', 'item_not_found', `Nothing at "${segs.join('/')}".`);
  return { row: r.item.row, path: segs.join('/'), depth: segs.length };
}

/** An item's folders from the root down, then the item (each with its path). */
export async function ancestors(drive: DriveDomain, p: Principal, id: string): Promise<PathItem[]> {
  await drive.visible(drive.sql, p, id);
  const chain = await drive.store.chain(drive.sql, p.accountId, id);
  return chain.map((row, i) => ({
    row,
    path: chain
      .slice(0, i + 1)
      .map((c) => c.name)
      .join('/'),
    depth: i + 1,
  }));
}

/** Where a walk starts, and the path of that folder from the root ("" for the root). */
export async function start(
  drive: DriveDomain,
  p: Principal,
  folderId: string | undefined,
  projectId: string | undefined,
): Promise<{ start: Start; prefix: string }> {
  if (!folderId) return { start: { accountId: p.accountId, projectId: drive.rootProject(p, projectId) }, prefix: '' };
  const f = await drive.visible(drive.sql, p, folderId);
  if (f.kind !== 'folder') throw notAFolder();
  return { start: { folderId: f.id }, prefix: (await drive.ancestry(drive.sql, p.accountId, f.id)).path };
}

const withPrefix = (prefix: string, rows: PathRow[]): PathItem[] =>
  rows.map((r) => ({ row: r, path: prefix ? `${prefix}/${r.path}` : r.path, depth: r.depth }));

const clamp = (v: number, def: number, max: number) => Math.min(Math.max(v || def, 1), max);

/** Everything under a folder to a depth, breadth first. */
export async function tree(
  drive: DriveDomain,
  p: Principal,
  input: { folderId?: string; projectId?: string; maxDepth: number; limit: number },
): Promise<{ items: PathItem[]; truncated: boolean }> {
  const { start: s, prefix } = await start(drive, p, input.folderId, input.projectId);
  const limit = clamp(input.limit, 500, 2000);
  const rows = await files.walk(drive.sql, p.accountId, s, clamp(input.maxDepth, 3, 50), limit + 1);
  return { items: withPrefix(prefix, rows.slice(0, limit)), truncated: rows.length > limit };
}

/** A glob ("*.md") or a substring as a case-insensitive SQL LIKE pattern. */
export function likeOf(name: string): string {
  const esc = name.replace(/[\\%_]/g, (c) => `\\${c}`);
  if (!/[*?]/.test(name)) return `%${esc}%`;
  return esc.replace(/\*/g, '%').replace(/\?/g, '_');
}

/** Items under a folder whose name matches. */
export async function findItems(
  drive: DriveDomain,
  p: Principal,
  input: { folderId?: string; projectId?: string; name: string; kind: string; limit: number },
): Promise<{ items: PathItem[]; truncated: boolean }> {
  if (!input.name) throw new DomainError('invalid_argument', 'invalid_request', 'name: a glob or a substring is required.');
  if (input.kind && input.kind !== 'file' && input.kind !== 'folder') {
    throw new DomainError('invalid_argument', 'invalid_request', 'kind: file or folder.');
  }
  const { start: s, prefix } = await start(drive, p, input.folderId, input.projectId);
  const limit = clamp(input.limit, 100, 1000);
  const rows = await files.walk(drive.sql, p.accountId, s, 100, limit + 1, {
    nameLike: likeOf(input.name),
    kind: (input.kind || undefined) as 'file' | 'folder' | undefined,
  });
  return { items: withPrefix(prefix, rows.slice(0, limit)), truncated: rows.length > limit };
}

/** A drive's files, the most recently written first, with their paths. */
export async function recentFiles(
  drive: DriveDomain,
  p: Principal,
  input: { projectId?: string; limit: number; cursor?: string },
): Promise<{ items: PathItem[]; nextCursor?: string }> {
  const limit = clamp(input.limit, 20, 200);
  let after: { at: Date; id: string } | undefined;
  if (input.cursor) {
    try {
      const [at, id] = JSON.parse(Buffer.from(input.cursor, 'base64url').toString('utf8')) as [string, string];
      if (typeof id !== 'string' || Number.isNaN(Date.parse(at))) throw new Error('bad');
      after = { at: new Date(at), id };
    } catch {
      throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
    }
  }
  const rows = await files.recent(drive.sql, p.accountId, drive.rootProject(p, input.projectId), after, limit + 1);
  const page = rows.slice(0, limit);
  const items: PathItem[] = [];
  for (const row of page) {
    const { path } = await drive.ancestry(drive.sql, p.accountId, row.id);
    items.push({ row, path, depth: path.split('/').length });
  }
  const last = page[page.length - 1];
  const nextCursor =
    rows.length > limit && last ? Buffer.from(JSON.stringify([last.updated_at.toISOString(), last.id])).toString('base64url') : undefined;
  return { items, nextCursor };
}

/** Makes every missing folder of a path (mkdir -p); answers the last one. */
export async function makeFolders(
  drive: DriveDomain,
  p: Principal,
  input: { path: string; projectId?: string },
): Promise<{ row: ItemRow; created: boolean }> {
  writer(p);
  const segs = segments(input.path);
  let parent: ItemRow | null = null;
  let created = false;
  for (const name of segs) {
    const place: Place = parent
      ? { accountId: p.accountId, projectId: parent.project_id, parentId: parent.id }
      : { accountId: p.accountId, projectId: drive.rootProject(p, input.projectId), parentId: null };
    let row = await drive.store.byName(drive.sql, place, name);
    if (row && row.kind !== 'folder') {
      throw new DomainError('conflict', 'not_a_folder', `"${name}" is a file, not a folder.`);
    }
    if (!row) {
      try {
        row = await createFolder(drive, p, { parentId: parent?.id, name, projectId: parent ? undefined : input.projectId, lockTokens: [] });
        created = true;
      } catch (err) {
        // Made by a concurrent call: use it.
        row = err instanceof DomainError && err.code === 'name_taken' ? await drive.store.byName(drive.sql, place, name) : null;
        if (!row || row.kind !== 'folder') throw err;
      }
    }
    parent = row;
  }
  return { row: parent!, created };
}

export async function folderSize(drive: DriveDomain, p: Principal, id: string) {
  const f = await drive.visible(drive.sql, p, id);
  if (f.kind !== 'folder') throw notAFolder();
  return files.size(drive.sql, p.accountId, f.id);
}

export async function usage(drive: DriveDomain, p: Principal, projectId: string | undefined) {
  const scoped = p.projectId || projectId ? drive.rootProject(p, projectId) : undefined;
  return { ...(await files.usage(drive.sql, p.accountId, scoped)), quota: await quotaOf(drive.sql, p.accountId, drive.settings.quotas) };
}

export async function duplicates(drive: DriveDomain, p: Principal, input: { projectId?: string; limit: number; minSize: number }) {
  if (input.minSize < 0) throw new DomainError('invalid_argument', 'invalid_request', 'minSize: at least 0.');
  const groups = await files.duplicates(drive.sql, p.accountId, drive.rootProject(p, input.projectId), input.minSize, clamp(input.limit, 50, 500));
  const out = [];
  let wasted = 0;
  for (const g of groups) {
    const list = [];
    for (const id of g.ids.slice(0, 100)) list.push({ id, path: (await drive.ancestry(drive.sql, p.accountId, id)).path });
    wasted += g.size * (g.ids.length - 1);
    out.push({ sha256: g.sha256, size: g.size, files: list });
  }
  return { groups: out, wastedBytes: wasted };
}
