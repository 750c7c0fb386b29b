import { randomUUID } from 'node:crypto';

import {
  type Blobs,
  contentTooLarge,
  DomainError,
  enqueueEvent,
  ifMatchPasses,
  ifNoneMatchPasses,
  type Logger,
  newId,
  type OutboxRelay,
  type Principal,
  type Queryable,
  type Sql,
} from '@svc/kit';

import { Content, contentKey, EMPTY_SHA256, type Received } from './content.js';
import {
  contentTypeFor,
  decodeCursor,
  encodeCursor,
  etagOf,
  sqlState,
  validName,
} from './rules.js';
import { type Actor, DriveStore, type ItemRow, type LockRow, type Place, type PropRow, SCHEMA } from './store.js';

export interface DriveSettings {
  /** Largest file accepted, in bytes (413 above). */
  maxFileBytes: number;
  /** How long an unreferenced blob is kept before it is collected (readers may still stream it). */
  graceSeconds: number;
  /** Longest WebDAV lock; `Timeout: Infinite` gets this. */
  maxLockSeconds: number;
  /** How often the collector runs. */
  collectEveryMs: number;
}

/** An item with what a view of it needs: WebDAV locks, dead properties and its path when asked. */
export interface ItemView {
  row: ItemRow;
  locks?: Array<LockRow & { rootPath: string }>;
  props?: PropRow[];
  path?: string;
}

export interface UploadHeader {
  itemId?: string;
  parentId?: string;
  name?: string;
  projectId?: string;
  contentType?: string;
  declaredSize?: number;
  ifMatch?: string;
  ifNoneMatch?: string;
  requirePrecondition: boolean;
  overwrite: boolean;
  lockTokens: string[];
}

export interface DownloadRequest {
  id: string;
  rangeStart?: number;
  rangeEnd?: number;
  suffixLength?: number;
  ifNoneMatch?: string;
  ifRange?: string;
  headOnly: boolean;
}

export interface DownloadResult {
  item: ItemRow;
  notModified: boolean;
  partial: boolean;
  rangeNotSatisfiable: boolean;
  start: number;
  end: number;
  /** The blob to read the bytes from, when there are bytes to send. */
  blobKey?: string;
}

export interface UploadCommit {
  uploadId: string;
  sha256: string;
  size: number;
}

const notFound = () => new DomainError('not_found', 'item_not_found', 'File or folder not found.');
const folderNotFound = () => new DomainError('not_found', 'folder_not_found', 'Folder not found.');
const nameTaken = (status: 'conflict' | 'precondition_failed', existing: ItemRow) =>
  new DomainError(
    status,
    'name_taken',
    `An item named "${existing.name}" already exists in this folder.`,
    currentVersion(existing),
  );

/** What a 412 tells the client so that it can rebase in one round trip. */
function currentVersion(r: ItemRow): Record<string, unknown> {
  return {
    id: r.id,
    etag: etagOf(r),
    sha256: r.sha256,
    size: r.kind === 'file' ? r.size : null,
    updatedAt: r.updated_at.toISOString(),
    updatedBy: { kind: r.updated_by.kind, id: r.updated_by.id, keyId: r.updated_by.keyId ?? null },
  };
}

const stale = (r: ItemRow) =>
  new DomainError(
    'precondition_failed',
    'precondition_failed',
    `The ${r.kind} changed since the version you named: it is now ${etagOf(r)}. Nothing was written.`,
    currentVersion(r),
  );

function actorOf(p: Principal): Actor {
  const id = p.kind === 'human' ? p.userId : p.kind === 'agent' ? p.agentId : p.kind === 'host' ? p.hostId : 'system';
  return { kind: p.kind, id: id ?? p.accountId, keyId: p.keyId ?? null };
}

function writer(p: Principal): void {
  if (p.kind === 'host') throw new DomainError('forbidden', 'principal_not_allowed', 'A host credential cannot use the drive.');
}

/** What events say about an item. */
export function publicView(r: ItemRow) {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    parentId: r.parent_id,
    projectId: r.project_id,
    size: r.kind === 'file' ? r.size : null,
    contentType: r.content_type,
    sha256: r.sha256,
    etag: etagOf(r),
    updatedAt: r.updated_at.toISOString(),
    updatedBy: r.updated_by,
  };
}

/**
 * The drive's rules. Every read and write is scoped to the caller's account (other accounts'
 * items are "not found") and, for a project-scoped key, to that project. Writes are
 * compare-and-swaps in PostgreSQL: the object store is only ever written under keys no row
 * references yet, so what a row names is always complete.
 */
