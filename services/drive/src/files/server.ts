/** gRPC handlers of the file tools (files.proto): translate messages, let the functions decide. */
import { AccountLimiter, type CallContext } from '@svc/kit';
import type { drive, drive_files } from '@svc/proto';

import type { DriveDomain } from '../items/domain.js';
import { toItem } from '../items/views.js';
import { extractArchive, zipFolder } from './archives.js';
import { batchDelete, batchMove, batchTag, readMany } from './batch.js';
import { grep } from './grep.js';
import { getJson, mergeJson, setJson } from './json.js';
import { ancestors, duplicates, findItems, folderSize, makeFolders, type PathItem, recentFiles, statPath, tree, usage } from './paths.js';
import type { VersionRow } from './store.js';
import { getTags, listTags, removeTags, setTags, taggedItems } from './tags.js';
import { appendText, diffFiles, editText, readCsv, readLines, replaceLines, textStats, writeText } from './text.js';
import { deleteVersion, diffVersion, listVersions, readVersion, restoreVersion } from './versions.js';

const pathItem = (i: PathItem): drive.PathItem => ({ item: toItem({ row: i.row }), path: i.path, depth: i.depth });
const items = (r: { items: PathItem[]; truncated?: boolean; nextCursor?: string }): drive.PathItemsResponse => ({
  items: r.items.map(pathItem),
  truncated: r.truncated ?? false,
  nextCursor: r.nextCursor,
});
const version = (v: VersionRow): drive_files.Version => ({
  id: v.id,
  fileId: v.item_id,
  sha256: v.sha256,
  size: v.size,
  contentType: v.content_type,
  writtenAt: v.written_at.toISOString(),
  writtenByKind: v.written_by.kind,
  writtenById: v.written_by.id,
  replacedAt: v.replaced_at.toISOString(),
});
const itemResponse = (r: { row: Parameters<typeof toItem>[0]['row']; created?: boolean }): drive.ItemResponse => ({
  item: toItem({ row: r.row }),
  created: r.created ?? false,
});
const opt = (v: string | undefined) => v || undefined;

