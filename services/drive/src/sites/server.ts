/** gRPC handlers of the sites methods of DriveService: translate messages, let the rules decide. */
import type { CallContext } from '@svc/kit';
import type { drive_sites } from '@svc/proto';

import { contentKey } from '../items/content.js';
import { systemOnly } from '../items/domain.js';
import type { Actor } from '../items/store.js';
import { type DeploymentView, deploySite, getDeployment, listDeployments, rollbackSite } from './deploy.js';
import { addDomain, type Domains, domainServed, domainView, listDomains, removeDomain, verifyDomain } from './domains.js';
import { checkLinks, deleteDeployment, deleteRedirect, diffDeployments, listRedirects, readSiteFile, setRedirects, updateSite } from './manage.js';
import { openSiteFile } from './serve.js';
import { createSite, deleteSite, listSites, type Sites } from './sites.js';
import type { SiteFileRow, SiteRow } from './store.js';

const actor = (a: Actor): drive_sites.SiteActor => ({ kind: a.kind, id: a.id, keyId: a.keyId ?? undefined });

export function toSite(s: SiteRow): drive_sites.Site {
  return {
    id: s.id,
    slug: s.slug,
    title: s.title,
    projectId: s.project_id ?? undefined,
    currentDeploymentId: s.current_deployment_id ?? undefined,
    createdAt: s.created_at.toISOString(),
    updatedAt: s.updated_at.toISOString(),
    createdBy: actor(s.created_by),
    spaFallback: s.spa_fallback,
  };
}

function toDomain(d: ReturnType<typeof domainView>): drive_sites.SiteDomain {
  return {
    domain: d.domain,
    siteId: d.siteId,
    status: d.status,
    txtName: d.txtName,
    txtValue: d.txtValue,
    verifiedAt: d.verifiedAt?.toISOString(),
    lastCheckedAt: d.lastCheckedAt?.toISOString(),
    lastCheckError: d.lastCheckError ?? undefined,
    missingSince: d.missingSince?.toISOString(),
    createdAt: d.createdAt.toISOString(),
    createdBy: actor(d.createdBy),
  };
}

const toFile = (f: SiteFileRow): drive_sites.SiteFile => ({ path: f.path, sha256: f.sha256, size: f.size, contentType: f.content_type });

export function toDeployment(d: DeploymentView): drive_sites.Deployment {
  const r = d.row;
  return {
    id: r.id,
    siteId: r.site_id,
    digest: r.digest,
    fileCount: r.file_count,
    totalBytes: r.total_bytes,
    source: r.source,
    folderId: r.folder_id ?? undefined,
    createdAt: r.created_at.toISOString(),
    createdBy: actor(r.created_by),
    current: d.current,
    files: (d.files ?? []).map(toFile),
  };
}

