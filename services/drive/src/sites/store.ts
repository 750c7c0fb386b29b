/** SQL for sites, their deployments and their manifests. Rules live in sites.ts and deploy.ts. */
import type { Queryable } from '@svc/kit';

import type { Actor } from '../items/store.js';

export interface SiteRow {
  id: string;
  account_id: string;
  project_id: string | null;
  slug: string;
  title: string;
  current_deployment_id: string | null;
  created_at: Date;
  updated_at: Date;
  created_by: Actor;
  spa_fallback: boolean;
}

export interface DeploymentRow {
  id: string;
  site_id: string;
  account_id: string;
  digest: string;
  file_count: number;
  total_bytes: number;
  source: 'folder' | 'files' | 'archive';
  folder_id: string | null;
  created_at: Date;
  created_by: Actor;
}

export interface SiteFileRow {
  path: string;
  sha256: string;
  size: number;
  content_type: string;
  /** The content's CRC-32 (its blob's), where read (lookup): null when stored without one. */
  crc32?: number | null;
}

export const SITE = `id, account_id, project_id, slug, title, current_deployment_id, created_at, updated_at, created_by, spa_fallback`;
const DEPLOYMENT = `id, site_id, account_id, digest, file_count, total_bytes, source, folder_id, created_at, created_by`;

const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));
export const site = (r: SiteRow): SiteRow => ({ ...r, created_by: json<Actor>(r.created_by) });
const deployment = (r: DeploymentRow): DeploymentRow => ({
  ...r,
  file_count: Number(r.file_count),
  total_bytes: Number(r.total_bytes),
  created_by: json<Actor>(r.created_by),
});
export const file = (r: SiteFileRow): SiteFileRow => ({
  ...r,
  size: Number(r.size),
  ...(r.crc32 === undefined ? {} : { crc32: r.crc32 === null ? null : Number(r.crc32) }),
});

export class SitesStore {
  // Sites -------------------------------------------------------------------------------------

  async insertSite(q: Queryable, r: Pick<SiteRow, 'id' | 'account_id' | 'project_id' | 'slug' | 'title' | 'created_by'>): Promise<SiteRow> {
    const rows = await q.query<SiteRow>(
      `INSERT INTO drive.sites (id, account_id, project_id, slug, title, created_by) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${SITE}`,
      [r.id, r.account_id, r.project_id, r.slug, r.title, JSON.stringify(r.created_by)],
    );
    return site(rows[0]!);
  }

  async siteById(q: Queryable, accountId: string, id: string, opts: { lock?: boolean } = {}): Promise<SiteRow | null> {
    const rows = await q.query<SiteRow>(`SELECT ${SITE} FROM drive.sites WHERE id = $1 AND account_id = $2${opts.lock ? ' FOR UPDATE' : ''}`, [
      id,
      accountId,
    ]);
    return rows[0] ? site(rows[0]) : null;
  }

  async siteBySlug(q: Queryable, slug: string): Promise<SiteRow | null> {
    const rows = await q.query<SiteRow>(`SELECT ${SITE} FROM drive.sites WHERE slug = $1`, [slug]);
    return rows[0] ? site(rows[0]) : null;
  }

  /** An account's sites (a project's only, when `projectId`), oldest first, after the cursor's id. */
  async sites(q: Queryable, accountId: string, projectId: string | null, after: string | undefined, limit: number): Promise<SiteRow[]> {
    const rows = await q.query<SiteRow>(
      `SELECT ${SITE} FROM drive.sites
        WHERE account_id = $1 AND ($2::text IS NULL OR project_id = $2) AND ($3::text IS NULL OR id > $3)
        ORDER BY id LIMIT $4`,
      [accountId, projectId, after ?? null, limit],
    );
    return rows.map(site);
  }

