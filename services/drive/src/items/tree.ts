/** The tree: folders, renames and moves, deletes, copies. */
import { DomainError, ifMatchPasses, newId, type Principal, type Queryable } from '@svc/kit';

import { charge } from '../quotas/quotas.js';
import { actorOf, type DriveDomain, writer } from './domain.js';
import { nameTaken, stale } from './errors.js';
import { etagOf, validName } from './rules.js';
import type { ItemRow, Place } from './store.js';

/** A new empty folder; its name must be free in its parent. */
export async function createFolder(
  drive: DriveDomain,
  p: Principal,
  input: { parentId?: string; name: string; projectId?: string; lockTokens: string[] },
): Promise<ItemRow> {
  writer(p);
  const name = validName(input.name);
  const actor = actorOf(p);
  const row = await drive.tx(
    async (q) => {
      const { place, folder } = await drive.folder(q, p, input.parentId, input.projectId);
      await drive.checkLocks(q, p, input.lockTokens, { ...(await drive.folderScope(q, p, folder)), below: [] });
      const existing = await drive.store.byName(q, place, name);
      if (existing) throw nameTaken('conflict', existing);
      const r = await drive.store.insert(q, {
        id: newId('fld'),
        account_id: p.accountId,
        project_id: place.projectId,
        parent_id: place.parentId,
        name,
        kind: 'folder',
        size: 0,
        content_type: null,
        sha256: null,
        created_by: actor,
        updated_by: actor,
      });
      await drive.emit(q, 'drive.folder.created', r, {});
      return r;
    },
    {
      onUnique: async () => {
        throw new DomainError('conflict', 'name_taken', `An item named "${name}" already exists in this folder.`);
      },
    },
  );
  return row;
}

/** Rename and/or move. With `overwrite`, an item holding the target name is deleted first. */
export async function updateItem(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; name?: string; parentId?: string; ifMatch?: string; overwrite: boolean; lockTokens: string[] },
): Promise<{ row: ItemRow; created: boolean }> {
  writer(p);
  const name = input.name === undefined ? undefined : validName(input.name);
  const actor = actorOf(p);
  return drive.tx(
    async (q) => {
      let row = await drive.visible(q, p, input.id, true);
      if (input.ifMatch !== undefined && !ifMatchPasses(input.ifMatch, etagOf(row))) throw stale(row);
      const moving = input.parentId !== undefined && (input.parentId || null) !== row.parent_id;
      if (moving && row.kind === 'folder') {
        // Folder moves take turns per account, so two crossing moves cannot make a cycle.
        await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`drive.move.${p.accountId}`]);
        row = await drive.visible(q, p, input.id, true);
      }
      let target: { place: Place; folder: ItemRow | null };
      if (input.parentId === undefined) {
        target = {
          place: { accountId: p.accountId, projectId: row.project_id, parentId: row.parent_id },
          folder: row.parent_id ? await drive.store.byId(q, p.accountId, row.parent_id) : null,
        };
      } else if (input.parentId === '') {
        target = { place: { accountId: p.accountId, projectId: row.project_id, parentId: null }, folder: null };
      } else {
        target = await drive.folder(q, p, input.parentId, undefined);
        if (target.place.projectId !== row.project_id) {
          throw new DomainError('invalid_argument', 'cross_project_move', 'An item cannot move to another project’s drive.');
        }
      }
      const newName = name ?? row.name;
      const targetChain = target.folder ? await drive.store.chain(q, p.accountId, target.folder.id) : [];
      if (targetChain.some((a) => a.id === row.id)) {
        throw new DomainError('conflict', 'move_into_itself', 'A folder cannot be moved into itself or one of its subfolders.');
      }
      if (target.place.parentId === row.parent_id && newName === row.name) return { row, created: false };

      const subtree = await drive.store.subtree(q, p.accountId, row.id);
      const source = row.parent_id ? await drive.store.byId(q, p.accountId, row.parent_id) : null;
      const from = await drive.folderScope(q, p, source);
      const to = { direct: target.folder ? [target.folder.id] : [], within: targetChain.slice(0, -1).map((a) => a.id) };
      const existing = await drive.store.byName(q, target.place, newName, { lock: true });
      let below = subtree.map((r) => r.id);
      let created = true;
      if (existing && existing.id !== row.id) {
        if (!input.overwrite) throw nameTaken('conflict', existing);
        if (targetChain.some((a) => a.id === existing.id)) {
          throw new DomainError('conflict', 'move_into_itself', 'The item to replace contains the item being moved.');
        }
        const doomed = await drive.store.subtree(q, p.accountId, existing.id);
        below = [...below, ...doomed.map((r) => r.id)];
        await drive.checkLocks(q, p, input.lockTokens, {
          direct: [row.id, ...from.direct, ...to.direct],
          within: [...from.within, ...to.within],
          below,
        });
        await deleteRows(drive, q, p, existing, doomed);
        created = false;
      } else {
        await drive.checkLocks(q, p, input.lockTokens, {
          direct: [row.id, ...from.direct, ...to.direct],
          within: [...from.within, ...to.within],
          below,
        });
      }
      // A lock stays with its URL: what moves leaves its locks behind (RFC 4918 7.7).
      await drive.store.deleteLocksOn(
        q,
        subtree.map((r) => r.id),
      );
      const moved = await drive.store.relocate(q, row.id, { parentId: target.place.parentId, name: newName, actor });
      await drive.emit(q, `drive.${row.kind}.moved`, moved, { from: { parentId: row.parent_id, name: row.name } });
      return { row: moved, created };
    },
    {
      onUnique: async () => {
        throw new DomainError('conflict', 'name_taken', 'An item with that name already exists in the folder.');
      },
    },
  );
}

