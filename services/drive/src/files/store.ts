/** SQL of the file tools: subtrees with paths, recent files, sizes, versions and tags. */
import type { Queryable } from '@svc/kit';

import type { Actor, ItemRow } from '../items/store.js';

const COLUMNS = `id, account_id, project_id, parent_id, name, kind, size, content_type, sha256, version,
  created_at, updated_at, created_by, updated_by`;
const I_COLUMNS = COLUMNS.split(',')
  .map((c) => `i.${c.trim()}`)
  .join(', ');

const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

export function revive(r: ItemRow): ItemRow {
  return { ...r, size: Number(r.size), version: Number(r.version), created_by: json<Actor>(r.created_by), updated_by: json<Actor>(r.updated_by) };
}

export interface PathRow extends ItemRow {
  path: string;
  depth: number;
}

export interface VersionRow {
  id: string;
  item_id: string;
  account_id: string;
  sha256: string;
  size: number;
  content_type: string;
  written_at: Date;
  written_by: Actor;
  replaced_at: Date;
}

const reviveVersion = (v: VersionRow): VersionRow => ({ ...v, size: Number(v.size), written_by: json<Actor>(v.written_by) });

/** Where a walk starts: a folder, or the root of a drive (account and project). */
export type Start = { folderId: string } | { accountId: string; projectId: string | null };

export class FilesStore {
  /**
   * Everything under a folder (or a drive root), with each item's path relative to it and its
   * depth (1: a member), breadth first, names in byte order; at most `limit` rows, `maxDepth` deep.
   * `only` keeps the rows whose name matches a LIKE pattern (case-insensitive, `\` escapes), of a
   * kind, and (files) of at most a size.
   */
  async walk(
    q: Queryable,
    accountId: string,
    start: Start,
    maxDepth: number,
    limit: number,
    only: { nameLike?: string; kind?: 'file' | 'folder'; maxSize?: number } = {},
  ): Promise<PathRow[]> {
    const params: unknown[] = [accountId, maxDepth, limit];
    const seed =
      'folderId' in start
        ? `parent_id = $${params.push(start.folderId)}`
        : `parent_id IS NULL AND COALESCE(project_id, '') = $${params.push(start.projectId ?? '')}`;
    const filters: string[] = [];
    if (only.nameLike !== undefined) filters.push(`name ILIKE $${params.push(only.nameLike)} ESCAPE '\\'`);
    if (only.kind) filters.push(`kind = $${params.push(only.kind)}`);
    if (only.maxSize !== undefined) filters.push(`size <= $${params.push(only.maxSize)}`);
    const rows = await q.query<PathRow>(
      `WITH RECURSIVE tree AS (
         SELECT ${COLUMNS}, name::text AS path, 1 AS depth FROM drive.items WHERE account_id = $1 AND ${seed}
         UNION ALL
         SELECT ${I_COLUMNS}, t.path || '/' || i.name, t.depth + 1
           FROM drive.items i JOIN tree t ON i.parent_id = t.id WHERE t.depth < $2
       ) SELECT * FROM tree ${filters.length ? `WHERE ${filters.join(' AND ')}` : ''} ORDER BY depth, path COLLATE "C" LIMIT $3`,
      params,
    );
    return rows.map((r) => ({ ...revive(r), path: r.path, depth: Number(r.depth) }));
  }

  /** A drive's files, the most recently written first. */
  async recent(
    q: Queryable,
    accountId: string,
    projectId: string | null,
    after: { at: Date; id: string } | undefined,
    limit: number,
  ): Promise<ItemRow[]> {
    const params: unknown[] = [accountId, projectId ?? '', limit];
    const cursor = after ? `AND (updated_at, id) < ($${params.push(after.at)}::timestamptz, $${params.push(after.id)})` : '';
    const rows = await q.query<ItemRow>(
      `SELECT ${COLUMNS} FROM drive.items WHERE account_id = $1 AND COALESCE(project_id, '') = $2 AND kind = 'file' ${cursor}
        ORDER BY updated_at DESC, id DESC LIMIT $3`,
      params,
    );
    return rows.map(revive);
  }

