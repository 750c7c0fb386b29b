/**
 * Managing a site: its settings (slug, title, single-page fallback), deleting a deployment not
 * served, comparing two deployments, reading a deployed file, checking a deployment's links,
 * and redirects. Every call is scoped as sites.ts scopes them (another account's site: not found).
 */
import { DomainError, type Principal } from '@svc/kit';

import { readBlob } from '../files/io.js';
import { isText } from '../files/io.js';
import { writer } from '../items/domain.js';
import { ManageStore } from './manage-store.js';
import { normalizeSitePath, validSlug, validTitle } from './rules.js';
import type { Sites } from './sites.js';
import type { DeploymentRow, SiteFileRow, SiteRow } from './store.js';

const store = new ManageStore();
const MAX_REDIRECTS = 1000;

export const deploymentNotFound = () => new DomainError('not_found', 'deployment_not_found', 'Deployment not found.');

export async function updateSite(
  sites: Sites,
  p: Principal,
  req: { id: string; slug?: string; title?: string; spaFallback?: boolean },
): Promise<SiteRow> {
  writer(p);
  const slug = req.slug === undefined ? undefined : validSlug(req.slug);
  const title = req.title === undefined ? undefined : validTitle(req.title);
  return sites.drive.tx(
    async (q) => {
      const before = await sites.visible(q, p, req.id, true);
      const s = await store.updateSite(q, before.id, { slug, title, spaFallback: req.spaFallback });
      await sites.emit(q, 'drive.site.updated', s, before.slug !== s.slug ? { previousSlug: before.slug } : {});
      return s;
    },
    {
      onUnique: async () => {
        throw new DomainError('conflict', 'slug_taken', `The slug "${slug}" is taken; choose another.`);
      },
    },
  );
}

async function deploymentOf(
  sites: Sites,
  p: Principal,
  siteId: string,
  deploymentId: string | undefined,
): Promise<{ site: SiteRow; row: DeploymentRow }> {
  const site = await sites.visible(sites.drive.sql, p, siteId);
  const id = deploymentId || site.current_deployment_id;
  if (!id) throw new DomainError('not_found', 'deployment_not_found', 'The site has no deployment yet.');
  const row = await sites.store.deploymentById(sites.drive.sql, site.id, id);
  if (!row) throw deploymentNotFound();
  return { site, row };
}

/** Deletes a deployment the site does not serve (the one it serves: 409). Gone already: done. */
export async function deleteDeployment(sites: Sites, p: Principal, req: { siteId: string; deploymentId: string }): Promise<void> {
  writer(p);
  await sites.drive.tx(async (q) => {
    const site = await sites.visible(q, p, req.siteId, true);
    const row = await sites.store.deploymentById(q, site.id, req.deploymentId);
    if (!row) return;
    if (row.id === site.current_deployment_id) {
      throw new DomainError('conflict', 'deployment_live', 'The site serves this deployment; deploy or roll back to another first.');
    }
    const shas = await store.deleteDeployment(q, row.id);
    await sites.drive.store.release(q, site.account_id, shas, sites.drive.settings.graceSeconds);
    await sites.emit(q, 'drive.site.deployment_deleted', site, { deploymentId: row.id });
  });
}

/** What changed between two deployments of a site (`to`: the one served, by default). */
export async function diffDeployments(sites: Sites, p: Principal, req: { siteId: string; fromId: string; toId?: string }) {
  const from = await deploymentOf(sites, p, req.siteId, req.fromId);
  const to = await deploymentOf(sites, p, req.siteId, req.toId);
  const a = new Map((await sites.store.files(sites.drive.sql, from.row.id)).map((f) => [f.path, f]));
  const b = await sites.store.files(sites.drive.sql, to.row.id);
  const added: SiteFileRow[] = [];
  const changed: SiteFileRow[] = [];
  let unchanged = 0;
  for (const f of b) {
    const old = a.get(f.path);
    if (!old) added.push(f);
    else if (old.sha256 !== f.sha256) changed.push(f);
    else unchanged++;
    a.delete(f.path);
  }
  return { fromId: from.row.id, toId: to.row.id, added, removed: [...a.values()], changed, unchanged };
}

