/**
 * Hosted sites, served in public (docs/sites.md): GET and HEAD of /sites/<slug>/<path> (and, when
 * SVC_SITES_HOST is set, of <slug>.<that host>/<path>; and of <custom domain>/<path> once the
 * domain is verified: domains.ts). No credential is read: an Authorization
 * header or a cookie changes nothing and goes nowhere. The drive decides what a path serves
 * (OpenSiteFile, asked with the gateway's system principal); this front streams the bytes from the
 * blob store, checked against their SHA-256, with headers that keep a site's pages away from the
 * API's origin: a sandboxing CSP (an opaque origin: no cookies, no storage, no same-origin calls),
 * nosniff, no credentials.
 */
import type express from 'express';
import type { Request, Response } from 'express';

import { type ContentDeps, type Dispatcher, driveCalls } from '@svc/dispatch';
import { type Blobs, byteRange, DomainError, SYSTEM_PRINCIPAL, verifiedContent } from '@svc/kit';
import type { drive_sites } from '@svc/proto';

import { writeOut } from '../../http/content.js';
import { ContentCache } from './cache.js';
import { domainCandidate, SiteDomainCache } from './domains.js';

export interface SitesDeps extends ContentDeps {
  /** A token of the gateway's own (system) principal: what the public front asks the drive with. */
  systemToken: () => Promise<string>;
  /** The process's dispatcher: the drive calls are its internal operations, made as the platform. */
  dispatcher: Dispatcher;
  /** SVC_SITES_HOST: the host name under which `<slug>.<host>` serves a site at its root. */
  sitesHost?: string;
  /** Which hosts are verified custom domains (the gateway drops entries on the drive's events); absent: one of the front's own. */
  siteDomains?: SiteDomainCache;
}

/** The drive's calls as the platform itself (a public site has no caller): internal operations through the dispatcher. */
const asPlatform = async (deps: SitesDeps, requestId: string) =>
  driveCalls(deps.dispatcher, { requestId, auth: { principal: SYSTEM_PRINCIPAL, token: await deps.systemToken() } });

/** Where a request's site is: its slug, or the custom domain it came on; the path below the site's root. */
interface SiteRef {
  slug: string;
  domain?: string;
  rest: string;
  root: string;
}

/** `/sites/<slug>` and what follows; a slug never holds "_" (ids do), so /sites/site_… stays the API's. */
const PATH_RE = /^\/sites\/([a-z0-9-]{1,63})(\/.*)?$/;
/** A request for a site's page by path (`GET /sites/<slug>/…`); the rest of /sites is the API's. */
export const sitePath = (req: Request) => (req.method === 'GET' || req.method === 'HEAD') && PATH_RE.test(req.path);

/** What every answer of a site carries: the page is its own opaque origin, never the API's. */
const SITE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': 'sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  // Revalidated on every use (a deploy switches at once); the ETag makes that a 304.
  'Cache-Control': 'public, no-cache',
};

function plain(res: Response, status: number, text: string, head: boolean): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(head ? undefined : text);
}

