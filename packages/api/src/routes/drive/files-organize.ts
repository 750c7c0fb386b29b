/** Drive routes that organise: folders by path, copies, versions, tags, archives, batches. */
import { z } from 'zod';

import type { drive_files } from '@svc/proto';

import { ListQuery, Nullable, route, Success, Timestamp } from '../../route.js';
import { DriveItem, driveItem, QUOTA_ERRORS } from './files.js';
import {
  CONTENT_DAMAGED,
  DrivePath,
  FileId,
  fileParams,
  FolderId,
  folderParams,
  idParams,
  IfMatch,
  ifMatchOf,
  ItemId,
  itemReply,
  Name,
  PathItems,
  pathItems,
  ProjectQuery,
} from './kit.js';
import { KEY } from './kit.js';

const VersionId = z.string().regex(/^ver_[0-9a-z]{26}$/, 'must be a version id (ver_…)');
const versionParams = z.object({ id: FileId.describe('The file’s id.'), versionId: VersionId.describe('The version’s id (ver_…).') });

const Version = z
  .object({
    id: z.string(),
    fileId: z.string(),
    sha256: z.string(),
    size: z.number().int(),
    contentType: z.string(),
    writtenAt: Timestamp.describe('When this content was written.'),
    writtenBy: z.object({ kind: z.string(), id: z.string() }),
    replacedAt: Timestamp.describe('When a later write replaced it.'),
  })
  .meta({ id: 'DriveVersion' });
const version = (v: drive_files.Version) => ({
  id: v.id,
  fileId: v.fileId,
  sha256: v.sha256,
  size: v.size,
  contentType: v.contentType,
  writtenAt: v.writtenAt,
  writtenBy: { kind: v.writtenByKind, id: v.writtenById },
  replacedAt: v.replacedAt,
});

const Tag = z.string().min(1).max(64).describe('1–64 letters, digits, spaces and _ . : / - (kept lowercase).');
const Tags = z.object({ id: z.string(), tags: z.array(z.string()) }).meta({ id: 'DriveTags' });

const Batch = z
  .object({
    results: z.array(
      z.object({
        id: z.string(),
        ok: z.boolean(),
        error: Nullable(z.object({ code: z.string(), message: z.string() })).describe('Why this item failed.'),
        deleted: z.number().int().optional().describe('Items deleted (with a folder’s members).'),
      }),
    ),
    succeeded: z.number().int(),
    failed: z.number().int(),
  })
  .meta({ id: 'DriveBatchResult' });
const batch = (r: drive_files.BatchResponse, deletes: boolean) => ({
  results: r.results.map((x) => ({
    id: x.id,
    ok: x.ok,
    error: x.ok ? null : { code: x.errorCode, message: x.errorMessage },
    ...(deletes ? { deleted: x.deleted } : {}),
  })),
  succeeded: r.succeeded,
  failed: r.failed,
});
const Ids = z.array(ItemId).min(1).max(100).meta({ uniqueItems: true }).describe('1 to 100 item ids, each once.');