/** Deletes an item (a folder only with `recursive`, and then all it holds); returns how many items went. */
export async function deleteItem(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; recursive: boolean; ifMatch?: string; lockTokens: string[] },
): Promise<number> {
  writer(p);
  return drive.tx(
    async (q) => {
      const row = await drive.visible(q, p, input.id, true);
      if (input.ifMatch !== undefined && !ifMatchPasses(input.ifMatch, etagOf(row))) throw stale(row);
      const subtree = await drive.store.subtree(q, p.accountId, row.id);
      if (subtree.length > 1 && !input.recursive) {
        throw new DomainError(
          'conflict',
          'folder_not_empty',
          `The folder "${row.name}" is not empty; delete it with ?recursive=true to delete everything in it.`,
        );
      }
      const parent = row.parent_id ? await drive.store.byId(q, p.accountId, row.parent_id) : null;
      const scope = await drive.folderScope(q, p, parent);
      await drive.checkLocks(q, p, input.lockTokens, {
        direct: [row.id, ...scope.direct],
        within: scope.within,
        below: subtree.map((r) => r.id),
      });
      await deleteRows(drive, q, p, row, subtree);
      return subtree.length;
    },
    {
      onForeignKey: async () => {
        throw new DomainError('conflict', 'changed_concurrently', 'The folder changed while it was being deleted; try again.');
      },
    },
  );
}

async function deleteRows(drive: DriveDomain, q: Queryable, p: Principal, root: ItemRow, subtree: ItemRow[]): Promise<void> {
  await drive.store.remove(q, subtree.map((r) => r.id).reverse());
  const shas = [...new Set(subtree.filter((r) => r.sha256).map((r) => r.sha256!))];
  await drive.store.release(q, p.accountId, shas, drive.settings.graceSeconds);
  await drive.emit(q, `drive.${root.kind}.deleted`, root, { deletedCount: subtree.length, deletedBy: actorOf(p) });
}

