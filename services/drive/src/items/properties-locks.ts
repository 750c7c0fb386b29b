/** Items' custom properties and write locks. */
import { randomUUID } from 'node:crypto';

import { DomainError, newId, type Principal } from '@svc/kit';

import { EMPTY_SHA256 } from './content.js';
import { actorOf, type DriveDomain, writer } from './domain.js';
import { contentTypeFor, validName } from './rules.js';
import type { ItemRow, LockRow } from './store.js';
import type { ItemView } from './types.js';

/** Sets and removes an item's custom properties, all or nothing (at most 1000 an item). */
export async function setProperties(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; patches: Array<{ ns: string; name: string; xml?: string }>; lockTokens: string[] },
): Promise<ItemView> {
  writer(p);
  for (const x of input.patches) {
    if (!x.name || x.name.length > 255 || x.ns.length > 1024 || (x.xml?.length ?? 0) > 65_536) {
      throw new DomainError('invalid_argument', 'invalid_property', 'A property name or value is too long.');
    }
  }
  return drive.tx(async (q) => {
    const row = await drive.visible(q, p, input.id, true);
    const { ids } = await drive.ancestry(q, p.accountId, row.id);
    await drive.checkLocks(q, p, input.lockTokens, { direct: [row.id], within: ids, below: [] });
    for (const x of input.patches) {
      if (x.xml !== undefined) await drive.store.setProp(q, row.id, { ns: x.ns, name: x.name, xml: x.xml });
      else await drive.store.removeProp(q, row.id, x.ns, x.name);
    }
    const [count] = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM drive.props WHERE item_id = $1`, [row.id]);
    if ((count?.n ?? 0) > 1000) throw new DomainError('invalid_argument', 'too_many_properties', 'An item holds at most 1000 properties.');
    const touched = row.kind === 'folder' ? await drive.store.touch(q, row.id, actorOf(p)) : row;
    return drive.fullView(q, p, touched);
  });
}

/**
 * Takes a write lock on an item (or on a new empty file `name` in `parentId`), or refreshes one
 * the caller holds. An exclusive lock excludes every other; shared ones may overlap.
 */
export async function lockItem(
  drive: DriveDomain,
  p: Principal,
  input: {
    id?: string;
    parentId?: string;
    name?: string;
    projectId?: string;
    scope: string;
    deep: boolean;
    owner: string;
    timeoutSeconds: number;
    refreshToken?: string;
    lockTokens: string[];
  },
): Promise<{ lock: LockRow & { rootPath: string }; item: ItemView; created: boolean }> {
  writer(p);
  const me = actorOf(p);
  const seconds = Math.min(Math.max(input.timeoutSeconds > 0 ? input.timeoutSeconds : 3600, 1), drive.settings.maxLockSeconds);
  if (input.scope !== 'exclusive' && input.scope !== 'shared') {
    throw new DomainError('invalid_argument', 'invalid_lock_scope', 'A lock is exclusive or shared.');
  }
  if (!input.id) await drive.content.ensureEmpty(p.accountId, drive.settings.graceSeconds);
  return drive.tx(
    async (q) => {
      let row: ItemRow;
      let created = false;
      if (input.id) {
        row = await drive.visible(q, p, input.id, true);
      } else {
        const name = validName(input.name);
        const { place, folder } = await drive.folder(q, p, input.parentId, input.projectId);
        const existing = await drive.store.byName(q, place, name, { lock: true });
        if (existing) {
          row = existing;
        } else {
          await drive.checkLocks(q, p, input.lockTokens, { ...(await drive.folderScope(q, p, folder)), below: [] });
          row = await drive.store.insert(q, {
            id: newId('file'),
            account_id: p.accountId,
            project_id: place.projectId,
            parent_id: place.parentId,
            name,
            kind: 'file',
            size: 0,
            content_type: contentTypeFor(undefined, name),
            sha256: EMPTY_SHA256,
            created_by: me,
            updated_by: me,
          });
          await drive.emit(q, 'drive.file.created', row, {});
          created = true;
        }
      }
      const chain = await drive.store.chain(q, p.accountId, row.id);
      const ancestors = chain.slice(0, -1).map((r) => r.id);
      const view = async () => drive.fullView(q, p, (await drive.store.byId(q, p.accountId, row.id)) as ItemRow);
      if (input.refreshToken) {
        const l = await drive.store.lockByToken(q, p.accountId, input.refreshToken);
        if (!l || !(l.item_id === row.id || (l.deep && ancestors.includes(l.item_id)))) {
          throw new DomainError('precondition_failed', 'lock_token_mismatch', 'No lock with that token covers this item.');
        }
        if (l.holder.id !== me.id || l.holder.kind !== me.kind) {
          throw new DomainError('forbidden', 'lock_not_yours', 'That lock belongs to someone else.');
        }
        const refreshed = await drive.store.refreshLock(q, l.token, seconds);
        const v = await view();
        return { lock: v.locks!.find((x) => x.token === refreshed.token)!, item: v, created: false };
      }
      const below = input.deep ? (await drive.store.subtree(q, p.accountId, row.id)).map((r) => r.id).slice(1) : [];
      const existing = (await drive.store.locksOn(q, [row.id, ...ancestors, ...below])).filter(
        (l) => l.item_id === row.id || below.includes(l.item_id) || (l.deep && ancestors.includes(l.item_id)),
      );
      if (existing.some((l) => input.scope === 'exclusive' || l.scope === 'exclusive')) {
        throw new DomainError('conflict', 'locked', 'The item is already locked.', { lockedItemId: existing[0]!.item_id });
      }
      const lock = await drive.store.insertLock(q, {
        token: `urn:uuid:${randomUUID()}`,
        account_id: p.accountId,
        item_id: row.id,
        scope: input.scope as 'exclusive' | 'shared',
        deep: input.deep && row.kind === 'folder',
        owner_xml: input.owner.slice(0, 4096),
        timeout_seconds: seconds,
        holder: me,
      });
      const v = await view();
      return { lock: v.locks!.find((x) => x.token === lock.token)!, item: v, created };
    },
    {
      onUnique: async () => {
        throw new DomainError('conflict', 'locked', 'The item is being locked by another request.');
      },
    },
  );
}

/** Releases a lock the caller holds on the item (or on a folder above it, deep). */
export async function unlockItem(drive: DriveDomain, p: Principal, input: { id: string; token: string }): Promise<void> {
  const me = actorOf(p);
  await drive.tx(async (q) => {
    const row = await drive.visible(q, p, input.id);
    const l = await drive.store.lockByToken(q, p.accountId, input.token);
    const ancestors = (await drive.ancestry(q, p.accountId, row.id)).ids;
    if (!l || !(l.item_id === row.id || (l.deep && ancestors.includes(l.item_id)))) {
      throw new DomainError('conflict', 'lock_token_mismatch', 'No lock with that token covers this item.');
    }
    if (l.holder.id !== me.id || l.holder.kind !== me.kind) {
      throw new DomainError('forbidden', 'lock_not_yours', 'That lock belongs to someone else.');
    }
    await drive.store.deleteLock(q, l.token);
  });
}
