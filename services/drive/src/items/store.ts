import type { Queryable, Sql } from '@svc/kit';

export const SCHEMA = 'drive';

/** Who did something: a person or an agent (or the platform), and with which key. */
export interface Actor {
  kind: string;
  id: string;
  keyId?: string | null;
}

export interface ItemRow {
  id: string;
  account_id: string;
  project_id: string | null;
  parent_id: string | null;
  name: string;
  kind: 'file' | 'folder';
  size: number;
  content_type: string | null;
  sha256: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
  created_by: Actor;
  updated_by: Actor;
}

export interface LockRow {
  token: string;
  account_id: string;
  item_id: string;
  scope: 'exclusive' | 'shared';
  deep: boolean;
  owner_xml: string;
  timeout_seconds: number;
  expires_at: Date;
  holder: Actor;
}

export interface PropRow {
  item_id: string;
  ns: string;
  name: string;
  xml: string;
}

/** Where an item lives: the drive (account and project) and the folder (null: the root). */
export interface Place {
  accountId: string;
  projectId: string | null;
  parentId: string | null;
}

const COLUMNS = `id, account_id, project_id, parent_id, name, kind, size, content_type, sha256, version,
  created_at, updated_at, created_by, updated_by`;
/** The same columns of `drive.items i`, for a statement that joins the item with another table. */
const ITEM_COLUMNS_OF_I = COLUMNS.split(',')
  .map((c) => `i.${c.trim()}`)
  .join(', ');

const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

function revive(r: ItemRow): ItemRow {
  return {
    ...r,
    size: Number(r.size),
    version: Number(r.version),
    created_by: json<Actor>(r.created_by),
    updated_by: json<Actor>(r.updated_by),
  };
}

function reviveLock(r: LockRow): LockRow {
  return { ...r, timeout_seconds: Number(r.timeout_seconds), holder: json<Actor>(r.holder) };
}

/** A listing position: folders first, then names in byte order, then ids. */
export interface ListPosition {
  rank: number;
  name: string;
  id: string;
}

/** Holds an account's blob (a row for the collector) until `$4` seconds from now; $1 account, $2 sha256, $3 size, $5 CRC-32. */
const HOLD = `INSERT INTO drive.blobs (account_id, sha256, size, held_until, crc32) VALUES ($1, $2, $3, now() + make_interval(secs => $4), $5)
  ON CONFLICT (account_id, sha256) DO UPDATE SET held_until = GREATEST(drive.blobs.held_until, EXCLUDED.held_until), released_at = NULL,
    crc32 = COALESCE(drive.blobs.crc32, EXCLUDED.crc32)`;

/** SQL for items, blobs, uploads, properties and locks. Rules live in drive.ts. */
export class DriveStore {
  constructor(readonly sql: Sql) {}

  // Items -----------------------------------------------------------------------------------

  async byId(q: Queryable, accountId: string, id: string, opts: { lock?: boolean } = {}): Promise<ItemRow | null> {
    const rows = await q.query<ItemRow>(`SELECT ${COLUMNS} FROM drive.items WHERE id = $1 AND account_id = $2${opts.lock ? ' FOR UPDATE' : ''}`, [
      id,
      accountId,
    ]);
    return rows[0] ? revive(rows[0]) : null;
  }

  async byName(q: Queryable, place: Place, name: string, opts: { lock?: boolean } = {}): Promise<ItemRow | null> {
    const rows = await q.query<ItemRow>(
      `SELECT ${COLUMNS} FROM drive.items
        WHERE account_id = $1 AND COALESCE(project_id, '') = $2 AND COALESCE(parent_id, '') = $3 AND name = $4
        ${opts.lock ? 'FOR UPDATE' : ''}`,
      [place.accountId, place.projectId ?? '', place.parentId ?? '', name],
    );
    return rows[0] ? revive(rows[0]) : null;
  }

  async children(q: Queryable, place: Place, after: ListPosition | undefined, limit: number): Promise<ItemRow[]> {
    const params: unknown[] = [place.accountId, place.projectId ?? '', place.parentId ?? ''];
    let where = `account_id = $1 AND COALESCE(project_id, '') = $2 AND COALESCE(parent_id, '') = $3`;
    if (after) {
      where += ` AND (CASE WHEN kind = 'folder' THEN 0 ELSE 1 END, name COLLATE "C", id)
                   > ($${params.push(after.rank)}::int, $${params.push(after.name)} COLLATE "C", $${params.push(after.id)})`;
    }
    params.push(limit);
    const rows = await q.query<ItemRow>(
      `SELECT ${COLUMNS} FROM drive.items WHERE ${where}
        ORDER BY CASE WHEN kind = 'folder' THEN 0 ELSE 1 END, name COLLATE "C", id LIMIT $${params.length}`,
      params,
    );
    return rows.map(revive);
  }

