import { z } from 'zod';

import type { drive_sites } from '@svc/proto';

import { ListQuery, Nullable, ProjectId, reply, route, Timestamp } from '../../route.js';
import { DeploymentId, FolderId, SiteId } from './ids.js';

/**
 * Hosted sites (docs/sites.md), kept by the drive service: a site has a slug (its public URL,
 * `/sites/<slug>/`, unique platform-wide); a deployment is an immutable snapshot of files, each
 * stored by SHA-256; deploying switches the site atomically; earlier deployments can be rolled back to.
 * The public pages themselves are served by the gateway's sites front, not by this table.
 */

export const Slug = z
  .string()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'must be 1–63 lowercase letters, digits and "-", not starting or ending with "-"')
  .describe('The public name: the site is served at /sites/<slug>/. Unique across the platform.');

const Actor = z.object({ kind: z.string().describe('human or agent'), id: z.string(), keyId: Nullable(z.string()) }).meta({ id: 'SiteActor' });

export const Site = z
  .object({
    id: z.string(),
    slug: z.string(),
    title: z.string(),
    projectId: Nullable(z.string()),
    currentDeploymentId: Nullable(z.string()).describe('The deployment served; null before the first deploy.'),
    path: z.string().describe('Where the site is served on this API origin: /sites/<slug>/ (no credentials needed).'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    createdBy: Actor,
  })
  .meta({ id: 'Site' });

const SiteFile = z
  .object({
    path: z.string(),
    sha256: z.string().describe('Hex SHA-256 of the content; the file is served with ETag "<sha256>".'),
    size: z.number().int(),
    contentType: z.string(),
  })
  .meta({ id: 'SiteFile' });

export const Deployment = z
  .object({
    id: z.string(),
    siteId: z.string(),
    digest: z.string().describe('SHA-256 of the manifest (its sorted lines "<path>\\0<sha256>\\n"): equal file sets, equal digests.'),
    fileCount: z.number().int(),
    totalBytes: z.number().int(),
    source: z.enum(['folder', 'files', 'archive']),
    folderId: Nullable(z.string()).describe('The drive folder it was deployed from.'),
    current: z.boolean().describe('Whether the site serves it now.'),
    createdAt: Timestamp,
    createdBy: Actor,
    files: z.array(SiteFile).optional().describe('The manifest, in path order (the answer of a deploy, and of GET of one deployment).'),
  })
  .meta({ id: 'Deployment' });

const actor = (a: drive_sites.SiteActor | undefined) => ({ kind: a?.kind ?? '', id: a?.id ?? '', keyId: a?.keyId ?? null });

export function siteView(s: drive_sites.Site): z.output<typeof Site> {
  return {
    id: s.id,
    slug: s.slug,
    title: s.title,
    projectId: s.projectId ?? null,
    currentDeploymentId: s.currentDeploymentId ?? null,
    path: `/sites/${s.slug}/`,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    createdBy: actor(s.createdBy),
  };
}

export function deploymentView(d: drive_sites.Deployment, withFiles: boolean): z.output<typeof Deployment> {
  return {
    id: d.id,
    siteId: d.siteId,
    digest: d.digest,
    fileCount: d.fileCount,
    totalBytes: d.totalBytes,
    source: d.source === 'folder' || d.source === 'archive' ? d.source : 'files',
    folderId: d.folderId ?? null,
    current: d.current,
    createdAt: d.createdAt,
    createdBy: actor(d.createdBy),
    // Field by field: the service's message carries more than the API shows.
    ...(withFiles ? { files: d.files.map((f) => ({ path: f.path, sha256: f.sha256, size: f.size, contentType: f.contentType })) } : {}),
  };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const UploadedFile = z
  .object({
    path: z.string().min(1).max(1024).describe('Path in the site, relative ("index.html", "css/site.css"); no "..", no leading "/".'),
    content: z.string().describe('The file’s content: text as is (encoding utf8), or base64 (encoding base64) for binary files.'),
    encoding: z.enum(['utf8', 'base64']).default('utf8').describe('How `content` is written: utf8 text (default) or base64 bytes.'),
  })
  .strict()
  .refine((f) => f.encoding !== 'base64' || BASE64.test(f.content), { message: 'content: not valid base64', path: ['content'] });

const DeployBody = z
  .object({
    folderId: FolderId.optional().describe('Deploy every file under this drive folder (paths relative to it).'),
    folderPath: z.string().min(1).max(4096).optional().describe('Or the folder by its path from the drive root ("www/public").'),
    projectId: ProjectId.optional().describe('With folderPath and an unscoped key: the project drive the path is in.'),
    files: z.array(UploadedFile).max(100_000).optional().describe('Or the files themselves.'),
    archive: z
      .object({
        format: z.enum(['zip', 'tar', 'tar.gz']).default('zip').describe('zip, tar (ustar or GNU) or tar.gz.'),
        content: z.string().regex(BASE64, 'not valid base64').describe('The archive, base64.'),
      })
      .strict()
      .optional()
      .describe('Or an archive of the files: zip, tar or tar.gz (paths as the archive names them; folders skipped).'),
  })
  .strict()
  .refine(
    (b) => [b.folderId, b.folderPath, b.files, b.archive].filter((x) => x !== undefined).length === 1,
    'name exactly one of folderId, folderPath, files, archive',
  )
  .meta({ id: 'DeploySiteRequest' });

const params = z.object({ id: SiteId.describe('The site’s id (site_…), as sites.create and sites.list answer it.') });

export const sitesRoutes = [
  route({
    id: 'sites.create',
    method: 'post',
    effect: 'creates',
    path: '/sites',
    summary:
      'Create a hosted site. Its slug names its public URL, /sites/<slug>/ (unique across the platform: 409 slug_taken). ' +
      'It serves nothing until a deploy.',
    errors: ['invalid_slug', 'project_scope', 'slug_taken'],
    tag: 'sites',
    body: z
      .object({
        slug: Slug,
        title: z.string().max(100).optional().describe('A label for people; not served.'),
        projectId: ProjectId.optional().describe('For an unscoped key: the project the site belongs to.'),
      })
      .strict()
      .meta({ id: 'CreateSiteRequest' }),
    response: Site,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.createSite',
      request: (i) => ({ slug: i.body.slug, title: i.body.title ?? '', projectId: i.body.projectId }),
      response: (res) => reply(siteView(res.site!), { status: 201, headers: { Location: `/v1/sites/${res.site!.id}` } }),
    },
  }),
  route({
    id: 'sites.list',
    method: 'get',
    path: '/sites',
    summary: 'The account’s static sites, oldest first, each with its slug, public URL and live deployment.',
    tag: 'sites',
    query: ListQuery,
    response: z.object({ sites: z.array(Site), nextCursor: Nullable(z.string()) }).meta({ id: 'SiteList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.listSites',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ sites: res.sites.map(siteView), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'sites.get',
    method: 'get',
    path: '/sites/:id',
    summary: 'One static site: its slug, title, public URL, live deployment and settings.',
    errors: ['site_not_found'],
    tag: 'sites',
    params,
    response: Site,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { rpc: 'drive.getSite', request: (i) => ({ id: i.params.id }), response: (res) => siteView(res.site!) },
  }),
  route({
    id: 'sites.delete',
    method: 'delete',
    path: '/sites/:id',
    summary: 'Delete a site and its deployments; its public URL answers 404 and its slug is free again.',
    errors: ['site_not_found'],
    tag: 'sites',
    params,
    response: z.object({ success: z.literal(true) }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { rpc: 'drive.deleteSite', request: (i) => ({ id: i.params.id }), response: () => ({ success: true as const }) },
  }),
  route({
    id: 'sites.deploy',
    method: 'post',
    effect: 'creates',
    path: '/sites/:id/deployments',
    summary:
      'Deploy a site: every file under a drive folder (`folderId` or `folderPath`), the files sent (`files`: path, content, ' +
      'encoding utf8 or base64), or an archive of them (`archive`: {format: "zip", "tar" or "tar.gz", content: base64}). The site switches to the new deployment at once and atomically; a deploy that fails (413 over ' +
      'the file-count or byte limit, 400 for a bad path) leaves the site serving what it served. index.html answers a folder; ' +
      'a 404.html is served for missing paths.',
    errors: ['duplicate_path', 'folder_not_found', 'invalid_archive', 'invalid_path', 'site_not_found', 'site_too_large'],
    tag: 'sites',
    params,
    body: DeployBody,
    bodyLimit: '15mb',
    response: Deployment,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.deploySite',
      request: (i) => ({
        siteId: i.params.id,
        folderId: i.body.folderId,
        folderPath: i.body.folderPath,
        projectId: i.body.projectId,
        files: (i.body.files ?? []).map((f: z.output<typeof UploadedFile>) => ({
          path: f.path,
          content: Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8'),
        })),
        ...(i.body.archive ? { archive: Buffer.from(i.body.archive.content, 'base64'), archiveFormat: i.body.archive.format } : {}),
      }),
      response: (res) => reply(deploymentView(res.deployment!, true), { status: 201 }),
      deadlineMs: 120_000,
    },
  }),
  route({
    id: 'sites.deployments.list',
    method: 'get',
    path: '/sites/:id/deployments',
    summary: 'A site’s deployments, newest first (without their files).',
    errors: ['site_not_found'],
    tag: 'sites',
    params,
    query: ListQuery,
    response: z.object({ deployments: z.array(Deployment), nextCursor: Nullable(z.string()) }).meta({ id: 'DeploymentList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.listDeployments',
      request: (i) => ({ siteId: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ deployments: res.deployments.map((d) => deploymentView(d, false)), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'sites.deployments.get',
    method: 'get',
    path: '/sites/:id/deployments/:deploymentId',
    summary: 'One deployment of a site with its files (paths, sizes and hashes) and when it went live.',
    errors: ['deployment_not_found', 'site_not_found'],
    tag: 'sites',
    params: z.object({ id: SiteId, deploymentId: DeploymentId }),
    response: Deployment,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.getDeployment',
      request: (i) => ({ siteId: i.params.id, deploymentId: i.params.deploymentId }),
      response: (res) => deploymentView(res.deployment!, true),
    },
  }),
  route({
    id: 'sites.rollback',
    method: 'post',
    effect: 'updates',
    path: '/sites/:id/rollback',
    summary: 'Serve an earlier deployment again, at once: `deploymentId`, or (body `{}`) the one deployed before the current one.',
    errors: ['deployment_not_found', 'no_earlier_deployment', 'site_not_found'],
    tag: 'sites',
    params,
    body: z.object({ deploymentId: DeploymentId.optional() }).strict().meta({ id: 'RollbackSiteRequest' }),
    response: Site,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.rollbackSite',
      request: (i) => ({ siteId: i.params.id, deploymentId: i.body.deploymentId }),
      response: (res) => siteView(res.site!),
    },
  }),
];