export class DriveDomain {
  readonly store: DriveStore;
  readonly content: Content;

  constructor(
    private readonly sql: Sql,
    blobs: Blobs,
    readonly settings: DriveSettings,
    private readonly outbox: () => OutboxRelay | undefined,
    private readonly log: Logger,
  ) {
    this.store = new DriveStore(sql);
    this.content = new Content(blobs, this.store, log);
  }

  // Scope -------------------------------------------------------------------------------------

  private sees(p: Principal, r: ItemRow | null): r is ItemRow {
    return !!r && r.account_id === p.accountId && (!p.projectId || r.project_id === p.projectId);
  }

  /** The drive a root-level call works in: the key's project, or the one an unscoped key names. */
  private rootProject(p: Principal, requested: string | undefined): string | null {
    if (p.projectId) {
      if (requested && requested !== p.projectId) {
        throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
      }
      return p.projectId;
    }
    if (requested !== undefined && requested !== '' && !/^[A-Za-z0-9_.:-]{1,100}$/.test(requested)) {
      throw new DomainError('invalid_argument', 'invalid_project', 'projectId may hold letters, digits and _ . : - only.');
    }
    return requested || null;
  }

  private async visible(q: Queryable, p: Principal, id: string, lock = false): Promise<ItemRow> {
    const r = await this.store.byId(q, p.accountId, id, { lock });
    if (!this.sees(p, r)) throw notFound();
    return r;
  }

  /** The folder to work in (absent or "": the root of the caller's drive). */
  private async folder(
    q: Queryable,
    p: Principal,
    parentId: string | undefined,
    projectId: string | undefined,
  ): Promise<{ place: Place; folder: ItemRow | null }> {
    if (parentId) {
      const f = await this.store.byId(q, p.accountId, parentId);
      if (!this.sees(p, f)) throw folderNotFound();
      if (f.kind !== 'folder') throw new DomainError('conflict', 'not_a_folder', 'The parent is a file, not a folder.');
      return { place: { accountId: p.accountId, projectId: f.project_id, parentId: f.id }, folder: f };
    }
    return { place: { accountId: p.accountId, projectId: this.rootProject(p, projectId), parentId: null }, folder: null };
  }

  // Locks -------------------------------------------------------------------------------------

  /**
   * Fails with conflict/locked unless every WebDAV lock protecting this change has one of its
   * tokens submitted by its holder. `direct`: items changed (or whose membership changes);
   * `within`: their ancestors (only depth-infinity locks count); `below`: items under them.
   */
  private async checkLocks(
    q: Queryable,
    p: Principal,
    tokens: string[],
    scope: { direct: string[]; within: string[]; below: string[] },
  ): Promise<void> {
    const direct = new Set(scope.direct);
    const within = new Set(scope.within);
    const below = new Set(scope.below);
    const locks = (await this.store.locksOn(q, [...new Set([...direct, ...within, ...below])])).filter(
      (l) => direct.has(l.item_id) || below.has(l.item_id) || (l.deep && within.has(l.item_id)),
    );
    if (!locks.length) return;
    const me = actorOf(p);
    const submitted = new Set(tokens);
    const byRoot = new Map<string, LockRow[]>();
    for (const l of locks) byRoot.set(l.item_id, [...(byRoot.get(l.item_id) ?? []), l]);
    for (const group of byRoot.values()) {
      if (!group.some((l) => submitted.has(l.token) && l.holder.id === me.id && l.holder.kind === me.kind)) {
        throw new DomainError('conflict', 'locked', 'The item is locked by a WebDAV client; the write needs its lock token.', {
          lockedItemId: group[0]!.item_id,
        });
      }
    }
  }

  /** The ids of an item's ancestors (root-most first), and the item's path. */
  private async ancestry(q: Queryable, accountId: string, id: string): Promise<{ ids: string[]; path: string }> {
    const chain = await this.store.chain(q, accountId, id);
    return { ids: chain.slice(0, -1).map((r) => r.id), path: chain.map((r) => r.name).join('/') };
  }

  private async folderScope(q: Queryable, p: Principal, folder: ItemRow | null): Promise<{ direct: string[]; within: string[] }> {
    if (!folder) return { direct: [], within: [] };
    return { direct: [folder.id], within: (await this.ancestry(q, p.accountId, folder.id)).ids };
  }

  // Reads -------------------------------------------------------------------------------------