  async hasChildren(q: Queryable, id: string): Promise<boolean> {
    const rows = await q.query(`SELECT 1 FROM drive.items WHERE parent_id = $1 LIMIT 1`, [id]);
    return rows.length > 0;
  }

  /** The item and its ancestors, the root-most first. */
  async chain(q: Queryable, accountId: string, id: string): Promise<ItemRow[]> {
    const rows = await q.query<ItemRow & { depth: number }>(
      `WITH RECURSIVE chain AS (
         SELECT ${COLUMNS}, 0 AS depth FROM drive.items WHERE id = $1 AND account_id = $2
         UNION ALL
         SELECT ${COLUMNS.split(',')
           .map((c) => `i.${c.trim()}`)
           .join(', ')}, c.depth + 1
           FROM drive.items i JOIN chain c ON i.id = c.parent_id WHERE c.depth < 10000
       ) SELECT * FROM chain ORDER BY depth DESC`,
      [id, accountId],
    );
    return rows.map(revive);
  }

  /** The item and everything under it, parents before their members. */
  async subtree(q: Queryable, accountId: string, id: string): Promise<Array<ItemRow & { depth: number }>> {
    const rows = await q.query<ItemRow & { depth: number }>(
      `WITH RECURSIVE tree AS (
         SELECT ${COLUMNS}, 0 AS depth FROM drive.items WHERE id = $1 AND account_id = $2
         UNION ALL
         SELECT ${COLUMNS.split(',')
           .map((c) => `i.${c.trim()}`)
           .join(', ')}, t.depth + 1
           FROM drive.items i JOIN tree t ON i.parent_id = t.id WHERE t.depth < 10000
       ) SELECT * FROM tree ORDER BY depth, id`,
      [id, accountId],
    );
    return rows.map((r) => ({ ...revive(r), depth: Number(r.depth) }));
  }

  async insert(q: Queryable, r: Omit<ItemRow, 'version' | 'created_at' | 'updated_at'>): Promise<ItemRow> {
    const rows = await q.query<ItemRow>(
      `INSERT INTO drive.items (id, account_id, project_id, parent_id, name, kind, size, content_type, sha256, created_by, updated_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${COLUMNS}`,
      [
        r.id,
        r.account_id,
        r.project_id,
        r.parent_id,
        r.name,
        r.kind,
        r.size,
        r.content_type,
        r.sha256,
        JSON.stringify(r.created_by),
        JSON.stringify(r.updated_by),
      ],
    );
    return revive(rows[0]!);
  }

  /**
   * The compare-and-swap of a content write: replaces the content only if it is still `expected`.
   * Null when another writer got there first.
   */
  async swapContent(
    q: Queryable,
    id: string,
    expected: string,
    next: { sha256: string; size: number; contentType: string; actor: Actor },
  ): Promise<ItemRow | null> {
    const rows = await q.query<ItemRow>(
      `UPDATE drive.items
          SET sha256 = $3, size = $4, content_type = $5, updated_by = $6, updated_at = now(), version = version + 1
        WHERE id = $1 AND sha256 = $2 RETURNING ${COLUMNS}`,
      [id, expected, next.sha256, next.size, next.contentType, JSON.stringify(next.actor)],
    );
    return rows[0] ? revive(rows[0]) : null;
  }