export function fileHandlers(d: DriveDomain) {
  // Whole-drive scans, each bounded on its own, are also capped per account (docs/reliability.md, "Fair shares").
  const scans = new AccountLimiter({
    name: 'drive_scans',
    what: 'drive scans (grep, find, duplicates, folder size, zip, extract)',
    perAccount: d.settings.scansPerAccount,
  });
  const scan = <T>(ctx: CallContext, fn: () => Promise<T>) => scans.run(ctx.principal, fn);
  return {
    async statPath(req: drive.StatPathRequest, ctx: CallContext) {
      return pathItem(await statPath(d, ctx.principal, { path: req.path, projectId: opt(req.projectId) }));
    },
    async itemAncestors(req: drive.GetItemRequest, ctx: CallContext) {
      return items({ items: await ancestors(d, ctx.principal, req.id) });
    },
    async tree(req: drive.TreeRequest, ctx: CallContext) {
      return items(
        await tree(d, ctx.principal, { folderId: opt(req.folderId), projectId: opt(req.projectId), maxDepth: req.maxDepth, limit: req.limit }),
      );
    },
    async findItems(req: drive.FindItemsRequest, ctx: CallContext) {
      return items(await scan(ctx, () => findItems(d, ctx.principal, { ...req, folderId: opt(req.folderId), projectId: opt(req.projectId) })));
    },
    async recentFiles(req: drive.RecentFilesRequest, ctx: CallContext) {
      return items(await recentFiles(d, ctx.principal, { projectId: opt(req.projectId), limit: req.limit, cursor: opt(req.cursor) }));
    },
    async makeFolders(req: drive.MakeFoldersRequest, ctx: CallContext) {
      return itemResponse(await makeFolders(d, ctx.principal, { path: req.path, projectId: opt(req.projectId) }));
    },
    async readLines(req: drive_files.ReadLinesRequest, ctx: CallContext) {
      return readLines(d, ctx.principal, req);
    },
    async textStats(req: drive.GetItemRequest, ctx: CallContext) {
      return textStats(d, ctx.principal, req.id);
    },
    async grep(req: drive_files.GrepRequest, ctx: CallContext) {
      return scan(ctx, () =>
        grep(d, ctx.principal, { ...req, folderId: opt(req.folderId), projectId: opt(req.projectId), nameGlob: opt(req.nameGlob) }, ctx.signal),
      );
    },
    async diffFiles(req: drive_files.DiffRequest, ctx: CallContext) {
      return diffFiles(d, ctx.principal, req);
    },
    async readCsv(req: drive_files.ReadCsvRequest, ctx: CallContext) {
      return readCsv(d, ctx.principal, req);
    },
    async getJson(req: drive_files.GetJsonRequest, ctx: CallContext) {
      return getJson(d, ctx.principal, req);
    },
    async writeText(req: drive.WriteTextRequest, ctx: CallContext) {
      return itemResponse(await writeText(d, ctx.principal, { ...req, projectId: opt(req.projectId), contentType: opt(req.contentType) }));
    },
    async appendText(req: drive.AppendTextRequest, ctx: CallContext) {
      return itemResponse({ row: await appendText(d, ctx.principal, req) });
    },
    async editText(req: drive.EditTextRequest, ctx: CallContext) {
      const r = await editText(d, ctx.principal, req);
      return { item: toItem({ row: r.row }), replacements: r.replacements };
    },
    async replaceLines(req: drive.ReplaceLinesRequest, ctx: CallContext) {
      return itemResponse({ row: await replaceLines(d, ctx.principal, req) });
    },
    async setJson(req: drive.SetJsonRequest, ctx: CallContext) {
      return itemResponse({ row: await setJson(d, ctx.principal, req) });
    },
    async mergeJson(req: drive.MergeJsonRequest, ctx: CallContext) {
      return itemResponse({ row: await mergeJson(d, ctx.principal, req) });
    },
    async folderSize(req: drive.GetItemRequest, ctx: CallContext) {
      return scan(ctx, () => folderSize(d, ctx.principal, req.id));
    },
    async usage(req: drive_files.UsageRequest, ctx: CallContext) {
      return usage(d, ctx.principal, opt(req.projectId));
    },
    async duplicates(req: drive_files.DuplicatesRequest, ctx: CallContext) {
      return scan(ctx, () => duplicates(d, ctx.principal, { projectId: opt(req.projectId), limit: req.limit, minSize: req.minSize }));
    },
    async listVersions(req: drive_files.ListVersionsRequest, ctx: CallContext) {
      const r = await listVersions(d, ctx.principal, { id: req.id, limit: req.limit, cursor: opt(req.cursor) });
      return { versions: r.versions.map(version), nextCursor: r.nextCursor };
    },
    async readVersion(req: drive_files.VersionRequest, ctx: CallContext) {
      const r = await readVersion(d, ctx.principal, req);
      return { version: version(r.version), content: r.content, encoding: r.encoding };
    },
    async restoreVersion(req: drive_files.VersionRequest, ctx: CallContext) {
      return itemResponse(await restoreVersion(d, ctx.principal, req));
    },
    async deleteVersion(req: drive_files.VersionRequest, ctx: CallContext) {
      await deleteVersion(d, ctx.principal, req);
      return {};
    },
    async diffVersion(req: drive_files.VersionRequest, ctx: CallContext) {
      return diffVersion(d, ctx.principal, req);
    },
    async getTags(req: drive.GetItemRequest, ctx: CallContext) {
      return getTags(d, ctx.principal, req.id);
    },
    async setTags(req: drive_files.TagsRequest, ctx: CallContext) {
      return setTags(d, ctx.principal, req, req.replace);
    },
    async removeTags(req: drive_files.TagsRequest, ctx: CallContext) {
      return removeTags(d, ctx.principal, req);
    },
    async listTags(req: drive_files.ListTagsRequest, ctx: CallContext) {
      return { tags: await listTags(d, ctx.principal, opt(req.projectId)) };
    },
    async taggedItems(req: drive.TaggedItemsRequest, ctx: CallContext) {
      return items(await taggedItems(d, ctx.principal, { tag: req.tag, projectId: opt(req.projectId), limit: req.limit, cursor: opt(req.cursor) }));
    },
    async zipFolder(req: drive.ZipFolderRequest, ctx: CallContext) {
      return itemResponse(await scan(ctx, () => zipFolder(d, ctx.principal, { id: req.id, parentId: opt(req.parentId), name: opt(req.name) })));
    },
    async extractArchive(req: drive.ExtractArchiveRequest, ctx: CallContext) {
      const r = await scan(ctx, () => extractArchive(d, ctx.principal, { ...req, parentId: opt(req.parentId) }));
      return { folder: toItem({ row: r.folder }), files: r.files, folders: r.folders };
    },
    async batchDelete(req: drive_files.BatchRequest, ctx: CallContext) {
      return batchDelete(d, ctx.principal, req);
    },
    async batchTag(req: drive_files.BatchTagRequest, ctx: CallContext) {
      return batchTag(d, ctx.principal, req);
    },
    async readMany(req: drive_files.ReadManyRequest, ctx: CallContext) {
      return readMany(d, ctx.principal, req.ids);
    },
    async batchMove(req: drive_files.BatchRequest, ctx: CallContext) {
      return batchMove(d, ctx.principal, { ids: req.ids, parentId: req.parentId });
    },
  };
}
