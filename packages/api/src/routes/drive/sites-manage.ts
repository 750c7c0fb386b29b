import { z } from 'zod';

import type { drive_sites } from '@svc/proto';

import { type Route, route, Success, Timestamp } from '../../route.js';
import { DeploymentId, SiteId } from './ids.js';
import { CONTENT_DAMAGED } from './kit.js';
import { Site, siteView, Slug } from './sites.js';

/**
 * Managing a site (docs/sites.md, "Managing a site"): its settings, its deployments (delete one
 * not served, compare two, read a deployed file, check the links of its pages) and its redirects.
 */

const KEY: Pick<Route, 'auth' | 'principals' | 'authority' | 'tag'> = { auth: 'key', principals: ['human', 'agent'], authority: false, tag: 'sites' };
const params = z.object({ id: SiteId.describe('The site’s id (site_…).') });
const OptionalDeployment = DeploymentId.optional().describe('The deployment (default: the one the site serves).');

const SiteFile = z.object({ path: z.string(), sha256: z.string(), size: z.number().int(), contentType: z.string() }).meta({ id: 'SiteFileEntry' });
const file = (f: drive_sites.SiteFile) => ({ path: f.path, sha256: f.sha256, size: f.size, contentType: f.contentType });

const RedirectPath = z.string().min(1).max(1025).regex(/^\//, 'must start with "/"');
const Redirect = z
  .object({
    from: RedirectPath.describe('A path of the site ("/old/page").'),
    to: RedirectPath.describe('Where it goes ("/new/page"): a 301 to that path.'),
  })
  .strict();
const Redirects = z
  .object({ redirects: z.array(z.object({ from: z.string(), to: z.string(), createdAt: Timestamp })).describe('By from path.') })
  .meta({ id: 'SiteRedirects' });
const redirects = (r: drive_sites.RedirectsResponse) => ({ redirects: r.redirects.map((x) => ({ from: x.from, to: x.to, createdAt: x.createdAt })) });

export const sitesManageRoutes = [
  route({
    ...KEY,
    id: 'sites.update',
    statuses: {
      409: 'Another site has that slug (`slug_taken`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/sites/:id',
    summary:
      'Change a site’s settings: its slug (its public URL moves at once; the old one answers 404; 409 slug_taken), its title, and ' +
      '`spaFallback` (paths with no file and no extension are answered with the root index.html, for single-page apps).',
    errors: ['site_not_found', 'slug_taken'],
    params,
    body: z
      .object({
        slug: Slug.optional(),
        title: z.string().max(100).optional().describe('The site’s title, shown in its listings (at most 100 characters).'),
        spaFallback: z.boolean().optional().describe('Serve index.html for paths with no file (client-side routing).'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'name at least one of slug, title, spaFallback')
      .meta({ id: 'UpdateSiteRequest' }),
    response: Site.extend({ spaFallback: z.boolean() }).meta({ id: 'SiteSettings' }),
    handler: {
      rpc: 'drive.updateSite',
      request: (i) => ({ id: i.params.id, slug: i.body.slug, title: i.body.title, spaFallback: i.body.spaFallback }),
      response: (r) => ({ ...siteView(r.site!), spaFallback: r.site!.spaFallback }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.deployments.delete',
    statuses: {
      409: 'The site serves this deployment: deploy or roll back to another first (`deployment_live`).',
    },
    method: 'delete',
    path: '/sites/:id/deployments/:deploymentId',
    summary: 'Delete a deployment the site does not serve (the one it serves: 409 deployment_live). Already gone: 200.',
    errors: ['deployment_live', 'site_not_found'],
    params: params.extend({ deploymentId: DeploymentId }),
    response: Success,
    handler: {
      rpc: 'drive.deleteDeployment',
      request: (i) => ({ siteId: i.params.id, deploymentId: i.params.deploymentId }),
      response: () => ({ success: true as const }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.deployments.diff',
    method: 'get',
    path: '/sites/:id/diff',
    summary: 'What changed between two deployments of a site: files added, removed and changed (by content), and how many stayed the same.',
    errors: ['deployment_not_found', 'site_not_found'],
    params,
    query: z.object({ from: DeploymentId.describe('The older deployment.'), to: OptionalDeployment }),
    response: z
      .object({
        fromId: z.string(),
        toId: z.string(),
        added: z.array(SiteFile),
        removed: z.array(SiteFile),
        changed: z.array(SiteFile).describe('The new versions of files whose content differs.'),
        unchanged: z.number().int(),
      })
      .meta({ id: 'DeploymentDiff' }),
    handler: {
      rpc: 'drive.diffDeployments',
      request: (i) => ({ siteId: i.params.id, fromId: i.query.from, toId: i.query.to }),
      response: (r) => ({ ...r, added: r.added.map(file), removed: r.removed.map(file), changed: r.changed.map(file) }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.files.read',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/sites/:id/files',
    summary: 'Read one file of a deployment (default: the one served) by its path in the site: text as is, other content base64 (at most 5 MiB).',
    errors: ['content_damaged', 'file_not_found', 'invalid_path', 'site_not_found'],
    params,
    query: z.object({
      path: z.string().min(1).max(1025).describe('The file’s path in the site ("index.html", "css/site.css").'),
      deploymentId: OptionalDeployment,
    }),
    response: z
      .object({ file: SiteFile, deploymentId: z.string(), content: z.string(), encoding: z.enum(['utf8', 'base64']) })
      .meta({ id: 'SiteFileContent' }),
    handler: {
      rpc: 'drive.readSiteFile',
      request: (i) => ({ siteId: i.params.id, path: i.query.path, deploymentId: i.query.deploymentId }),
      response: (r) => ({ file: file(r.file!), deploymentId: r.deploymentId, content: r.content, encoding: r.encoding as 'utf8' }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.links.check',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/sites/:id/links',
    summary:
      'Check the links of a deployment’s HTML pages (href and src within the site): each one naming no file, folder index or redirect of the site, ' +
      'with the page and the path it resolves to.',
    errors: ['content_damaged', 'site_not_found'],
    params,
    query: z.object({ deploymentId: OptionalDeployment }),
    response: z
      .object({
        deploymentId: z.string(),
        broken: z.array(
          z.object({ page: z.string(), link: z.string().describe('As written.'), target: z.string().describe('The path it resolves to.') }),
        ),
        pagesChecked: z.number().int(),
        linksChecked: z.number().int(),
      })
      .meta({ id: 'SiteLinkCheck' }),
    handler: { rpc: 'drive.checkLinks', request: (i) => ({ siteId: i.params.id, deploymentId: i.query.deploymentId }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'sites.redirects.list',
    method: 'get',
    path: '/sites/:id/redirects',
    summary: 'A site’s redirects: exact paths answered with a 301 to another path of the site.',
    errors: ['site_not_found'],
    params,
    response: Redirects,
    handler: { rpc: 'drive.listRedirects', request: (i) => ({ siteId: i.params.id }), response: redirects },
  }),
  route({
    ...KEY,
    id: 'sites.redirects.replace',
    method: 'put',
    effect: 'overwrites',
    path: '/sites/:id/redirects',
    summary: 'Replace all of a site’s redirects with these (at most 1000; an empty list removes them). They apply at once, before the files.',
    errors: ['site_not_found'],
    params,
    body: z
      .object({ redirects: z.array(Redirect).max(1000).describe('Every redirect of the site from now on (at most 1,000); [] removes them all.') })
      .strict()
      .meta({ id: 'ReplaceRedirectsRequest' }),
    response: Redirects,
    handler: {
      rpc: 'drive.setRedirects',
      request: (i) => ({
        siteId: i.params.id,
        redirects: i.body.redirects.map((r: z.output<typeof Redirect>) => ({ ...r, createdAt: '' })),
        replace: true,
      }),
      response: redirects,
    },
  }),
  route({
    ...KEY,
    id: 'sites.redirects.add',
    method: 'post',
    effect: 'creates',
    path: '/sites/:id/redirects',
    summary: 'Add a redirect to a site (or change where an existing `from` goes).',
    errors: ['invalid_redirect', 'site_not_found'],
    params,
    body: Redirect.meta({ id: 'AddRedirectRequest' }),
    response: Redirects,
    handler: {
      rpc: 'drive.setRedirects',
      request: (i) => ({ siteId: i.params.id, redirects: [{ from: i.body.from, to: i.body.to, createdAt: '' }], replace: false }),
      response: redirects,
    },
  }),
  route({
    ...KEY,
    id: 'sites.redirects.delete',
    method: 'delete',
    path: '/sites/:id/redirects',
    summary: 'Remove a site’s redirect of a path (none: nothing to do).',
    errors: ['site_not_found'],
    params,
    query: z.object({ from: RedirectPath.describe('The redirected path.') }),
    response: Redirects,
    handler: { rpc: 'drive.deleteRedirect', request: (i) => ({ siteId: i.params.id, from: i.query.from }), response: redirects },
  }),
];