  async relocate(q: Queryable, id: string, to: { parentId: string | null; name: string; actor: Actor }): Promise<ItemRow> {
    const rows = await q.query<ItemRow>(
      `UPDATE drive.items SET parent_id = $2, name = $3, updated_by = $4, updated_at = now(), version = version + 1
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, to.parentId, to.name, JSON.stringify(to.actor)],
    );
    return revive(rows[0]!);
  }

  async touch(q: Queryable, id: string, actor: Actor): Promise<ItemRow> {
    const rows = await q.query<ItemRow>(
      `UPDATE drive.items SET updated_by = $2, updated_at = now(), version = version + 1 WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, JSON.stringify(actor)],
    );
    return revive(rows[0]!);
  }

  /** Deletes items (members before their folders, in one statement). */
  async remove(q: Queryable, ids: string[]): Promise<void> {
    if (ids.length) await q.query(`DELETE FROM drive.items WHERE id = ANY($1::text[])`, [ids]);
  }

  // Blobs -----------------------------------------------------------------------------------

  /**
   * Keeps a blob from collection for at least `seconds` from now (creating its row; no longer
   * replaced content). `crc32`, when the caller computed it from the bytes, fills in a row that
   * has none (content stored before checksums were kept); one that has one keeps it.
   */
  async hold(q: Queryable, accountId: string, sha256: string, size: number, seconds: number, crc32?: number): Promise<void> {
    await q.query(HOLD, [accountId, sha256, size, seconds, crc32 ?? null]);
  }

  /**
   * Marks the content upload `uploadId` is placing and holds its blob, in one statement (atomic
   * on its own: one round trip where a transaction of two statements took four).
   */
  async placeAndHold(
    q: Queryable,
    uploadId: string,
    accountId: string,
    sha256: string,
    size: number,
    seconds: number,
    crc32?: number,
  ): Promise<void> {
    await q.query(`WITH marked AS (UPDATE drive.uploads SET sha256 = $2 WHERE id = $6) ${HOLD}`, [
      accountId,
      sha256,
      size,
      seconds,
      crc32 ?? null,
      uploadId,
    ]);
  }

  /**
   * An item with the CRC-32 kept with its content's blob (null: a folder, or content stored
   * without one), in one statement: what a read needs.
   */
  async byIdWithCrc32(q: Queryable, accountId: string, id: string): Promise<(ItemRow & { crc32: number | null }) | null> {
    const rows = await q.query<ItemRow & { crc32: string | number | null }>(
      `SELECT ${ITEM_COLUMNS_OF_I}, b.crc32
         FROM drive.items i LEFT JOIN drive.blobs b ON b.account_id = i.account_id AND b.sha256 = i.sha256
        WHERE i.id = $1 AND i.account_id = $2`,
      [id, accountId],
    );
    const r = rows[0];
    return r ? { ...revive(r), crc32: r.crc32 === null ? null : Number(r.crc32) } : null;
  }

  /**
   * Starts the grace period of blobs that may have lost their last reference (replaced content:
   * over the account's version quota it is collected before its grace period ends, quotas/).
   */
  async release(q: Queryable, accountId: string, shas: string[], seconds: number): Promise<void> {
    if (!shas.length) return;
    await q.query(
      `UPDATE drive.blobs SET held_until = GREATEST(held_until, now() + make_interval(secs => $3)), released_at = now()
        WHERE account_id = $1 AND sha256 = ANY($2::text[])`,
      [accountId, shas, seconds],
    );
  }

  /**
   * Blobs past their hold that no item, open upload or site deployment references, locked for removal. `earlierBy` shortens
   * every hold by that many seconds (a collection run with a shorter grace period).
   */
  async collectable(q: Queryable, limit: number, earlierBy = 0): Promise<Array<{ account_id: string; sha256: string }>> {
    return q.query(
      `SELECT b.account_id, b.sha256 FROM drive.blobs b
        WHERE b.held_until < now() + make_interval(secs => $2)
          AND NOT EXISTS (SELECT 1 FROM drive.items i WHERE i.account_id = b.account_id AND i.sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM drive.uploads u WHERE u.account_id = b.account_id AND u.sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM drive.site_files f WHERE f.account_id = b.account_id AND f.sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM drive.versions v WHERE v.account_id = b.account_id AND v.sha256 = b.sha256)
        ORDER BY b.held_until LIMIT $1 FOR UPDATE OF b SKIP LOCKED`,
      [limit, earlierBy],
    );
  }

  async forgetBlob(q: Queryable, accountId: string, sha256: string): Promise<void> {
    await q.query(`DELETE FROM drive.blobs WHERE account_id = $1 AND sha256 = $2`, [accountId, sha256]);
  }

  async blobSize(q: Queryable, accountId: string, sha256: string): Promise<number | null> {
    const rows = await q.query<{ size: number }>(`SELECT size FROM drive.blobs WHERE account_id = $1 AND sha256 = $2`, [accountId, sha256]);
    return rows[0] ? Number(rows[0].size) : null;
  }

  // Uploads ---------------------------------------------------------------------------------

  async startUpload(id: string, accountId: string, tmpKey: string): Promise<void> {
    await this.sql.query(`INSERT INTO drive.uploads (id, account_id, tmp_key) VALUES ($1, $2, $3)`, [id, accountId, tmpKey]);
  }

  async upload(id: string): Promise<{ account_id: string; tmp_key: string } | null> {
    const r = await this.sql.query<{ account_id: string; tmp_key: string }>(`SELECT account_id, tmp_key FROM drive.uploads WHERE id = $1`, [id]);
    return r[0] ?? null;
  }

  async endUpload(q: Queryable, id: string): Promise<void> {
    await q.query(`DELETE FROM drive.uploads WHERE id = $1`, [id]);
  }

  /** Uploads started before the grace period that never finished (their process died). */
  async staleUploads(q: Queryable, seconds: number, limit: number): Promise<Array<{ id: string; tmp_key: string }>> {
    return q.query(
      `SELECT id, tmp_key FROM drive.uploads WHERE started_at < now() - make_interval(secs => $1)
        ORDER BY started_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [seconds, limit],
    );
  }

  // Properties ------------------------------------------------------------------------------

  async props(q: Queryable, ids: string[]): Promise<PropRow[]> {
    if (!ids.length) return [];
    return q.query<PropRow>(`SELECT item_id, ns, name, xml FROM drive.props WHERE item_id = ANY($1::text[]) ORDER BY ns, name`, [ids]);
  }

  async setProp(q: Queryable, id: string, p: { ns: string; name: string; xml: string }): Promise<void> {
    await q.query(
      `INSERT INTO drive.props (item_id, ns, name, xml) VALUES ($1, $2, $3, $4)
       ON CONFLICT (item_id, ns, name) DO UPDATE SET xml = EXCLUDED.xml`,
      [id, p.ns, p.name, p.xml],
    );
  }

  async removeProp(q: Queryable, id: string, ns: string, name: string): Promise<void> {
    await q.query(`DELETE FROM drive.props WHERE item_id = $1 AND ns = $2 AND name = $3`, [id, ns, name]);
  }

  async copyProps(q: Queryable, from: string, to: string): Promise<void> {
    await q.query(`INSERT INTO drive.props (item_id, ns, name, xml) SELECT $2, ns, name, xml FROM drive.props WHERE item_id = $1`, [from, to]);
  }

  // Locks -----------------------------------------------------------------------------------

  /** Unexpired locks rooted at any of these items. */
  async locksOn(q: Queryable, ids: string[]): Promise<LockRow[]> {
    if (!ids.length) return [];
    const rows = await q.query<LockRow>(
      `SELECT token, account_id, item_id, scope, deep, owner_xml, timeout_seconds, expires_at, holder
         FROM drive.locks WHERE item_id = ANY($1::text[]) AND expires_at > now() ORDER BY created_at`,
      [ids],
    );
    return rows.map(reviveLock);
  }

  async lockByToken(q: Queryable, accountId: string, token: string): Promise<LockRow | null> {
    const rows = await q.query<LockRow>(
      `SELECT token, account_id, item_id, scope, deep, owner_xml, timeout_seconds, expires_at, holder
         FROM drive.locks WHERE token = $1 AND account_id = $2 AND expires_at > now()`,
      [token, accountId],
    );
    return rows[0] ? reviveLock(rows[0]) : null;
  }

  async insertLock(q: Queryable, l: Omit<LockRow, 'expires_at'>): Promise<LockRow> {
    const rows = await q.query<LockRow>(
      `INSERT INTO drive.locks (token, account_id, item_id, scope, deep, owner_xml, timeout_seconds, expires_at, holder)
       VALUES ($1, $2, $3, $4, $5, $6, $7::int, now() + make_interval(secs => $7::int), $8)
       RETURNING token, account_id, item_id, scope, deep, owner_xml, timeout_seconds, expires_at, holder`,
      [l.token, l.account_id, l.item_id, l.scope, l.deep, l.owner_xml, l.timeout_seconds, JSON.stringify(l.holder)],
    );
    return reviveLock(rows[0]!);
  }

  async refreshLock(q: Queryable, token: string, seconds: number): Promise<LockRow> {
    const rows = await q.query<LockRow>(
      `UPDATE drive.locks SET timeout_seconds = $2::int, expires_at = now() + make_interval(secs => $2::int) WHERE token = $1
       RETURNING token, account_id, item_id, scope, deep, owner_xml, timeout_seconds, expires_at, holder`,
      [token, seconds],
    );
    return reviveLock(rows[0]!);
  }

  async deleteLock(q: Queryable, token: string): Promise<void> {
    await q.query(`DELETE FROM drive.locks WHERE token = $1`, [token]);
  }

  async deleteLocksOn(q: Queryable, ids: string[]): Promise<void> {
    if (ids.length) await q.query(`DELETE FROM drive.locks WHERE item_id = ANY($1::text[])`, [ids]);
  }

  async deleteExpiredLocks(q: Queryable): Promise<number> {
    const rows = await q.query(`DELETE FROM drive.locks WHERE expires_at <= now() RETURNING token`);
    return rows.length;
  }
}