/** The sites methods, spread into the drive's handlers (server.ts). */
export function siteHandlers(sites: Sites, domains: Domains) {
  return {
    async createSite(req: drive_sites.CreateSiteRequest, ctx: CallContext): Promise<drive_sites.SiteResponse> {
      return { site: toSite(await createSite(sites, ctx.principal, req)) };
    },
    async listSites(req: drive_sites.ListSitesRequest, ctx: CallContext): Promise<drive_sites.ListSitesResponse> {
      const r = await listSites(sites, ctx.principal, req);
      return { sites: r.sites.map(toSite), nextCursor: r.nextCursor };
    },
    async getSite(req: drive_sites.GetSiteRequest, ctx: CallContext): Promise<drive_sites.SiteResponse> {
      // The Git front names a site by its slug or its id (a slug never holds "_", an id always does).
      const id = req.id.includes('_') ? req.id : ((await sites.store.siteBySlug(sites.drive.sql, req.id))?.id ?? 'site_none');
      return { site: toSite(await sites.visible(sites.drive.sql, ctx.principal, id)) };
    },
    async deleteSite(req: drive_sites.DeleteSiteRequest, ctx: CallContext): Promise<drive_sites.DeleteSiteResponse> {
      await deleteSite(sites, ctx.principal, req.id);
      return {};
    },
    async deploySite(req: drive_sites.DeploySiteRequest, ctx: CallContext): Promise<drive_sites.DeploymentResponse> {
      const d = await deploySite(sites, ctx.principal, {
        siteId: req.siteId,
        folderId: req.folderId || undefined,
        folderPath: req.folderPath,
        files: req.files.map((f) => ({ path: f.path, content: Buffer.from(f.content) })),
        projectId: req.projectId || undefined,
        archive: req.archive ? { format: req.archiveFormat ?? '', content: Buffer.from(req.archive) } : undefined,
      });
      return { deployment: toDeployment(d) };
    },
    async listDeployments(req: drive_sites.ListDeploymentsRequest, ctx: CallContext): Promise<drive_sites.ListDeploymentsResponse> {
      const r = await listDeployments(sites, ctx.principal, req);
      return { deployments: r.deployments.map(toDeployment), nextCursor: r.nextCursor };
    },
    async getDeployment(req: drive_sites.GetDeploymentRequest, ctx: CallContext): Promise<drive_sites.DeploymentResponse> {
      const d = await getDeployment(sites, ctx.principal, req);
      const deployment = toDeployment(d);
      // Where each file's bytes are (the Git front reads them to give a clone the deployed files).
      for (const f of deployment.files) f.blobKey = contentKey(ctx.principal.accountId, f.sha256);
      return { deployment };
    },
    async rollbackSite(req: drive_sites.RollbackSiteRequest, ctx: CallContext): Promise<drive_sites.SiteResponse> {
      return { site: toSite(await rollbackSite(sites, ctx.principal, { siteId: req.siteId, deploymentId: req.deploymentId || undefined })) };
    },
    async updateSite(req: drive_sites.UpdateSiteRequest, ctx: CallContext): Promise<drive_sites.SiteResponse> {
      return { site: toSite(await updateSite(sites, ctx.principal, req)) };
    },
    async deleteDeployment(req: drive_sites.GetDeploymentRequest, ctx: CallContext): Promise<drive_sites.DeleteDeploymentResponse> {
      await deleteDeployment(sites, ctx.principal, req);
      return {};
    },
    async diffDeployments(req: drive_sites.DiffDeploymentsRequest, ctx: CallContext): Promise<drive_sites.DiffDeploymentsResponse> {
      const r = await diffDeployments(sites, ctx.principal, { siteId: req.siteId, fromId: req.fromId, toId: req.toId || undefined });
      return { ...r, added: r.added.map(toFile), removed: r.removed.map(toFile), changed: r.changed.map(toFile) };
    },
    async readSiteFile(req: drive_sites.ReadSiteFileRequest, ctx: CallContext): Promise<drive_sites.ReadSiteFileResponse> {
      const r = await readSiteFile(sites, ctx.principal, { ...req, deploymentId: req.deploymentId || undefined });
      return { ...r, file: toFile(r.file) };
    },
    async checkLinks(req: drive_sites.CheckLinksRequest, ctx: CallContext): Promise<drive_sites.CheckLinksResponse> {
      return checkLinks(sites, ctx.principal, { siteId: req.siteId, deploymentId: req.deploymentId || undefined });
    },
    async listRedirects(req: drive_sites.SiteRedirectsRequest, ctx: CallContext): Promise<drive_sites.RedirectsResponse> {
      return { redirects: await listRedirects(sites, ctx.principal, req.siteId) };
    },
    async setRedirects(req: drive_sites.SetRedirectsRequest, ctx: CallContext): Promise<drive_sites.RedirectsResponse> {
      return { redirects: await setRedirects(sites, ctx.principal, req) };
    },
    async deleteRedirect(req: drive_sites.DeleteRedirectRequest, ctx: CallContext): Promise<drive_sites.RedirectsResponse> {
      return { redirects: await deleteRedirect(sites, ctx.principal, req) };
    },
    async openSiteFile(req: drive_sites.OpenSiteFileRequest, ctx: CallContext): Promise<drive_sites.OpenSiteFileResponse> {
      systemOnly(ctx);
      const r = await openSiteFile(sites, { ...req, domain: req.domain || undefined });
      return {
        outcome: r.outcome,
        file: r.file && toFile(r.file),
        notModified: r.notModified,
        blobKey: r.blobKey ?? '',
        location: r.location ?? '',
        noSite: r.noSite ?? false,
        crc32: r.crc32,
      };
    },
    async addSiteDomain(req: drive_sites.AddSiteDomainRequest, ctx: CallContext): Promise<drive_sites.SiteDomainResponse> {
      const r = await addDomain(domains, ctx.principal, req);
      return { domain: toDomain(domainView(r.row)), created: r.created };
    },
    async listSiteDomains(req: drive_sites.ListSiteDomainsRequest, ctx: CallContext): Promise<drive_sites.ListSiteDomainsResponse> {
      return { domains: (await listDomains(domains, ctx.principal, req.siteId)).map((d) => toDomain(domainView(d))) };
    },
    async verifySiteDomain(req: drive_sites.SiteDomainRequest, ctx: CallContext): Promise<drive_sites.SiteDomainResponse> {
      return { domain: toDomain(domainView(await verifyDomain(domains, ctx.principal, req))), created: false };
    },
    async removeSiteDomain(req: drive_sites.SiteDomainRequest, ctx: CallContext): Promise<drive_sites.RemoveSiteDomainResponse> {
      await removeDomain(domains, ctx.principal, req);
      return {};
    },
    async resolveSiteDomain(req: drive_sites.ResolveSiteDomainRequest, ctx: CallContext): Promise<drive_sites.ResolveSiteDomainResponse> {
      systemOnly(ctx);
      return { served: await domainServed(domains, req.domain) };
    },
  };
}