  async pointAt(q: Queryable, siteId: string, deploymentId: string): Promise<SiteRow> {
    const rows = await q.query<SiteRow>(`UPDATE drive.sites SET current_deployment_id = $2, updated_at = now() WHERE id = $1 RETURNING ${SITE}`, [
      siteId,
      deploymentId,
    ]);
    return site(rows[0]!);
  }

  /** Deletes a site with its deployments and manifests; answers the content its files referenced. */
  async deleteSite(q: Queryable, siteId: string): Promise<string[]> {
    const shas = await q.query<{ sha256: string }>(
      `SELECT DISTINCT f.sha256 FROM drive.site_files f JOIN drive.site_deployments d ON d.id = f.deployment_id WHERE d.site_id = $1`,
      [siteId],
    );
    await q.query(`UPDATE drive.sites SET current_deployment_id = NULL WHERE id = $1`, [siteId]);
    await q.query(`DELETE FROM drive.sites WHERE id = $1`, [siteId]);
    return shas.map((r) => r.sha256);
  }

  // Deployments -------------------------------------------------------------------------------

  async insertDeployment(q: Queryable, d: Omit<DeploymentRow, 'created_at'>, files: SiteFileRow[]): Promise<DeploymentRow> {
    const rows = await q.query<DeploymentRow>(
      `INSERT INTO drive.site_deployments (id, site_id, account_id, digest, file_count, total_bytes, source, folder_id, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${DEPLOYMENT}`,
      [d.id, d.site_id, d.account_id, d.digest, d.file_count, d.total_bytes, d.source, d.folder_id, JSON.stringify(d.created_by)],
    );
    // One statement for the whole manifest (arrays unnested), however many files.
    await q.query(
      `INSERT INTO drive.site_files (deployment_id, account_id, path, sha256, size, content_type)
       SELECT $1, $2, * FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[])`,
      [d.id, d.account_id, files.map((f) => f.path), files.map((f) => f.sha256), files.map((f) => f.size), files.map((f) => f.content_type)],
    );
    return deployment(rows[0]!);
  }

  async deploymentById(q: Queryable, siteId: string, id: string): Promise<DeploymentRow | null> {
    const rows = await q.query<DeploymentRow>(`SELECT ${DEPLOYMENT} FROM drive.site_deployments WHERE id = $1 AND site_id = $2`, [id, siteId]);
    return rows[0] ? deployment(rows[0]) : null;
  }

