/** SQL of a site's settings, deployment deletion and redirects. */
import type { Queryable } from '@svc/kit';

import { SITE, site, type SiteRow } from './store.js';

export interface RedirectRow {
  from_path: string;
  to_path: string;
  created_at: Date;
}

export class ManageStore {
  async updateSite(q: Queryable, id: string, set: { slug?: string; title?: string; spaFallback?: boolean }): Promise<SiteRow> {
    const rows = await q.query<SiteRow>(
      `UPDATE drive.sites SET slug = COALESCE($2, slug), title = COALESCE($3, title), spa_fallback = COALESCE($4, spa_fallback), updated_at = now()
        WHERE id = $1 RETURNING ${SITE}`,
      [id, set.slug ?? null, set.title ?? null, set.spaFallback ?? null],
    );
    return site(rows[0]!);
  }

  /** Deletes a deployment; answers the content its files referenced. */
  async deleteDeployment(q: Queryable, id: string): Promise<string[]> {
    const shas = await q.query<{ sha256: string }>(`SELECT DISTINCT sha256 FROM drive.site_files WHERE deployment_id = $1`, [id]);
    await q.query(`DELETE FROM drive.site_deployments WHERE id = $1`, [id]);
    return shas.map((r) => r.sha256);
  }

  async redirects(q: Queryable, siteId: string): Promise<RedirectRow[]> {
    return q.query<RedirectRow>(`SELECT from_path, to_path, created_at FROM drive.site_redirects WHERE site_id = $1 ORDER BY from_path`, [siteId]);
  }

  async putRedirects(q: Queryable, siteId: string, list: Array<{ from: string; to: string }>, replace: boolean): Promise<void> {
    if (replace) await q.query(`DELETE FROM drive.site_redirects WHERE site_id = $1`, [siteId]);
    if (!list.length) return;
    await q.query(
      `INSERT INTO drive.site_redirects (site_id, from_path, to_path) SELECT $1, * FROM unnest($2::text[], $3::text[])
       ON CONFLICT (site_id, from_path) DO UPDATE SET to_path = EXCLUDED.to_path`,
      [siteId, list.map((r) => r.from), list.map((r) => r.to)],
    );
  }

  async deleteRedirect(q: Queryable, siteId: string, from: string): Promise<void> {
    await q.query(`DELETE FROM drive.site_redirects WHERE site_id = $1 AND from_path = $2`, [siteId, from]);
  }

  async countRedirects(q: Queryable, siteId: string): Promise<number> {
    const rows = await q.query<{ n: string }>(`SELECT count(*) AS n FROM drive.site_redirects WHERE site_id = $1`, [siteId]);
    return Number(rows[0]!.n);
  }
}