/** Copies an item (a folder with its members when `recursive`) under a new parent and name. */
export async function copyItem(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; parentId?: string; name: string; overwrite: boolean; recursive: boolean; lockTokens: string[]; besideSource?: boolean },
): Promise<{ row: ItemRow; created: boolean }> {
  writer(p);
  const given = input.besideSource !== undefined && !input.name ? undefined : validName(input.name);
  const actor = actorOf(p);
  return drive.tx(
    async (q) => {
      const src = await drive.visible(q, p, input.id);
      const parentId = input.parentId || (input.besideSource ? (src.parent_id ?? undefined) : undefined);
      const name = given ?? ((parentId ?? null) === src.parent_id ? validName(`Copy of ${src.name}`.slice(0, 255)) : src.name);
      const target = await drive.folder(q, p, parentId, src.project_id ?? undefined);
      if (target.place.projectId !== src.project_id) {
        throw new DomainError('invalid_argument', 'cross_project_copy', 'An item cannot be copied to another project’s drive.');
      }
      const targetChain = target.folder ? await drive.store.chain(q, p.accountId, target.folder.id) : [];
      if (src.kind === 'folder' && input.recursive && targetChain.some((a) => a.id === src.id)) {
        throw new DomainError('conflict', 'copy_into_itself', 'A folder cannot be copied into itself.');
      }
      const to = { direct: target.folder ? [target.folder.id] : [], within: targetChain.slice(0, -1).map((a) => a.id) };
      const existing = await drive.store.byName(q, target.place, name, { lock: true });
      let created = true;
      let freed = 0;
      if (existing) {
        if (existing.id === src.id) throw new DomainError('conflict', 'copy_onto_itself', 'An item cannot be copied onto itself.');
        if (!input.overwrite) throw nameTaken('precondition_failed', existing);
        if (targetChain.some((a) => a.id === existing.id)) {
          throw new DomainError('conflict', 'copy_into_itself', 'The item to replace contains the destination.');
        }
        const doomed = await drive.store.subtree(q, p.accountId, existing.id);
        await drive.checkLocks(q, p, input.lockTokens, { ...to, below: doomed.map((r) => r.id) });
        await deleteRows(drive, q, p, existing, doomed);
        freed = doomed.reduce((n, r) => n + (r.kind === 'file' ? r.size : 0), 0);
        created = false;
      } else {
        await drive.checkLocks(q, p, input.lockTokens, { ...to, below: [] });
      }
      const rows = src.kind === 'folder' && input.recursive ? await drive.store.subtree(q, p.accountId, src.id) : [src];
      const ids = new Map<string, string>();
      let root: ItemRow | undefined;
      for (const r of rows) {
        const id = newId(r.kind === 'file' ? 'file' : 'fld');
        ids.set(r.id, id);
        const isRoot = r.id === src.id;
        const copy = await drive.store.insert(q, {
          id,
          account_id: p.accountId,
          project_id: src.project_id,
          parent_id: isRoot ? target.place.parentId : ids.get(r.parent_id!)!,
          name: isRoot ? name : r.name,
          kind: r.kind,
          size: r.size,
          content_type: r.content_type,
          sha256: r.sha256,
          created_by: actor,
          updated_by: actor,
        });
        if (r.sha256) await drive.store.hold(q, p.accountId, r.sha256, r.size, drive.settings.graceSeconds);
        await drive.store.copyProps(q, r.id, id);
        if (isRoot) root = copy;
      }
      await drive.emit(q, `drive.${root!.kind}.created`, root!, { copiedFrom: src.id });
      // A copy is a write: counted, and refused when it takes the account's files over the quota.
      const added = rows.reduce((n, r) => n + (r.kind === 'file' ? r.size : 0), 0);
      await charge(q, p.accountId, drive.settings.quotas, added - freed);
      return { row: root!, created };
    },
    {
      onUnique: async () => {
        throw new DomainError('precondition_failed', 'name_taken', 'An item with that name already exists.');
      },
    },
  );
}
