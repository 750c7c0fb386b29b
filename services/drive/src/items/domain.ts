import { type Blobs, DomainError, enqueueEvent, type Logger, type OutboxRelay, type Principal, type Queryable, type Sql } from '@svc/kit';

import { Content } from './content.js';
import { folderNotFound, notFound } from './errors.js';
import { etagOf, sqlState } from './rules.js';
import { type Actor, DriveStore, type ItemRow, type LockRow, type Place, SCHEMA } from './store.js';
import type { DriveSettings, ItemView } from './types.js';

/** Who did something, as rows and events record it. */
export function actorOf(p: Principal): Actor {
  const id = p.kind === 'human' ? p.userId : p.kind === 'agent' ? p.agentId : p.kind === 'host' ? p.hostId : 'system';
  return { kind: p.kind, id: id ?? p.accountId, keyId: p.keyId ?? null };
}

/** Writes are for people and agents, not hosts. */
export function writer(p: Principal): void {
  if (p.kind === 'host') throw new DomainError('forbidden', 'principal_not_allowed', 'A host credential cannot use the drive.');
}

/** Calls for the platform's own services only (collection, the public sites front). */
export function systemOnly(ctx: { principal: Principal }): void {
  if (ctx.principal.kind !== 'system') {
    throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
  }
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
 *
 * This holds what the operations share (scope, lock checks, full views, transactions and
 * events); the operations themselves are functions of it: reads.ts, tree.ts, properties-locks.ts,
 * uploads.ts, download.ts.
 */
export class DriveDomain {
  readonly store: DriveStore;
  readonly content: Content;

  constructor(
    readonly sql: Sql,
    readonly blobs: Blobs,
    readonly settings: DriveSettings,
    private readonly outbox: () => OutboxRelay | undefined,
    readonly log: Logger,
  ) {
    this.store = new DriveStore(sql);
    this.content = new Content(blobs, this.store, log);
  }

  // Scope -------------------------------------------------------------------------------------

  sees(p: Principal, r: ItemRow | null): r is ItemRow {
    return !!r && r.account_id === p.accountId && (!p.projectId || r.project_id === p.projectId);
  }

  /** The drive a root-level call works in: the key's project, or the one an unscoped key names. */
  rootProject(p: Principal, requested: string | undefined): string | null {
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

  /** An item the caller sees, else not found. */
  async visible(q: Queryable, p: Principal, id: string, lock = false): Promise<ItemRow> {
    const r = await this.store.byId(q, p.accountId, id, { lock });
    if (!this.sees(p, r)) throw notFound();
    return r;
  }

  /** The folder to work in (absent or "": the root of the caller's drive). */
  async folder(
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
   * Fails with conflict/locked unless every item lock protecting this change has one of its
   * tokens submitted by its holder. `direct`: items changed (or whose membership changes);
   * `within`: their ancestors (only depth-infinity locks count); `below`: items under them.
   */
  async checkLocks(q: Queryable, p: Principal, tokens: string[], scope: { direct: string[]; within: string[]; below: string[] }): Promise<void> {
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
  async ancestry(q: Queryable, accountId: string, id: string): Promise<{ ids: string[]; path: string }> {
    const chain = await this.store.chain(q, accountId, id);
    return { ids: chain.slice(0, -1).map((r) => r.id), path: chain.map((r) => r.name).join('/') };
  }

  /** The items whose locks guard a change of a folder's members: the folder, and its ancestors (deep locks). */
  async folderScope(q: Queryable, p: Principal, folder: ItemRow | null): Promise<{ direct: string[]; within: string[] }> {
    if (!folder) return { direct: [], within: [] };
    return { direct: [folder.id], within: (await this.ancestry(q, p.accountId, folder.id)).ids };
  }

  /** An item with its path, the locks covering it (its own and its folders' deep locks) and its custom properties. */
  async fullView(q: Queryable, p: Principal, row: ItemRow): Promise<ItemView> {
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
    const locks = (
      await this.store.locksOn(
        q,
        chain.map((r) => r.id),
      )
    )
      .filter((l) => l.item_id === row.id || l.deep)
      .map((l) => ({ ...l, rootPath: paths.get(l.item_id)! }));
    return { row, path: paths.get(row.id)!, locks, props: await this.store.props(q, [row.id]) };
  }

  // Plumbing ----------------------------------------------------------------------------------

  /** Enqueues a domain event about an item in the transaction (the outbox relay publishes it). */
  async emit(q: Queryable, subject: string, r: ItemRow, extra: Record<string, unknown>): Promise<void> {
    await enqueueEvent(q, SCHEMA, { subject, accountId: r.account_id, data: { ...publicView(r), ...extra } });
  }

  /** A transaction whose unique and foreign-key violations become the caller's domain errors; kicks the outbox after commit. */
  async tx<T>(fn: (q: Queryable) => Promise<T>, on: { onUnique?: () => Promise<never>; onForeignKey?: () => Promise<never> } = {}): Promise<T> {
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

  /**
   * Collects unreferenced blobs past the grace period, temporary blobs of uploads whose process
   * died (older than a day, so that a slow upload is never collected under itself) and expired
   * locks; and, beyond each account's version quota, released content within its grace period
   * (docs/drive.md, "Quotas"). `graceSeconds` overrides both periods for this run.
   */
  async collect(graceSeconds?: number): Promise<{ blobs: number; uploads: number; locks: number }> {
    const grace = graceSeconds ?? this.settings.graceSeconds;
    return this.content.collect(grace, this.settings.graceSeconds, graceSeconds ?? Math.max(grace, 86_400), this.settings.quotas.bytesVersions);
  }
}
