/**
 * Sites: a slug (the public URL's name, unique platform-wide) and the deployment it serves. Every
 * call is scoped to the caller's account (another account's site is "not found") and, for a
 * project-scoped key, to that project. Deploys and rollbacks are in deploy.ts; serving in serve.ts.
 */
import { DomainError, enqueueEvent, newId, type Principal, type Queryable } from '@svc/kit';

import { actorOf, type DriveDomain, writer } from '../items/domain.js';
import { SCHEMA } from '../items/store.js';
import { DomainsStore } from './domains-store.js';
import { decodeIdCursor, encodeIdCursor, validSlug, validTitle } from './rules.js';
import { type SiteRow, SitesStore } from './store.js';

export const siteNotFound = () => new DomainError('not_found', 'site_not_found', 'Site not found.');

/** What events say about a site. */
export function siteView(s: SiteRow) {
  return {
    id: s.id,
    slug: s.slug,
    title: s.title,
    projectId: s.project_id,
    currentDeploymentId: s.current_deployment_id,
    updatedAt: s.updated_at.toISOString(),
  };
}

export class Sites {
  readonly store = new SitesStore();
  /** The SQL of sites' custom domains (domains.ts has their rules). */
  readonly domainsStore = new DomainsStore();

  constructor(readonly drive: DriveDomain) {}

  sees(p: Principal, s: SiteRow | null): s is SiteRow {
    return !!s && s.account_id === p.accountId && (!p.projectId || s.project_id === p.projectId);
  }

  /** A site the caller sees, else not found. */
  async visible(q: Queryable, p: Principal, id: string, lock = false): Promise<SiteRow> {
    const s = await this.store.siteById(q, p.accountId, id, { lock });
    if (!this.sees(p, s)) throw siteNotFound();
    return s;
  }

  async emit(q: Queryable, subject: string, s: SiteRow, extra: Record<string, unknown> = {}): Promise<void> {
    await enqueueEvent(q, SCHEMA, { subject, accountId: s.account_id, data: { ...siteView(s), ...extra } });
  }
}

export async function createSite(sites: Sites, p: Principal, req: { slug: string; title: string; projectId?: string }): Promise<SiteRow> {
  writer(p);
  const slug = validSlug(req.slug);
  const title = validTitle(req.title ?? '');
  const projectId = sites.drive.rootProject(p, req.projectId);
  return sites.drive.tx(
    async (q) => {
      const s = await sites.store.insertSite(q, {
        id: newId('site'),
        account_id: p.accountId,
        project_id: projectId,
        slug,
        title,
        created_by: actorOf(p),
      });
      await sites.emit(q, 'drive.site.created', s);
      return s;
    },
    {
      // Slugs are one namespace for every account (the public URLs): taken is taken, whose ever it is.
      onUnique: async () => {
        throw new DomainError('conflict', 'slug_taken', `The slug "${slug}" is taken; choose another.`);
      },
    },
  );
}

export async function listSites(
  sites: Sites,
  p: Principal,
  req: { limit: number; cursor?: string },
): Promise<{ sites: SiteRow[]; nextCursor?: string }> {
  const limit = Math.min(Math.max(req.limit || 50, 1), 200);
  const after = req.cursor ? decodeIdCursor(req.cursor, 'site') : undefined;
  const rows = await sites.store.sites(sites.drive.sql, p.accountId, p.projectId ?? null, after, limit + 1);
  const page = rows.slice(0, limit);
  return { sites: page, nextCursor: rows.length > limit ? encodeIdCursor(page[page.length - 1]!.id) : undefined };
}

/** Deletes a site and its deployments; its slug is free again. Content no other file uses is collected after the grace period. */
export async function deleteSite(sites: Sites, p: Principal, id: string): Promise<void> {
  writer(p);
  await sites.drive.tx(async (q) => {
    const s = await sites.visible(q, p, id, true);
    // Its custom domains go with it (the rows cascade); the event names those it served.
    const domains = await sites.domainsStore.servedOfSite(q, s.id);
    const shas = await sites.store.deleteSite(q, s.id);
    await sites.drive.store.release(q, s.account_id, shas, sites.drive.settings.graceSeconds);
    await sites.emit(q, 'drive.site.deleted', s, { domains });
  });
}