  /** Files, folders and bytes under a folder, however deep. */
  async size(q: Queryable, accountId: string, folderId: string): Promise<{ files: number; folders: number; bytes: number }> {
    const rows = await q.query<{ files: string; folders: string; bytes: string }>(
      `WITH RECURSIVE tree AS (
         SELECT id, kind, size FROM drive.items WHERE account_id = $1 AND parent_id = $2
         UNION ALL SELECT i.id, i.kind, i.size FROM drive.items i JOIN tree t ON i.parent_id = t.id
       ) SELECT count(*) FILTER (WHERE kind = 'file') AS files, count(*) FILTER (WHERE kind = 'folder') AS folders,
                COALESCE(sum(size) FILTER (WHERE kind = 'file'), 0) AS bytes FROM tree`,
      [accountId, folderId],
    );
    const r = rows[0]!;
    return { files: Number(r.files), folders: Number(r.folders), bytes: Number(r.bytes) };
  }

  /** What a drive holds, by content type; `projectId` undefined: every drive of the account. */
  async usage(q: Queryable, accountId: string, projectId: string | null | undefined) {
    const params: unknown[] = [accountId];
    const scope = projectId === undefined ? '' : `AND COALESCE(project_id, '') = $${params.push(projectId ?? '')}`;
    const totals = await q.query<{ files: string; folders: string; bytes: string; stored: string }>(
      `SELECT count(*) FILTER (WHERE kind = 'file') AS files, count(*) FILTER (WHERE kind = 'folder') AS folders,
              COALESCE(sum(size) FILTER (WHERE kind = 'file'), 0) AS bytes,
              (SELECT COALESCE(sum(s), 0) FROM (SELECT DISTINCT sha256, size AS s FROM drive.items
                WHERE account_id = $1 AND kind = 'file' ${scope}) d) AS stored
         FROM drive.items WHERE account_id = $1 ${scope}`,
      params,
    );
    const byType = await q.query<{ content_type: string; files: string; bytes: string }>(
      `SELECT COALESCE(content_type, 'application/octet-stream') AS content_type, count(*) AS files, sum(size) AS bytes
         FROM drive.items WHERE account_id = $1 AND kind = 'file' ${scope}
        GROUP BY 1 ORDER BY sum(size) DESC, 1 LIMIT 50`,
      params,
    );
    const versions = await q.query<{ n: string; bytes: string }>(
      `SELECT count(*) AS n, COALESCE(sum(v.size), 0) AS bytes FROM drive.versions v JOIN drive.items i ON i.id = v.item_id
        WHERE v.account_id = $1 ${scope.replace('project_id', 'i.project_id')}`,
      params,
    );
    const t = totals[0]!;
    return {
      files: Number(t.files),
      folders: Number(t.folders),
      bytes: Number(t.bytes),
      storedBytes: Number(t.stored),
      versions: Number(versions[0]!.n),
      versionBytes: Number(versions[0]!.bytes),
      byType: byType.map((r) => ({ contentType: r.content_type, files: Number(r.files), bytes: Number(r.bytes) })),
    };
  }

  /** Contents held by more than one file of a drive (largest waste first), with the files. */
  async duplicates(q: Queryable, accountId: string, projectId: string | null, minSize: number, limit: number) {
    const groups = await q.query<{ sha256: string; size: string; ids: string[] }>(
      `SELECT sha256, max(size) AS size, array_agg(id ORDER BY created_at, id) AS ids FROM drive.items
        WHERE account_id = $1 AND COALESCE(project_id, '') = $2 AND kind = 'file' AND size >= $3
        GROUP BY sha256 HAVING count(*) > 1 ORDER BY max(size) * (count(*) - 1) DESC, sha256 LIMIT $4`,
      [accountId, projectId ?? '', minSize, limit],
    );
    return groups.map((g) => ({ sha256: g.sha256, size: Number(g.size), ids: g.ids }));
  }

  // Versions --------------------------------------------------------------------------------

