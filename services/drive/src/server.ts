import { DomainError, type Handlers } from '@svc/kit';
import type { drive } from '@svc/proto';

import { fileHandlers } from './files/server.js';
import { type DriveDomain, systemOnly } from './items/domain.js';
import { openContent } from './items/download.js';
import { lockItem, setProperties, unlockItem } from './items/properties-locks.js';
import { getItem, listItems, resolvePath } from './items/reads.js';
import { copyItem, createFolder, deleteItem, updateItem } from './items/tree.js';
import type { UploadHeader } from './items/types.js';
import { abortUpload, beginUpload, commitUpload } from './items/uploads.js';
import { toItem, toLock } from './items/views.js';
import type { Domains } from './sites/domains.js';
import { siteHandlers } from './sites/server.js';
import type { Sites } from './sites/sites.js';

export { toItem, toLock } from './items/views.js';

function uploadHeader(h: drive.UploadHeader | undefined): UploadHeader {
  if (!h) throw new DomainError('invalid_argument', 'invalid_upload', 'An upload names its header.');
  return {
    itemId: h.itemId || undefined,
    parentId: h.parentId || undefined,
    name: h.name,
    projectId: h.projectId || undefined,
    contentType: h.contentType || undefined,
    declaredSize: h.declaredSize,
    ifMatch: h.ifMatch,
    ifNoneMatch: h.ifNoneMatch,
    requirePrecondition: h.requirePrecondition,
    overwrite: h.overwrite,
    lockTokens: h.lockTokens,
  };
}

/** gRPC handlers of the unary methods: translate messages, let the domain decide. */
export function handlers(domain: DriveDomain, sites: Sites, domains: Domains): Handlers<typeof drive.DriveServiceService> {
  return {
    ...siteHandlers(sites, domains),
    ...fileHandlers(domain),
    async listItems(req, ctx) {
      const { items, nextCursor } = await listItems(domain, ctx.principal, { ...req, full: req.includeDetails });
      return { items: items.map(toItem), nextCursor };
    },
    async getItem(req, ctx) {
      return { item: toItem(await getItem(domain, ctx.principal, req.id, req.includeDetails)), created: false };
    },
    async resolvePath(req, ctx) {
      const r = await resolvePath(domain, ctx.principal, { ...req, full: req.includeDetails });
      return { item: r.item && toItem(r.item), parentExists: r.parentExists, parent: r.parent && toItem(r.parent) };
    },
    async createFolder(req, ctx) {
      return { item: toItem({ row: await createFolder(domain, ctx.principal, req) }), created: true };
    },
    async updateItem(req, ctx) {
      const { row, created } = await updateItem(domain, ctx.principal, req);
      return { item: toItem({ row }), created };
    },
    async deleteItem(req, ctx) {
      return { deleted: await deleteItem(domain, ctx.principal, req) };
    },
    async copyItem(req, ctx) {
      const { row, created } = await copyItem(domain, ctx.principal, req);
      return { item: toItem({ row }), created };
    },
    async setProperties(req, ctx) {
      return { item: toItem(await setProperties(domain, ctx.principal, req)), created: false };
    },
    async lockItem(req, ctx) {
      const { lock, item, created } = await lockItem(domain, ctx.principal, req);
      return { lock: toLock(lock), item: toItem(item), created };
    },
    async unlockItem(req, ctx) {
      await unlockItem(domain, ctx.principal, req);
      return {};
    },
    async beginUpload(req, ctx) {
      return beginUpload(domain, ctx.principal, uploadHeader(req));
    },
    async commitUpload(req, ctx) {
      const { row, created } = await commitUpload(domain, ctx.principal, uploadHeader(req.header), {
        uploadId: req.uploadId,
        sha256: req.sha256,
        size: req.size,
        crc32: req.crc32,
      });
      return { item: toItem({ row }), created };
    },
    async abortUpload(req, ctx) {
      await abortUpload(domain, ctx.principal, req.uploadId);
      return {};
    },
    async openContent(req, ctx) {
      const r = await openContent(domain, ctx.principal, req);
      return {
        header: {
          item: toItem({ row: r.item }),
          notModified: r.notModified,
          partial: r.partial,
          rangeNotSatisfiable: r.rangeNotSatisfiable,
          start: r.start,
          end: r.end,
        },
        blobKey: r.blobKey ?? '',
        crc32: r.crc32,
      };
    },
    async collectGarbage(req, ctx) {
      systemOnly(ctx);
      const r = await domain.collect(req.graceSeconds);
      return { blobsRemoved: r.blobs, uploadsRemoved: r.uploads, locksRemoved: r.locks };
    },
  };
}