  /** A site's deployments, newest first, before the cursor's id. */
  async deployments(q: Queryable, siteId: string, before: string | undefined, limit: number): Promise<DeploymentRow[]> {
    const rows = await q.query<DeploymentRow>(
      `SELECT ${DEPLOYMENT} FROM drive.site_deployments WHERE site_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [siteId, before ?? null, limit],
    );
    return rows.map(deployment);
  }

  /**
   * Removes a site's deployments beyond the newest `keep` (never `current`); answers the content
   * their files referenced.
   */
  async prune(q: Queryable, siteId: string, keep: number, current: string): Promise<string[]> {
    const old = await q.query<{ id: string }>(`SELECT id FROM drive.site_deployments WHERE site_id = $1 AND id <> $3 ORDER BY id DESC OFFSET $2`, [
      siteId,
      Math.max(0, keep - 1),
      current,
    ]);
    if (!old.length) return [];
    const ids = old.map((r) => r.id);
    const shas = await q.query<{ sha256: string }>(`SELECT DISTINCT sha256 FROM drive.site_files WHERE deployment_id = ANY($1::text[])`, [ids]);
    await q.query(`DELETE FROM drive.site_deployments WHERE id = ANY($1::text[])`, [ids]);
    return shas.map((r) => r.sha256);
  }

  async files(q: Queryable, deploymentId: string): Promise<SiteFileRow[]> {
    const rows = await q.query<SiteFileRow>(`SELECT path, sha256, size, content_type FROM drive.site_files WHERE deployment_id = $1 ORDER BY path`, [
      deploymentId,
    ]);
    return rows.map(file);
  }

  // Serving -----------------------------------------------------------------------------------

  /**
   * The site of a slug (or of a verified custom domain) with those of `paths` its current
   * deployment has, in one query (the public front's whole read): no row when there is no such site.
   */
  async lookup(
    q: Queryable,
    site: { slug: string } | { domain: string },
    paths: string[],
    requestPath: string | null = null,
  ): Promise<{
    site: Pick<SiteRow, 'id' | 'account_id' | 'current_deployment_id' | 'spa_fallback'>;
    files: SiteFileRow[];
    redirectTo: string | null;
  } | null> {
    type Row = { id: string; account_id: string; current_deployment_id: string | null; spa_fallback: boolean; redirect_to: string | null };
    const rows = await q.query<Row & Partial<SiteFileRow>>(
      `SELECT s.id, s.account_id, s.current_deployment_id, s.spa_fallback,
              (SELECT r.to_path FROM drive.site_redirects r WHERE r.site_id = s.id AND r.from_path = $3) AS redirect_to,
              f.path, f.sha256, f.size, f.content_type, b.crc32
         FROM drive.sites s
         LEFT JOIN drive.site_files f ON f.deployment_id = s.current_deployment_id AND f.path = ANY($2::text[])
         LEFT JOIN drive.blobs b ON b.account_id = f.account_id AND b.sha256 = f.sha256
        WHERE ${'domain' in site ? `s.id = (SELECT d.site_id FROM drive.site_domains d WHERE d.domain = $1 AND d.verified_at IS NOT NULL)` : 's.slug = $1'}`,
      ['domain' in site ? site.domain : site.slug, paths, requestPath === null ? null : `/${requestPath}`],
    );
    if (!rows.length) return null;
    const { id, account_id, current_deployment_id, spa_fallback, redirect_to } = rows[0]!;
    const files = rows.filter((r) => r.path != null).map((r) => file(r as SiteFileRow));
    return { site: { id, account_id, current_deployment_id, spa_fallback }, files, redirectTo: redirect_to };
  }

  // Content -----------------------------------------------------------------------------------

  /**
   * Keeps these contents of an account from collection for at least `seconds` from now (creating
   * their blob rows, with the CRC-32 of the bytes: a row without one gets it), in one statement;
   * rows are taken in sha256 order, so concurrent deploys do not deadlock.
   */
  async holdMany(q: Queryable, accountId: string, blobs: Array<{ sha256: string; size: number; crc32: number }>, seconds: number): Promise<void> {
    if (!blobs.length) return;
    const sorted = [...blobs].sort((a, b) => (a.sha256 < b.sha256 ? -1 : 1));
    await q.query(
      `INSERT INTO drive.blobs (account_id, sha256, size, held_until, crc32)
       SELECT $1, t.sha256, t.size, now() + make_interval(secs => $4), t.crc32
         FROM unnest($2::text[], $3::bigint[], $5::bigint[]) AS t(sha256, size, crc32)
       ON CONFLICT (account_id, sha256) DO UPDATE SET held_until = GREATEST(drive.blobs.held_until, EXCLUDED.held_until), released_at = NULL,
         crc32 = COALESCE(drive.blobs.crc32, EXCLUDED.crc32)`,
      [accountId, sorted.map((b) => b.sha256), sorted.map((b) => b.size), seconds, sorted.map((b) => b.crc32)],
    );
  }

  /** Of these contents of an account, the ones whose blob rows exist, locked against the collector until commit. */
  async lockBlobs(q: Queryable, accountId: string, shas: string[]): Promise<Set<string>> {
    if (!shas.length) return new Set();
    const rows = await q.query<{ sha256: string }>(
      `SELECT sha256 FROM drive.blobs WHERE account_id = $1 AND sha256 = ANY($2::text[]) ORDER BY sha256 FOR SHARE`,
      [accountId, shas],
    );
    return new Set(rows.map((r) => r.sha256));
  }
}