  async list(
    p: Principal,
    input: { parentId?: string; projectId?: string; limit: number; cursor?: string; includeDav: boolean },
  ): Promise<{ items: ItemView[]; nextCursor?: string }> {
    const limit = Math.min(Math.max(input.limit || 50, 1), 1000);
    const after = input.cursor ? decodeCursor(input.cursor) : undefined;
    const q = this.sql;
    const { place, folder } = await this.folder(q, p, input.parentId, input.projectId);
    const rows = await this.store.children(q, place, after, limit + 1);
    const page = rows.slice(0, limit);
    const nextCursor = rows.length > limit ? encodeCursor(page[page.length - 1]!) : undefined;
    if (!input.includeDav) return { items: page.map((row) => ({ row })), nextCursor };
    // WebDAV: each member's dead properties, and the locks covering it (its own, and the
    // depth-infinity locks of its folder and the folder's ancestors).
    const parent = folder ? await this.davView(q, p, folder) : { path: '', locks: [] };
    const props = await this.store.props(q, page.map((r) => r.id));
    const own = await this.store.locksOn(q, page.map((r) => r.id));
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

  private async davView(q: Queryable, p: Principal, row: ItemRow): Promise<ItemView> {
    const chain = await this.store.chain(q, p.accountId, row.id);
    const paths = new Map<string, string>();
    chain.forEach((r, i) =>
      paths.set(
        r.id,
        chain
          .slice(0, i + 1)
          .map((c) => c.name)
          .join('/'),
      ),
    );
    const locks = (await this.store.locksOn(q, chain.map((r) => r.id)))
      .filter((l) => l.item_id === row.id || l.deep)
      .map((l) => ({ ...l, rootPath: paths.get(l.item_id)! }));
    return { row, path: paths.get(row.id)!, locks, props: await this.store.props(q, [row.id]) };
  }

  async get(p: Principal, id: string, includeDav: boolean): Promise<ItemView> {
    const row = await this.visible(this.sql, p, id);
    return includeDav ? this.davView(this.sql, p, row) : { row };
  }

  /** Walks names from the drive root (WebDAV URLs). */
  async resolve(
    p: Principal,
    input: { segments: string[]; projectId?: string; includeDav: boolean },
  ): Promise<{ item?: ItemView; parentExists: boolean; parent?: ItemView }> {
    const q = this.sql;
    let place: Place = { accountId: p.accountId, projectId: this.rootProject(p, input.projectId), parentId: null };
    let parent: ItemRow | null = null;
    const segs = input.segments;
    if (!segs.length) return { parentExists: true };
    for (let i = 0; i < segs.length; i++) {
      const row = await this.store.byName(q, place, segs[i]!);
      const last = i === segs.length - 1;
      if (!row) {
        if (!last) return { parentExists: false };
        const parentView = parent ? (input.includeDav ? await this.davView(q, p, parent) : { row: parent }) : undefined;
        return { parentExists: true, parent: parentView };
      }
      if (last) {
        return { item: input.includeDav ? await this.davView(q, p, row) : { row }, parentExists: true };
      }
      if (row.kind !== 'folder') return { parentExists: false };
      parent = row;
      place = { accountId: p.accountId, projectId: row.project_id, parentId: row.id };
    }
    return { parentExists: false };
  }

  // Folders, moves, deletes, copies -------------------------------------------------------------

  async createFolder(
    p: Principal,
    input: { parentId?: string; name: string; projectId?: string; lockTokens: string[] },
  ): Promise<ItemRow> {
    writer(p);
    const name = validName(input.name);
    const actor = actorOf(p);
    const row = await this.tx(async (q) => {
      const { place, folder } = await this.folder(q, p, input.parentId, input.projectId);
      await this.checkLocks(q, p, input.lockTokens, { ...(await this.folderScope(q, p, folder)), below: [] });
      const existing = await this.store.byName(q, place, name);
      if (existing) throw nameTaken('conflict', existing);
      const r = await this.store.insert(q, {
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
      await this.emit(q, 'drive.folder.created', r, {});
      return r;
    }, { onUnique: async () => { throw new DomainError('conflict', 'name_taken', `An item named "${name}" already exists in this folder.`); } });
    return row;
  }

  /** Rename and/or move. With `overwrite`, an item holding the target name is deleted first. */
  async update(
    p: Principal,
    input: { id: string; name?: string; parentId?: string; ifMatch?: string; overwrite: boolean; lockTokens: string[] },
  ): Promise<{ row: ItemRow; created: boolean }> {
    writer(p);
    const name = input.name === undefined ? undefined : validName(input.name);
    const actor = actorOf(p);
    return this.tx(async (q) => {
      let row = await this.visible(q, p, input.id, true);
      if (input.ifMatch !== undefined && !ifMatchPasses(input.ifMatch, etagOf(row))) throw stale(row);
      const moving = input.parentId !== undefined && (input.parentId || null) !== row.parent_id;
      if (moving && row.kind === 'folder') {
        // Folder moves take turns per account, so two crossing moves cannot make a cycle.
        await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`drive.move.${p.accountId}`]);
        row = await this.visible(q, p, input.id, true);
      }
      let target: { place: Place; folder: ItemRow | null };
      if (input.parentId === undefined) {
        target = {
          place: { accountId: p.accountId, projectId: row.project_id, parentId: row.parent_id },
          folder: row.parent_id ? await this.store.byId(q, p.accountId, row.parent_id) : null,
        };
      } else if (input.parentId === '') {
        target = { place: { accountId: p.accountId, projectId: row.project_id, parentId: null }, folder: null };
      } else {
        target = await this.folder(q, p, input.parentId, undefined);
        if (target.place.projectId !== row.project_id) {
          throw new DomainError('invalid_argument', 'cross_project_move', 'An item cannot move to another project’s drive.');
        }
      }
      const newName = name ?? row.name;
      const targetChain = target.folder ? await this.store.chain(q, p.accountId, target.folder.id) : [];
      if (targetChain.some((a) => a.id === row.id)) {
        throw new DomainError('conflict', 'move_into_itself', 'A folder cannot be moved into itself or one of its subfolders.');
      }
      if (target.place.parentId === row.parent_id && newName === row.name) return { row, created: false };

      const subtree = await this.store.subtree(q, p.accountId, row.id);
      const source = row.parent_id ? await this.store.byId(q, p.accountId, row.parent_id) : null;
      const from = await this.folderScope(q, p, source);
      const to = { direct: target.folder ? [target.folder.id] : [], within: targetChain.slice(0, -1).map((a) => a.id) };
      const existing = await this.store.byName(q, target.place, newName, { lock: true });
      let below = subtree.map((r) => r.id);
      let created = true;
      if (existing && existing.id !== row.id) {
        if (!input.overwrite) throw nameTaken('conflict', existing);
        if (targetChain.some((a) => a.id === existing.id)) {
          throw new DomainError('conflict', 'move_into_itself', 'The item to replace contains the item being moved.');
        }
        const doomed = await this.store.subtree(q, p.accountId, existing.id);
        below = [...below, ...doomed.map((r) => r.id)];
        await this.checkLocks(q, p, input.lockTokens, {
          direct: [row.id, ...from.direct, ...to.direct],
          within: [...from.within, ...to.within],
          below,
        });
        await this.deleteRows(q, p, existing, doomed);
        created = false;
      } else {
        await this.checkLocks(q, p, input.lockTokens, {
          direct: [row.id, ...from.direct, ...to.direct],
          within: [...from.within, ...to.within],
          below,
        });
      }
      // A lock stays with its URL: what moves leaves its locks behind (RFC 4918 7.7).
      await this.store.deleteLocksOn(q, subtree.map((r) => r.id));
      const moved = await this.store.relocate(q, row.id, { parentId: target.place.parentId, name: newName, actor });
      await this.emit(q, `drive.${row.kind}.moved`, moved, { from: { parentId: row.parent_id, name: row.name } });
      return { row: moved, created };
    }, { onUnique: async () => { throw new DomainError('conflict', 'name_taken', 'An item with that name already exists in the folder.'); } });
  }

  async delete(p: Principal, input: { id: string; recursive: boolean; ifMatch?: string; lockTokens: string[] }): Promise<number> {
    writer(p);
    return this.tx(async (q) => {
      const row = await this.visible(q, p, input.id, true);
      if (input.ifMatch !== undefined && !ifMatchPasses(input.ifMatch, etagOf(row))) throw stale(row);
      const subtree = await this.store.subtree(q, p.accountId, row.id);
      if (subtree.length > 1 && !input.recursive) {
        throw new DomainError(
          'conflict',
          'folder_not_empty',
          `The folder "${row.name}" is not empty; delete it with ?recursive=true to delete everything in it.`,
        );
      }
      const parent = row.parent_id ? await this.store.byId(q, p.accountId, row.parent_id) : null;
      const scope = await this.folderScope(q, p, parent);
      await this.checkLocks(q, p, input.lockTokens, {
        direct: [row.id, ...scope.direct],
        within: scope.within,
        below: subtree.map((r) => r.id),
      });
      await this.deleteRows(q, p, row, subtree);
      return subtree.length;
    }, {
      onForeignKey: async () => {
        throw new DomainError('conflict', 'changed_concurrently', 'The folder changed while it was being deleted; try again.');
      },
    });
  }

  private async deleteRows(q: Queryable, p: Principal, root: ItemRow, subtree: ItemRow[]): Promise<void> {
    await this.store.remove(q, subtree.map((r) => r.id).reverse());
    const shas = [...new Set(subtree.filter((r) => r.sha256).map((r) => r.sha256!))];
    await this.store.release(q, p.accountId, shas, this.settings.graceSeconds);
    await this.emit(q, `drive.${root.kind}.deleted`, root, { deletedCount: subtree.length, deletedBy: actorOf(p) });
  }

  /** Copies an item (a folder with its members when `recursive`) under a new parent and name. */
  async copy(
    p: Principal,
    input: { id: string; parentId?: string; name: string; overwrite: boolean; recursive: boolean; lockTokens: string[] },
  ): Promise<{ row: ItemRow; created: boolean }> {
    writer(p);
    const name = validName(input.name);
    const actor = actorOf(p);
    return this.tx(async (q) => {
      const src = await this.visible(q, p, input.id);
      const target = await this.folder(q, p, input.parentId, src.project_id ?? undefined);
      if (target.place.projectId !== src.project_id) {
        throw new DomainError('invalid_argument', 'cross_project_copy', 'An item cannot be copied to another project’s drive.');
      }
      const targetChain = target.folder ? await this.store.chain(q, p.accountId, target.folder.id) : [];
      if (src.kind === 'folder' && input.recursive && targetChain.some((a) => a.id === src.id)) {
        throw new DomainError('conflict', 'copy_into_itself', 'A folder cannot be copied into itself.');
      }
      const to = { direct: target.folder ? [target.folder.id] : [], within: targetChain.slice(0, -1).map((a) => a.id) };
      const existing = await this.store.byName(q, target.place, name, { lock: true });
      let created = true;
      if (existing) {
        if (existing.id === src.id) throw new DomainError('conflict', 'copy_onto_itself', 'An item cannot be copied onto itself.');
        if (!input.overwrite) throw nameTaken('precondition_failed', existing);
        if (targetChain.some((a) => a.id === existing.id)) {
          throw new DomainError('conflict', 'copy_into_itself', 'The item to replace contains the destination.');
        }
        const doomed = await this.store.subtree(q, p.accountId, existing.id);
        await this.checkLocks(q, p, input.lockTokens, { ...to, below: doomed.map((r) => r.id) });
        await this.deleteRows(q, p, existing, doomed);
        created = false;
      } else {
        await this.checkLocks(q, p, input.lockTokens, { ...to, below: [] });
      }
      const rows = src.kind === 'folder' && input.recursive ? await this.store.subtree(q, p.accountId, src.id) : [src];
      const ids = new Map<string, string>();
      let root: ItemRow | undefined;
      for (const r of rows) {
        const id = newId(r.kind === 'file' ? 'file' : 'fld');
        ids.set(r.id, id);
        const isRoot = r.id === src.id;
        const copy = await this.store.insert(q, {
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
        if (r.sha256) await this.store.hold(q, p.accountId, r.sha256, r.size, this.settings.graceSeconds);
        await this.store.copyProps(q, r.id, id);
        if (isRoot) root = copy;
      }
      await this.emit(q, `drive.${root!.kind}.created`, root!, { copiedFrom: src.id });
      return { row: root!, created };
    }, { onUnique: async () => { throw new DomainError('precondition_failed', 'name_taken', 'An item with that name already exists.'); } });
  }

  // WebDAV properties and locks -------------------------------------------------------------------

  async setProperties(
    p: Principal,
    input: { id: string; patches: Array<{ ns: string; name: string; xml?: string }>; lockTokens: string[] },
  ): Promise<ItemView> {
    writer(p);
    for (const x of input.patches) {
      if (!x.name || x.name.length > 255 || x.ns.length > 1024 || (x.xml?.length ?? 0) > 65_536) {
        throw new DomainError('invalid_argument', 'invalid_property', 'A property name or value is too long.');
      }
    }
    return this.tx(async (q) => {
      const row = await this.visible(q, p, input.id, true);
      const { ids } = await this.ancestry(q, p.accountId, row.id);
      await this.checkLocks(q, p, input.lockTokens, { direct: [row.id], within: ids, below: [] });
      for (const x of input.patches) {
        if (x.xml !== undefined) await this.store.setProp(q, row.id, { ns: x.ns, name: x.name, xml: x.xml });
        else await this.store.removeProp(q, row.id, x.ns, x.name);
      }
      const [count] = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM drive.props WHERE item_id = $1`, [row.id]);
      if ((count?.n ?? 0) > 1000) throw new DomainError('invalid_argument', 'too_many_properties', 'An item holds at most 1000 properties.');
      const touched = row.kind === 'folder' ? await this.store.touch(q, row.id, actorOf(p)) : row;
      return this.davView(q, p, touched);
    });
  }

  async lock(
    p: Principal,
    input: {
      id?: string;
      parentId?: string;
      name?: string;
      projectId?: string;
      scope: string;
      deep: boolean;
      ownerXml: string;
      timeoutSeconds: number;
      refreshToken?: string;
      lockTokens: string[];
    },
  ): Promise<{ lock: LockRow & { rootPath: string }; item: ItemView; created: boolean }> {
    writer(p);
    const me = actorOf(p);
    const seconds = Math.min(Math.max(input.timeoutSeconds > 0 ? input.timeoutSeconds : 3600, 1), this.settings.maxLockSeconds);
    if (input.scope !== 'exclusive' && input.scope !== 'shared') {
      throw new DomainError('invalid_argument', 'invalid_lock_scope', 'A lock is exclusive or shared.');
    }
    if (!input.id) await this.content.ensureEmpty(p.accountId, this.settings.graceSeconds);
    return this.tx(async (q) => {
      let row: ItemRow;
      let created = false;
      if (input.id) {
        row = await this.visible(q, p, input.id, true);
      } else {
        const name = validName(input.name);
        const { place, folder } = await this.folder(q, p, input.parentId, input.projectId);
        const existing = await this.store.byName(q, place, name, { lock: true });
        if (existing) {
          row = existing;
        } else {
          await this.checkLocks(q, p, input.lockTokens, { ...(await this.folderScope(q, p, folder)), below: [] });
          row = await this.store.insert(q, {
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
          await this.emit(q, 'drive.file.created', row, {});
          created = true;
        }
      }
      const chain = await this.store.chain(q, p.accountId, row.id);
      const ancestors = chain.slice(0, -1).map((r) => r.id);
      const view = async () => this.davView(q, p, await this.store.byId(q, p.accountId, row.id) as ItemRow);
      if (input.refreshToken) {
        const l = await this.store.lockByToken(q, p.accountId, input.refreshToken);
        if (!l || !(l.item_id === row.id || (l.deep && ancestors.includes(l.item_id)))) {
          throw new DomainError('precondition_failed', 'lock_token_mismatch', 'No lock with that token covers this item.');
        }
        if (l.holder.id !== me.id || l.holder.kind !== me.kind) {
          throw new DomainError('forbidden', 'lock_not_yours', 'That lock belongs to someone else.');
        }
        const refreshed = await this.store.refreshLock(q, l.token, seconds);
        const v = await view();
        return { lock: v.locks!.find((x) => x.token === refreshed.token)!, item: v, created: false };
      }
      const below = input.deep ? (await this.store.subtree(q, p.accountId, row.id)).map((r) => r.id).slice(1) : [];
      const existing = (await this.store.locksOn(q, [row.id, ...ancestors, ...below])).filter(
        (l) => l.item_id === row.id || below.includes(l.item_id) || (l.deep && ancestors.includes(l.item_id)),
      );
      if (existing.some((l) => input.scope === 'exclusive' || l.scope === 'exclusive')) {
        throw new DomainError('conflict', 'locked', 'The item is already locked.', { lockedItemId: existing[0]!.item_id });
      }
      const lock = await this.store.insertLock(q, {
        token: `urn:uuid:${randomUUID()}`,
        account_id: p.accountId,
        item_id: row.id,
        scope: input.scope as 'exclusive' | 'shared',
        deep: input.deep && row.kind === 'folder',
        owner_xml: input.ownerXml.slice(0, 4096),
        timeout_seconds: seconds,
        holder: me,
      });
      const v = await view();
      return { lock: v.locks!.find((x) => x.token === lock.token)!, item: v, created };
    }, { onUnique: async () => { throw new DomainError('conflict', 'locked', 'The item is being locked by another request.'); } });
  }

  async unlock(p: Principal, input: { id: string; token: string }): Promise<void> {
    const me = actorOf(p);
    await this.tx(async (q) => {
      const row = await this.visible(q, p, input.id);
      const l = await this.store.lockByToken(q, p.accountId, input.token);
      const ancestors = (await this.ancestry(q, p.accountId, row.id)).ids;
      if (!l || !(l.item_id === row.id || (l.deep && ancestors.includes(l.item_id)))) {
        throw new DomainError('conflict', 'lock_token_mismatch', 'No lock with that token covers this item.');
      }
      if (l.holder.id !== me.id || l.holder.kind !== me.kind) {
        throw new DomainError('forbidden', 'lock_not_yours', 'That lock belongs to someone else.');
      }
      await this.store.deleteLock(q, l.token);
    });
  }

  // Content -----------------------------------------------------------------------------------

  /** The checks a content write can fail before any byte is read (the commit checks again). */
  private async writeTarget(
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
      existing = await this.visible(q, p, h.itemId, lock);
      if (existing.kind !== 'file') throw new DomainError('conflict', 'not_a_file', 'A folder has no content to replace.');
      place = { accountId: p.accountId, projectId: existing.project_id, parentId: existing.parent_id };
      folder = existing.parent_id ? await this.store.byId(q, p.accountId, existing.parent_id) : null;
      name = existing.name;
    } else {
      name = validName(h.name);
      ({ place, folder } = await this.folder(q, p, h.parentId, h.projectId));
      existing = await this.store.byName(q, place, name, { lock });
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
    const inFolder = await this.folderScope(q, p, folder);
    // Replacing a file changes the file; creating one changes its folder's members.
    const scope = existing ? { direct: [existing.id], within: [...inFolder.direct, ...inFolder.within] } : inFolder;
    await this.checkLocks(q, p, h.lockTokens, { ...scope, below: [] });
    return { place, folder, name, existing };
  }

  /**
   * An upload's first step: the write is checked as far as it can be before any byte (who may
   * write, the precondition, a declared size over the limit), and the upload gets a temporary
   * blob key for its bytes (the gateway writes them there). Whatever fails later (a stale
   * precondition, a client gone mid-body, a crash), the version before stays as it was.
   */
  async beginUpload(p: Principal, h: UploadHeader): Promise<{ uploadId: string; blobKey: string; limitBytes: number }> {
    writer(p);
    const limit = this.settings.maxFileBytes;
    if (h.declaredSize !== undefined && h.declaredSize > limit) throw contentTooLarge(limit);
    await this.writeTarget(this.sql, p, h, false);
    const { uploadId, key } = await this.content.begin(p.accountId);
    return { uploadId, blobKey: key, limitBytes: limit };
  }

  /**
   * An upload's last step: its bytes are placed under their SHA-256 and the file's version is
   * swapped in one transaction (the precondition checked again). Whatever the outcome, the upload
   * is over; a blob placed for a commit that lost its race is collected after the grace period.
   */
  async commitUpload(p: Principal, h: UploadHeader, c: UploadCommit): Promise<{ row: ItemRow; created: boolean }> {
    writer(p);
    if (!/^[0-9a-f]{64}$/.test(c.sha256)) throw new DomainError('invalid_argument', 'invalid_request', 'sha256: 64 lowercase hex characters.');
    if (!Number.isSafeInteger(c.size) || c.size < 0) throw new DomainError('invalid_argument', 'invalid_request', 'size: a byte count.');
    if (c.size > this.settings.maxFileBytes) {
      await this.content.abort(p.accountId, c.uploadId);
      throw contentTooLarge(this.settings.maxFileBytes);
    }
    const received = await this.content.received(p.accountId, c.uploadId, c.sha256, c.size);
    try {
      await this.content.place(p.accountId, received, this.settings.graceSeconds);
    } catch (err) {
      await this.content.discard(received.uploadId, received.tmpKey);
      throw err;
    }
    try {
      // The upload ends in the commit's own transaction (one commit fewer: PGlite's cost ~2 ms each).
      return await this.commitContent(p, h, received);
    } catch (err) {
      await this.content.finish(received.uploadId);
      throw err;
    }
  }

  /** Forgets an upload whose bytes did not arrive (a no-op for one already over). */
  async abortUpload(p: Principal, uploadId: string): Promise<void> {
    writer(p);
    await this.content.abort(p.accountId, uploadId);
  }

  private async commitContent(p: Principal, h: UploadHeader, r: Received): Promise<{ row: ItemRow; created: boolean }> {
    const actor = actorOf(p);
    return this.tx(async (q) => {
      await this.store.endUpload(q, r.uploadId);
      const { place, name, existing } = await this.writeTarget(q, p, h, true);
      // A replacement keeps the file's content type unless the writer gives one.
      const contentType = h.contentType || !existing?.content_type ? contentTypeFor(h.contentType, name) : existing.content_type;
      if (existing) {
        const row = await this.store.swapContent(q, existing.id, existing.sha256!, {
          sha256: r.sha256,
          size: r.size,
          contentType,
          actor,
        });
        if (!row) throw stale((await this.store.byId(q, p.accountId, existing.id))!);
        if (existing.sha256 !== r.sha256) await this.store.release(q, p.accountId, [existing.sha256!], this.settings.graceSeconds);
        await this.emit(q, 'drive.file.updated', row, { previousEtag: etagOf(existing) });
        return { row, created: false };
      }
      const row = await this.store.insert(q, {
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
      await this.emit(q, 'drive.file.created', row, {});
      return { row, created: true };
    }, {
      onUnique: async () => {
        // Another writer created the name between our check and our insert: exactly one wins.
        const winner = h.itemId ? null : await this.store.byName(this.sql, (await this.folder(this.sql, p, h.parentId, h.projectId)).place, h.name!);
        if (winner) throw nameTaken(h.ifNoneMatch !== undefined || h.ifMatch !== undefined ? 'precondition_failed' : 'conflict', winner);
        throw new DomainError('precondition_failed', 'precondition_failed', 'The file changed while it was being written.');
      },
      onForeignKey: async () => {
        throw folderNotFound();
      },
    });
  }

  async download(p: Principal, req: DownloadRequest): Promise<DownloadResult> {
    const row = await this.visible(this.sql, p, req.id);
    if (row.kind !== 'file') throw new DomainError('conflict', 'not_a_file', 'A folder has no content to read.');
    const etag = etagOf(row);
    const base = { item: row, notModified: false, partial: false, rangeNotSatisfiable: false, start: 0, end: row.size - 1 };
    if (req.ifNoneMatch !== undefined && !ifNoneMatchPasses(req.ifNoneMatch, etag)) return { ...base, notModified: true };
    let range: { start: number; end: number } | undefined;
    const ranged = req.suffixLength !== undefined || req.rangeStart !== undefined;
    if (ranged && (req.ifRange === undefined || req.ifRange.trim() === etag)) {
      const size = row.size;
      let start: number;
      let end: number;
      if (req.suffixLength !== undefined) {
        start = Math.max(0, size - req.suffixLength);
        end = size - 1;
        if (req.suffixLength === 0) return { ...base, rangeNotSatisfiable: true };
      } else {
        start = req.rangeStart!;
        end = Math.min(req.rangeEnd ?? size - 1, size - 1);
      }
      if (size === 0 || start >= size || start > end) return { ...base, rangeNotSatisfiable: true };
      range = { start, end };
    }
    const out: DownloadResult = range ? { ...base, partial: true, start: range.start, end: range.end } : base;
    if (req.headOnly) return out;
    if (row.size === 0) return out;
    return { ...out, blobKey: contentKey(p.accountId, row.sha256!) };
  }

  /**
   * Collects unreferenced blobs past the grace period, temporary blobs of uploads whose process
   * died (older than a day, so that a slow upload is never collected under itself) and expired
   * locks. `graceSeconds` overrides both periods for this run.
   */
  async collect(graceSeconds?: number): Promise<{ blobs: number; uploads: number; locks: number }> {
    const grace = graceSeconds ?? this.settings.graceSeconds;
    return this.content.collect(grace, this.settings.graceSeconds, graceSeconds ?? Math.max(grace, 86_400));
  }

  // Plumbing ----------------------------------------------------------------------------------

  private async emit(q: Queryable, subject: string, r: ItemRow, extra: Record<string, unknown>): Promise<void> {
    await enqueueEvent(q, SCHEMA, { subject, accountId: r.account_id, data: { ...publicView(r), ...extra } });
  }

  /** A transaction whose unique and foreign-key violations become the caller's domain errors; kicks the outbox after commit. */
  private async tx<T>(
    fn: (q: Queryable) => Promise<T>,
    on: { onUnique?: () => Promise<never>; onForeignKey?: () => Promise<never> } = {},
  ): Promise<T> {
    try {
      const out = await this.sql.tx(fn);
      this.outbox()?.kick();
      return out;
    } catch (err) {
      const state = sqlState(err);
      if (state === '23505' && on.onUnique) return on.onUnique();
      if (state === '23503') {
        if (on.onForeignKey) return on.onForeignKey();
        throw new DomainError('conflict', 'changed_concurrently', 'The drive changed while this was being done; try again.');
      }
      if (state === '40P01' || state === '40001') {
        throw new DomainError('conflict', 'changed_concurrently', 'The drive changed while this was being done; try again.');
      }
      if (!(err instanceof DomainError)) this.log.debug({ err }, 'drive transaction failed');
      throw err;
    }
  }
}
