/**
 * What the public front serves for a request of a site: one query finds the site of the slug and
 * the few paths that may answer (the file, a folder's index.html, the site's 404.html) in the
 * deployment it serves now.
 */
import { ifNoneMatchPasses } from '@svc/kit';

import { contentKey } from '../items/content.js';
import { normalizeSitePath } from './rules.js';
import type { Sites } from './sites.js';
import type { SiteFileRow } from './store.js';

export interface SiteAnswer {
  outcome: 'file' | 'not_found' | 'redirect';
  file?: SiteFileRow;
  notModified: boolean;
  blobKey?: string;
  /** The served content's CRC-32, when it has one (the gateway checks a whole read against it). */
  crc32?: number;
  /** For a redirect: where, relative to the site root. */
  location?: string;
  /** No site answers for the slug or domain. */
  noSite?: boolean;
}

const SLUG_SHAPE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const NOT_FOUND: SiteAnswer = { outcome: 'not_found', notModified: false };
const NO_SITE: SiteAnswer = { ...NOT_FOUND, noSite: true };

/** A request path as a manifest path, or undefined when no file can have it (it is then a 404). */
function asFilePath(path: string): string | undefined {
  try {
    return normalizeSitePath(path);
  } catch {
    return undefined;
  }
}

/**
 * `path` is the percent-decoded request path below the site root, without its leading "/". A path
 * that ends in "/" (or is empty) asks for that folder's index.html; a path naming a folder asks to
 * be redirected to it with a trailing "/" (relative links then resolve inside it). Anything else
 * missing gets the site's 404.html, when it has one, with status 404.
 */
export async function openSiteFile(sites: Sites, req: { slug: string; path: string; ifNoneMatch?: string; domain?: string }): Promise<SiteAnswer> {
  // A custom domain (the request's host name) instead of the slug: served once verified.
  const which: { slug: string } | { domain: string } = req.domain ? { domain: req.domain.toLowerCase().replace(/\.$/, '') } : { slug: req.slug };
  if (!req.domain && !SLUG_SHAPE.test(req.slug)) return NO_SITE;
  const folder = req.path === '' || req.path.endsWith('/');
  const wanted = asFilePath(folder ? `${req.path}index.html` : req.path);
  const asFolder = folder || !wanted ? undefined : `${wanted}/index.html`;
  const candidates = [wanted, asFolder, '404.html', 'index.html'].filter((x): x is string => x !== undefined);
  // Redirects name clean paths only (no control characters: PostgreSQL text holds no NUL).
  const redirectKey = /[\u0000-\u001f\u007f]/.test(req.path) ? null : req.path;
  const found = await sites.store.lookup(sites.drive.sql, which, candidates, redirectKey);
  if (!found) return NO_SITE;
  if (!found.site.current_deployment_id) return NOT_FOUND;
  // A redirect the site set for this exact path comes first.
  if (found.redirectTo !== null) return { outcome: 'redirect', notModified: false, location: found.redirectTo.replace(/^\//, '') };
  const byPath = new Map(found.files.map((f) => [f.path, f]));
  const keyOf = (f: SiteFileRow) => contentKey(found.site.account_id, f.sha256);
  const crcOf = (f: SiteFileRow) => (f.crc32 === null || f.crc32 === undefined ? {} : { crc32: f.crc32 });
  const file = wanted !== undefined ? byPath.get(wanted) : undefined;
  if (file) {
    const notModified = req.ifNoneMatch !== undefined && !ifNoneMatchPasses(req.ifNoneMatch, `"${file.sha256}"`);
    return { outcome: 'file', file, notModified, blobKey: notModified ? undefined : keyOf(file), ...crcOf(file) };
  }
  if (asFolder && byPath.has(asFolder)) return { outcome: 'redirect', notModified: false, location: `${wanted}/` };
  // A single-page app: a path with no file (and no extension) is the app's index.html.
  const index = byPath.get('index.html');
  if (found.site.spa_fallback && index && !/\.[A-Za-z0-9]{1,8}$/.test(req.path)) {
    const notModified = req.ifNoneMatch !== undefined && !ifNoneMatchPasses(req.ifNoneMatch, `"${index.sha256}"`);
    return { outcome: 'file', file: index, notModified, blobKey: notModified ? undefined : keyOf(index), ...crcOf(index) };
  }
  const page = byPath.get('404.html');
  return page ? { outcome: 'not_found', file: page, notModified: false, blobKey: keyOf(page), ...crcOf(page) } : NOT_FOUND;
}