/** A file of a deployment (default: the one served) with its content. */
export async function readSiteFile(sites: Sites, p: Principal, req: { siteId: string; deploymentId?: string; path: string }) {
  const { site, row } = await deploymentOf(sites, p, req.siteId, req.deploymentId);
  let path: string;
  try {
    path = normalizeSitePath(req.path.replace(/^\//, ''));
  } catch (err) {
    throw err instanceof DomainError ? err : new DomainError('invalid_argument', 'invalid_path', 'The path is not valid.');
  }
  const file = (await sites.store.files(sites.drive.sql, row.id)).find((f) => f.path === path);
  if (!file) throw new DomainError('not_found', 'file_not_found', `The deployment has no file "${path}".`);
  if (file.size > 5 * 1024 * 1024) throw new DomainError('too_large', 'file_too_large', 'The file is over 5 MiB; read it from the site.');
  const bytes = file.size ? await readBlob(sites.drive, site.account_id, file.sha256) : Buffer.alloc(0);
  const text = isText(bytes);
  return { file, deploymentId: row.id, content: bytes.toString(text ? 'utf8' : 'base64'), encoding: text ? 'utf8' : 'base64' };
}

/** Where a link on a page points in the site, or undefined when it leaves the site (another origin, mailto:, a fragment only). */
export function linkTarget(page: string, link: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//') || link.startsWith('#') || link === '') return undefined;
  const clean = link.split('#')[0]!.split('?')[0]!;
  if (clean === '') return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(clean);
  } catch {
    return clean;
  }
  const base = clean.startsWith('/') ? [] : page.split('/').slice(0, -1);
  const out = [...base];
  for (const seg of decoded.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  const target = out.join('/');
  return decoded.endsWith('/') || target === '' ? (target ? `${target}/index.html` : 'index.html') : target;
}

/** The links of a deployment's HTML pages (href, src) that name no file of it. */
export async function checkLinks(sites: Sites, p: Principal, req: { siteId: string; deploymentId?: string }) {
  const { site, row } = await deploymentOf(sites, p, req.siteId, req.deploymentId);
  const files = await sites.store.files(sites.drive.sql, row.id);
  const paths = new Set(files.map((f) => f.path));
  const redirects = new Set((await store.redirects(sites.drive.sql, site.id)).map((r) => r.from_path.replace(/^\//, '')));
  const broken: Array<{ page: string; link: string; target: string }> = [];
  let pages = 0;
  let links = 0;
  for (const f of files.filter((x) => /\.html?$/i.test(x.path) && x.size <= 2 * 1024 * 1024).slice(0, 500)) {
    pages++;
    const html = (await readBlob(sites.drive, site.account_id, f.sha256)).toString('utf8');
    for (const m of html.matchAll(/\s(?:href|src)\s*=\s*("([^"]*)"|'([^']*)')/gi)) {
      const link = (m[2] ?? m[3] ?? '').trim();
      const target = linkTarget(f.path, link);
      if (target === undefined) continue;
      links++;
      const ok =
        paths.has(target) || paths.has(`${target}/index.html`) || redirects.has(target) || (site.spa_fallback && !/\.[A-Za-z0-9]{1,8}$/.test(target));
      if (!ok && broken.length < 1000) broken.push({ page: f.path, link, target });
    }
  }
  return { deploymentId: row.id, broken, pagesChecked: pages, linksChecked: links };
}

// Redirects ------------------------------------------------------------------------------------

/** A redirect's path: from the site root, normalized ("/old/page"). */
function redirectPath(raw: string, what: string): string {
  if (!raw.startsWith('/')) throw new DomainError('invalid_argument', 'invalid_redirect', `${what}: a path from the site root, starting with "/".`);
  if (raw === '/') return raw;
  const trailing = raw.endsWith('/') ? '/' : '';
  try {
    return `/${normalizeSitePath(raw.slice(1).replace(/\/$/, ''))}${trailing}`;
  } catch (err) {
    throw new DomainError('invalid_argument', 'invalid_redirect', `${what}: ${(err as Error).message}`);
  }
}

const views = (rows: Awaited<ReturnType<ManageStore['redirects']>>) =>
  rows.map((r) => ({ from: r.from_path, to: r.to_path, createdAt: r.created_at.toISOString() }));

export async function listRedirects(sites: Sites, p: Principal, siteId: string) {
  const site = await sites.visible(sites.drive.sql, p, siteId);
  return views(await store.redirects(sites.drive.sql, site.id));
}

export async function setRedirects(
  sites: Sites,
  p: Principal,
  req: { siteId: string; redirects: Array<{ from: string; to: string }>; replace: boolean },
) {
  writer(p);
  const list = req.redirects.map((r) => ({ from: redirectPath(r.from, 'from'), to: redirectPath(r.to, 'to') }));
  if (list.some((r) => r.from === r.to)) throw new DomainError('invalid_argument', 'invalid_redirect', 'A redirect cannot point at itself.');
  if (new Set(list.map((r) => r.from)).size !== list.length) throw new DomainError('invalid_argument', 'invalid_redirect', 'Each from path once.');
  return sites.drive.tx(async (q) => {
    const site = await sites.visible(q, p, req.siteId, true);
    await store.putRedirects(q, site.id, list, req.replace);
    if ((await store.countRedirects(q, site.id)) > MAX_REDIRECTS) {
      throw new DomainError('invalid_argument', 'too_many_redirects', `A site has at most ${MAX_REDIRECTS} redirects.`);
    }
    await sites.emit(q, 'drive.site.redirects_changed', site);
    return views(await store.redirects(q, site.id));
  });
}

export async function deleteRedirect(sites: Sites, p: Principal, req: { siteId: string; from: string }) {
  writer(p);
  const from = redirectPath(req.from, 'from');
  return sites.drive.tx(async (q) => {
    const site = await sites.visible(q, p, req.siteId, true);
    await store.deleteRedirect(q, site.id, from);
    return views(await store.redirects(q, site.id));
  });
}