  /** Keeps the content a write replaced; a file keeps its latest `keep` versions. Answers the shas of versions dropped. */
  async keepVersion(q: Queryable, id: string, old: ItemRow, keep: number): Promise<string[]> {
    await q.query(
      `INSERT INTO drive.versions (id, item_id, account_id, sha256, size, content_type, written_at, written_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        id,
        old.id,
        old.account_id,
        old.sha256,
        old.size,
        old.content_type ?? 'application/octet-stream',
        old.updated_at,
        JSON.stringify(old.updated_by),
      ],
    );
    const dropped = await q.query<{ sha256: string }>(
      `DELETE FROM drive.versions WHERE item_id = $1 AND id NOT IN
         (SELECT id FROM drive.versions WHERE item_id = $1 ORDER BY id DESC LIMIT $2) RETURNING sha256`,
      [old.id, keep],
    );
    return dropped.map((d) => d.sha256);
  }

  async versions(q: Queryable, itemId: string, before: string | undefined, limit: number): Promise<VersionRow[]> {
    const rows = await q.query<VersionRow>(
      `SELECT * FROM drive.versions WHERE item_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [itemId, before ?? null, limit],
    );
    return rows.map(reviveVersion);
  }

  async version(q: Queryable, itemId: string, id: string): Promise<VersionRow | null> {
    const rows = await q.query<VersionRow>(`SELECT * FROM drive.versions WHERE item_id = $1 AND id = $2`, [itemId, id]);
    return rows[0] ? reviveVersion(rows[0]) : null;
  }

  async deleteVersion(q: Queryable, itemId: string, id: string): Promise<void> {
    await q.query(`DELETE FROM drive.versions WHERE item_id = $1 AND id = $2`, [itemId, id]);
  }

  // Tags ------------------------------------------------------------------------------------

  async tags(q: Queryable, itemId: string): Promise<string[]> {
    const rows = await q.query<{ tag: string }>(`SELECT tag FROM drive.tags WHERE item_id = $1 ORDER BY tag`, [itemId]);
    return rows.map((r) => r.tag);
  }

  async addTags(q: Queryable, accountId: string, itemId: string, tags: string[]): Promise<void> {
    if (!tags.length) return;
    await q.query(`INSERT INTO drive.tags (item_id, account_id, tag) SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`, [
      itemId,
      accountId,
      tags,
    ]);
  }

  async removeTags(q: Queryable, itemId: string, tags: string[] | 'all'): Promise<void> {
    if (tags === 'all') await q.query(`DELETE FROM drive.tags WHERE item_id = $1`, [itemId]);
    else if (tags.length) await q.query(`DELETE FROM drive.tags WHERE item_id = $1 AND tag = ANY($2::text[])`, [itemId, tags]);
  }

  async tagCounts(q: Queryable, accountId: string, projectId: string | null | undefined): Promise<Array<{ tag: string; items: number }>> {
    const params: unknown[] = [accountId];
    const scope = projectId === undefined ? '' : `AND COALESCE(i.project_id, '') = $${params.push(projectId ?? '')}`;
    const rows = await q.query<{ tag: string; n: string }>(
      `SELECT t.tag, count(*) AS n FROM drive.tags t JOIN drive.items i ON i.id = t.item_id
        WHERE t.account_id = $1 ${scope} GROUP BY t.tag ORDER BY t.tag LIMIT 1000`,
      params,
    );
    return rows.map((r) => ({ tag: r.tag, items: Number(r.n) }));
  }

  async tagged(
    q: Queryable,
    accountId: string,
    projectId: string | null | undefined,
    tag: string,
    after: string | undefined,
    limit: number,
  ): Promise<ItemRow[]> {
    const params: unknown[] = [accountId, tag, after ?? '', limit];
    const scope = projectId === undefined ? '' : `AND COALESCE(i.project_id, '') = $${params.push(projectId ?? '')}`;
    const rows = await q.query<ItemRow>(
      `SELECT ${I_COLUMNS} FROM drive.tags t JOIN drive.items i ON i.id = t.item_id
        WHERE t.account_id = $1 AND t.tag = $2 AND i.id > $3 ${scope} ORDER BY i.id LIMIT $4`,
      params,
    );
    return rows.map(revive);
  }
}