export const driveOrganizeRoutes = [
  route({
    ...KEY,
    id: 'drive.makeFolders',
    statuses: { 201: 'The last folder was made (200: it was there already).' },
    method: 'post',
    effect: 'creates',
    path: '/drive/folders/path',
    summary: 'Make a folder path from the drive root, creating each missing folder (like mkdir -p); answers the last folder (201 if made).',
    errors: ['not_a_folder'],
    body: z.object({ path: DrivePath, projectId: ProjectQuery }).strict().meta({ id: 'MakeFoldersRequest' }),
    response: DriveItem,
    handler: {
      rpc: 'drive.makeFolders',
      request: (i) => ({ path: i.body.path, projectId: i.body.projectId }),
      response: (r) => itemReply(r, true),
    },
  }),
  route({
    ...KEY,
    id: 'drive.batchDelete',
    method: 'post',
    effect: 'deletes',
    path: '/drive/batch/delete',
    summary:
      'Delete up to 100 items, each on its own: one that fails (not found, a folder with members without `recursive`) does not stop the others.',
    body: z
      .object({ ids: Ids, recursive: z.boolean().default(false).describe('Delete folders with everything in them.') })
      .strict()
      .meta({ id: 'BatchDeleteRequest' }),
    response: Batch,
    handler: { rpc: 'drive.batchDelete', request: (i) => ({ ids: i.body.ids, recursive: i.body.recursive }), response: (r) => batch(r, true) },
  }),
  route({
    ...KEY,
    id: 'drive.batchMove',
    method: 'post',
    effect: 'updates',
    path: '/drive/batch/move',
    summary: 'Move up to 100 items into a folder (null: the root), each on its own; a name taken there fails that item only.',
    body: z
      .object({ ids: Ids, parentId: FolderId.nullable().describe('The target folder; null for the drive root.') })
      .strict()
      .meta({ id: 'BatchMoveRequest' }),
    response: Batch,
    handler: {
      rpc: 'drive.batchMove',
      request: (i) => ({ ids: i.body.ids, parentId: i.body.parentId ?? '', recursive: false }),
      response: (r) => batch(r, false),
    },
  }),
  route({
    ...KEY,
    id: 'drive.batchTag',
    method: 'post',
    effect: 'updates',
    path: '/drive/batch/tag',
    summary: 'Add and/or remove tags on up to 100 items, each on its own (one not found does not stop the others).',
    body: z
      .object({
        ids: Ids,
        add: z.array(Tag).max(50).default([]).describe('Tags to add to every item.'),
        remove: z.array(Tag).max(50).default([]).describe('Tags to take off every item.'),
      })
      .strict()
      .refine((b) => b.add.length + b.remove.length > 0, 'name tags to add or remove')
      .meta({ id: 'BatchTagRequest' }),
    response: Batch,
    handler: {
      rpc: 'drive.batchTag',
      request: (i) => ({ ids: i.body.ids, add: i.body.add, remove: i.body.remove }),
      response: (r) => batch(r, false),
    },
  }),
  route({
    ...KEY,
    id: 'drive.readMany',
    method: 'post',
    effect: 'reads',
    path: '/drive/batch/read',
    summary:
      'Read up to 50 small files at once (2 MiB together): each with its path, ETag and content (text, or base64 for binary), or its own error.',
    body: z
      .object({ ids: z.array(FileId).min(1).max(50).describe('1 to 50 file ids.') })
      .strict()
      .meta({ id: 'ReadManyRequest' }),
    response: z
      .object({
        files: z.array(
          z.object({
            id: z.string(),
            ok: z.boolean(),
            path: Nullable(z.string()),
            etag: Nullable(z.string()),
            content: Nullable(z.string()),
            encoding: Nullable(z.enum(['utf8', 'base64'])),
            error: Nullable(z.object({ code: z.string(), message: z.string() })),
          }),
        ),
      })
      .meta({ id: 'DriveReadMany' }),
    handler: {
      rpc: 'drive.readMany',
      request: (i) => ({ ids: i.body.ids }),
      response: (r) => ({
        files: r.files.map((f) =>
          f.ok
            ? { id: f.id, ok: true, path: f.path, etag: f.etag, content: f.content, encoding: f.encoding as 'utf8', error: null }
            : { id: f.id, ok: false, path: null, etag: null, content: null, encoding: null, error: { code: f.errorCode, message: f.errorMessage } },
        ),
      }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.tags.list',
    method: 'get',
    path: '/drive/tags',
    summary: 'Every tag in use, with how many items carry it.',
    query: z.object({ projectId: ProjectQuery }),
    response: z.object({ tags: z.array(z.object({ tag: z.string(), items: z.number().int() })) }).meta({ id: 'DriveTagCounts' }),
    handler: { rpc: 'drive.listTags', request: (i) => ({ projectId: i.query.projectId }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.tags.items',
    method: 'get',
    path: '/drive/tags/:tag/items',
    summary: 'The files and folders carrying a tag, with their paths.',
    params: z.object({ tag: Tag }),
    query: ListQuery.extend({ projectId: ProjectQuery }),
    response: PathItems,
    handler: {
      rpc: 'drive.taggedItems',
      request: (i) => ({ tag: i.params.tag, projectId: i.query.projectId, limit: i.query.limit, cursor: i.query.cursor }),
      response: pathItems,
    },
  }),
  route({
    ...KEY,
    id: 'drive.copy',
    statuses: {
      ...QUOTA_ERRORS,
      200: 'An item of that name was replaced (`overwrite`).',
      412: 'An item of that name is in the target folder and `overwrite` is not set (`name_taken`, with its current version).',
    },
    method: 'post',
    effect: 'creates',
    path: '/drive/:id/copy',
    summary: 'Copy a file, or a folder with everything in it, into a folder (default: the same one) under a name (default: "Copy of <name>").',
    errors: ['invalid_name', 'item_not_found', 'name_taken', 'quota_exceeded'],
    params: idParams,
    body: z
      .object({
        parentId: FolderId.nullable().optional().describe('The target folder (null: the root; absent: the same folder).'),
        name: Name.optional(),
        overwrite: z.boolean().default(false).describe('Replace an item holding the name (else 412 name_taken).'),
      })
      .strict()
      .meta({ id: 'CopyItemRequest' }),
    response: DriveItem,
    status: 201,
    handler: {
      rpc: 'drive.copyItem',
      request: (i) => ({
        id: i.params.id,
        parentId: i.body.parentId === null ? '' : i.body.parentId,
        name: i.body.name ?? '',
        overwrite: i.body.overwrite,
        recursive: true,
        lockTokens: [],
        besideSource: i.body.parentId === undefined,
      }),
      response: (r) => itemReply(r, true),
    },
  }),
  route({
    ...KEY,
    id: 'drive.versions.list',
    method: 'get',
    path: '/drive/:id/versions',
    summary: 'A file’s earlier contents, newest first: each write that replaced it kept the content before (the latest 20).',
    errors: ['item_not_found'],
    params: fileParams,
    query: ListQuery,
    response: z.object({ versions: z.array(Version), nextCursor: Nullable(z.string()) }).meta({ id: 'DriveVersionList' }),
    handler: {
      rpc: 'drive.listVersions',
      request: (i) => ({ id: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({ versions: r.versions.map(version), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.versions.get',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/:id/versions/:versionId',
    summary: 'An earlier version of a file with its content (text as is, binary as base64; at most 5 MiB).',
    errors: ['content_damaged', 'item_not_found', 'version_not_found'],
    params: versionParams,
    response: z.object({ version: Version, content: z.string(), encoding: z.enum(['utf8', 'base64']) }).meta({ id: 'DriveVersionContent' }),
    handler: {
      rpc: 'drive.readVersion',
      request: (i) => ({ id: i.params.id, versionId: i.params.versionId }),
      response: (r) => ({ version: version(r.version!), content: r.content, encoding: r.encoding as 'utf8' }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.versions.restore',
    statuses: { ...QUOTA_ERRORS, 500: CONTENT_DAMAGED },
    method: 'post',
    effect: 'updates',
    path: '/drive/:id/versions/:versionId/restore',
    summary: 'Make an earlier version the file’s content again (as a new write: the content it replaces becomes a version).',
    errors: ['content_damaged', 'item_not_found', 'precondition_failed'],
    params: versionParams,
    headers: IfMatch,
    body: z.object({}).strict().optional(),
    response: DriveItem,
    handler: {
      rpc: 'drive.restoreVersion',
      request: (i) => ({ id: i.params.id, versionId: i.params.versionId, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.versions.delete',
    method: 'delete',
    path: '/drive/:id/versions/:versionId',
    summary: 'Forget an earlier version of a file (its content goes unless something else holds it).',
    errors: ['item_not_found'],
    params: versionParams,
    response: Success,
    handler: {
      rpc: 'drive.deleteVersion',
      request: (i) => ({ id: i.params.id, versionId: i.params.versionId }),
      response: () => ({ success: true as const }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.tags.get',
    method: 'get',
    path: '/drive/:id/tags',
    summary: 'The tags of a drive file or folder (the labels set with the tag tools).',
    errors: ['item_not_found'],
    params: idParams,
    response: Tags,
    handler: { rpc: 'drive.getTags', request: (i) => ({ id: i.params.id, includeDetails: false }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.tags.set',
    method: 'put',
    effect: 'overwrites',
    path: '/drive/:id/tags',
    summary: 'Replace an item’s tags with these (an empty list removes them all).',
    errors: ['invalid_tag', 'item_not_found'],
    params: idParams,
    body: z
      .object({ tags: z.array(Tag).max(50).describe('The item’s tags from now on (at most 50); [] removes them all.') })
      .strict()
      .meta({ id: 'SetTagsRequest' }),
    response: Tags,
    handler: { rpc: 'drive.setTags', request: (i) => ({ id: i.params.id, tags: i.body.tags, replace: true }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.tags.add',
    method: 'post',
    effect: 'creates',
    path: '/drive/:id/tags',
    summary: 'Add tags to an item (those it has stay).',
    errors: ['item_not_found'],
    params: idParams,
    body: z
      .object({ tags: z.array(Tag).min(1).max(50).describe('Tags to add; those it has already are kept once.') })
      .strict()
      .meta({ id: 'AddTagsRequest' }),
    response: Tags,
    handler: { rpc: 'drive.setTags', request: (i) => ({ id: i.params.id, tags: i.body.tags, replace: false }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.tags.remove',
    method: 'delete',
    path: '/drive/:id/tags/:tag',
    summary: 'Remove a tag from an item (not there: nothing to do).',
    errors: ['item_not_found'],
    params: idParams.extend({ tag: Tag }),
    response: Tags,
    handler: { rpc: 'drive.removeTags', request: (i) => ({ id: i.params.id, tags: [i.params.tag], replace: false }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.zip',
    statuses: {
      500: CONTENT_DAMAGED,
      412: 'An item of that name is in the target folder (`name_taken`, with its current version).',
    },
    method: 'post',
    effect: 'creates',
    path: '/drive/:id/zip',
    summary: 'Zip a folder with everything in it into a new file (default: "<folder>.zip" next to the folder; at most 5 MiB of files).',
    errors: ['content_damaged', 'item_not_found', 'name_taken'],
    params: folderParams,
    body: z
      .object({
        name: Name.optional().describe('The archive’s name.'),
        parentId: FolderId.optional().describe('Where it goes (default: the folder’s parent).'),
      })
      .strict()
      .meta({ id: 'ZipFolderRequest' }),
    response: DriveItem,
    status: 201,
    handler: {
      rpc: 'drive.zipFolder',
      request: (i) => ({ id: i.params.id, name: i.body.name, parentId: i.body.parentId }),
      response: (r) => itemReply(r, true),
    },
  }),
  route({
    ...KEY,
    id: 'drive.extract',
    statuses: {
      ...QUOTA_ERRORS,
      409: 'A name an entry writes is taken (`name_taken`: a file there without `overwrite`, or a file where the archive has a folder); the files it wrote until then stay.',
      500: CONTENT_DAMAGED,
    },
    method: 'post',
    effect: 'creates',
    path: '/drive/:id/extract',
    summary:
      'Extract a zip, tar or tar.gz file into a folder: a new folder named after the archive, next to it, unless `parentId` names one. ' +
      'Entries leaving their folder ("..") fail the whole call before anything is written.',
    errors: ['content_damaged', 'invalid_archive', 'invalid_name', 'item_not_found', 'name_taken', 'quota_exceeded'],
    params: fileParams,
    body: z
      .object({
        parentId: FolderId.optional().describe('Extract into this folder.'),
        format: z.enum(['zip', 'tar']).optional().describe('Default: from the name (.zip, .tar, .tgz, .tar.gz).'),
        overwrite: z.boolean().default(false).describe('Replace files that exist (else a taken name fails with 409).'),
      })
      .strict()
      .meta({ id: 'ExtractArchiveRequest' }),
    response: z
      .object({ folder: DriveItem, files: z.number().int(), folders: z.number().int().describe('Folders made.') })
      .meta({ id: 'ExtractArchiveResult' }),
    status: 201,
    handler: {
      rpc: 'drive.extractArchive',
      request: (i) => ({ id: i.params.id, parentId: i.body.parentId, format: i.body.format ?? '', overwrite: i.body.overwrite }),
      response: (r) => ({ folder: driveItem(r.folder!), files: r.files, folders: r.folders }),
      deadlineMs: 60_000,
    },
  }),
];