/** The path below the site root, percent-decoded (undefined: not valid percent-encoding). */
function decodedPath(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/**
 * Streams a stored file, checked against its CRC-32 (or, stored without one, its SHA-256): a
 * mismatch breaks the transfer, never sends wrong bytes as complete. A range of a large file is
 * sent as read: a part has no checksum to check.
 */
async function stream(
  deps: SitesDeps,
  blobs: Blobs,
  res: Response,
  file: drive_sites.SiteFile,
  key: string,
  range?: { start: number; end: number },
  crc32?: number,
): Promise<void> {
  // Read into a few buffers used again (BlobReadOptions): each chunk is written out before the next.
  const blob = await blobs.get(key, range, { reuseBuffers: true });
  const body: AsyncIterable<Buffer> = range ? blob : verifiedContent(blob, deps.hashes, { bytes: file.size, sha256: file.sha256, crc32 });
  let gone = false;
  res.on('close', () => {
    if (!res.writableFinished) {
      gone = true;
      blob.destroy();
    }
  });
  try {
    for await (const chunk of body) {
      if (gone) return;
      await writeOut(res, chunk);
    }
    res.end();
  } catch (err) {
    deps.log.error({ err, key, sha256: file.sha256 }, 'serving a site file failed');
    res.destroy();
  }
}

async function serve(
  deps: SitesDeps,
  cache: ContentCache,
  req: Request,
  res: Response,
  site: SiteRef,
  /** For a custom domain the drive no longer serves: the request goes on to the API. */
  fallThrough?: () => void,
): Promise<void> {
  const head = req.method === 'HEAD';
  for (const [k, v] of Object.entries(SITE_HEADERS)) res.setHeader(k, v);
  if (req.method !== 'GET' && !head) {
    res.setHeader('Allow', 'GET, HEAD');
    return plain(res, 405, `${req.method} is not allowed on a site.`, false);
  }
  // "/sites/<slug>": the site's root is "/sites/<slug>/" (relative links resolve inside it).
  if (site.rest === '') return redirect(res, req, `${site.root}/`);
  const path = decodedPath(site.rest.slice(1));
  if (path === undefined) return plain(res, 400, 'The path is not valid percent-encoding.', head);
  const ifNoneMatch = req.headers['if-none-match'];
  const answer = await (
    await asPlatform(deps, req.requestId)
  ).openSiteFile({
    slug: site.slug,
    domain: site.domain,
    path,
    ifNoneMatch: typeof ifNoneMatch === 'string' ? ifNoneMatch.slice(0, 2000) : undefined,
  });
  if (answer.noSite && fallThrough) {
    for (const k of Object.keys(SITE_HEADERS)) res.removeHeader(k);
    return fallThrough();
  }
  if (answer.outcome === 'redirect') return redirect(res, req, `${site.root}/${answer.location.split('/').map(encodeURIComponent).join('/')}`);
  const file = answer.file;
  if (!file) return plain(res, 404, 'Not found.', head);
  const status = answer.outcome === 'file' ? 200 : 404;
  if (status === 200) res.setHeader('ETag', `"${file.sha256}"`);
  if (answer.notModified) {
    res.statusCode = 304;
    return void res.end();
  }
  res.statusCode = status;
  res.setHeader('Content-Type', file.contentType);
  // One byte range of a file (a video seeking, a download resumed), when If-Range, if sent, names
  // this very file; several ranges or a malformed header get the whole file.
  let range: { start: number; end: number } | undefined;
  if (status === 200) {
    res.setHeader('Accept-Ranges', 'bytes');
    const ifRange = req.headers['if-range'];
    const asked = ifRange === undefined || ifRange === `"${file.sha256}"` ? req.headers.range : undefined;
    const r = byteRange(Number(file.size), asked);
    if (r.kind === 'unsatisfiable') {
      res.statusCode = 416;
      res.setHeader('Content-Range', `bytes */${file.size}`);
      res.setHeader('Content-Length', '0');
      return void res.end();
    }
    if (r.kind === 'partial') {
      range = r;
      res.statusCode = 206;
      res.setHeader('Content-Range', `bytes ${r.start}-${r.end}/${file.size}`);
    }
  }
  res.setHeader('Content-Length', String(range ? range.end - range.start + 1 : file.size));
  if (head || file.size === 0 || !answer.blobKey) return void res.end();
  const blobs = await deps.backends.blobs();
  if (file.size > cache.maxFile) return stream(deps, blobs, res, file, answer.blobKey, range, answer.crc32);
  const content = await cache.get(blobs, answer.blobKey, file.sha256, file.size);
  if (!content) {
    deps.log.error({ key: answer.blobKey, sha256: file.sha256 }, 'stored site content does not match its hash');
    return void res.destroy();
  }
  res.end(range ? content.subarray(range.start, range.end + 1) : content);
}

/** A redirect within the site, keeping the query string. */
function redirect(res: Response, req: Request, to: string): void {
  const q = req.originalUrl.indexOf('?');
  res.statusCode = 301;
  res.setHeader('Location', q < 0 ? to : to + req.originalUrl.slice(q));
  res.setHeader('Content-Length', '0');
  res.end();
}

/**
 * Mounts the public sites front: by path on every host, by host name when SVC_SITES_HOST is set,
 * and on the verified custom domains of sites. Returns the test of a request's host that the
 * gateway enters the front for whatever the path (fronts/gate.ts): a site's host, or a name that
 * could be a custom domain and is not yet known not to be one.
 */
export function mountSites(app: express.Router, deps: SitesDeps): (req: Request) => boolean {
  const cache = new ContentCache();
  const domains = deps.siteDomains ?? new SiteDomainCache();
  const suffix = deps.sitesHost ? `.${deps.sitesHost.replace(/^\*\./, '').toLowerCase()}` : undefined;
  const run = (req: Request, res: Response, site: SiteRef, fallThrough?: () => void) =>
    serve(deps, cache, req, res, site, fallThrough).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof DomainError && err.httpStatus < 500) return plain(res, err.httpStatus, err.message, req.method === 'HEAD');
      deps.log.warn({ err, requestId: req.requestId }, 'a site request failed');
      plain(res, err instanceof DomainError && err.httpStatus === 503 ? 503 : 502, 'The site could not be served; try again.', req.method === 'HEAD');
    });
  const isSiteHost = (host: string) => !!suffix && host.endsWith(suffix) && !host.slice(0, -suffix.length).includes('.');
  // Whether the drive serves a host as a custom domain (asked once per name, then kept).
  const ask = async (host: string) => (await (await asPlatform(deps, '')).resolveSiteDomain({ domain: host })).served;
  app.use((req, res, next) => {
    const host = req.hostname?.toLowerCase();
    if (host && isSiteHost(host)) {
      // The whole host is the site: its path is the request's as sent (no /v1 prefix taken off).
      const path = req.originalUrl.split('?')[0]!;
      return void run(req, res, { slug: host.slice(0, -suffix!.length), rest: path, root: '' });
    }
    // By path (/sites/<slug>/…), on any other host.
    const byPath = () => {
      const m = PATH_RE.exec(req.path);
      if (!m || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
      const prefix = req.originalUrl.startsWith('/v1/') ? '/v1' : '';
      void run(req, res, { slug: m[1]!, rest: m[2] ?? '', root: `${prefix}/sites/${m[1]}` });
    };
    // A custom domain: the whole host is the site, as under SVC_SITES_HOST, once verified; any
    // other host (the API's own among them) goes on as before.
    const domain = domainCandidate(host);
    if (!domain || domains.peek(domain) === false) return byPath();
    const onDomain = (served: boolean) => {
      if (!served) return byPath();
      const path = req.originalUrl.split('?')[0]!;
      void run(req, res, { slug: '', domain, rest: path, root: '' }, () => {
        domains.forget(domain);
        byPath();
      });
    };
    if (domains.peek(domain) === true) return onDomain(true);
    domains.served(domain, ask).then(onDomain, (err: unknown) => {
      // The drive could not say: the request goes on as any other (nothing is kept).
      deps.log.warn({ err, requestId: req.requestId, domain }, 'a custom domain could not be looked up');
      byPath();
    });
  });
  return (req) => {
    const host = req.hostname?.toLowerCase();
    if (!host) return false;
    if (isSiteHost(host)) return true;
    const domain = domainCandidate(host);
    return domain !== undefined && domains.peek(domain) !== false;
  };
}
