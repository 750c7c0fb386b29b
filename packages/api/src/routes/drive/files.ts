import { z } from 'zod';

import type { drive } from '@svc/proto';

import { ListQuery, Nullable, ProjectId, reply, route, type RouteInput, Timestamp } from '../../route.js';
import { DriveItemId, FolderId, Name } from './ids.js';

export { DriveItemId };

/** The error answers of a write that adds to the drive (docs/drive.md, "Quotas"): a route's `statuses`. */
export const QUOTA_ERRORS: Record<number, string> = {
  413: 'Over the account’s storage quota: `quota_exceeded`, naming the quota (`bytesLive`), its limit, the bytes used and the bytes the write adds; nothing was written. A content body may also be over the file size limit (`file_too_large`).',
  429: 'Over the account’s content writes a minute: `write_rate_exceeded`, with `Retry-After` (seconds until the minute is over); or too many requests.',
};

const Actor = z
  .object({
    kind: z.string().describe('human or agent'),
    id: z.string().describe('The user or agent id.'),
    keyId: Nullable(z.string()).describe('The API key used.'),
  })
  .meta({ id: 'DriveActor' });

export const DriveItem = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(['file', 'folder']),
    parentId: Nullable(z.string()).describe('The folder it is in; null at the root.'),
    projectId: Nullable(z.string()).describe('The project drive it belongs to; null for the account drive.'),
    size: Nullable(z.number().int()).describe('Bytes (files).'),
    contentType: Nullable(z.string()),
    sha256: Nullable(z.string()).describe('Hex SHA-256 of the content (files).'),
    etag: z.string().describe('The ETag: for a file, the quoted sha256 of its content.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    createdBy: Actor,
    updatedBy: Actor.describe('Who last wrote it.'),
  })
  .meta({ id: 'DriveItem' });

export const DriveList = z.object({ items: z.array(DriveItem), nextCursor: Nullable(z.string()) }).meta({ id: 'DriveItemList' });

const actor = (a: drive.Item['updatedBy']) => ({ kind: a?.kind ?? '', id: a?.id ?? '', keyId: a?.keyId ?? null });

/** A drive item as the API shows it. */
export function driveItem(i: drive.Item): z.output<typeof DriveItem> {
  const file = i.kind === 'file';
  return {
    id: i.id,
    name: i.name,
    kind: file ? 'file' : 'folder',
    parentId: i.parentId ?? null,
    projectId: i.projectId ?? null,
    size: file ? i.size : null,
    contentType: i.contentType ?? null,
    sha256: i.sha256 ?? null,
    etag: i.etag,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    createdBy: actor(i.createdBy),
    updatedBy: actor(i.updatedBy),
  };
}

/** An item answer with its ETag (and a status). */
const withEtag = (res: drive.ItemResponse, status?: number) => reply(driveItem(res.item!), { status, headers: { ETag: res.item!.etag } });

const Preconditions = z.object({
  'if-match': z.string().max(2000).optional().describe('`"<etag>"` of the version this write replaces.'),
  'if-none-match': z.string().max(2000).optional().describe('`*`: create only if the name is free.'),
});
const IfMatch = z.object({ 'if-match': z.string().max(2000).optional().describe('`"<etag>"` of the version read.') });

const params = z.object({ id: DriveItemId });
const Booleanish = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');

const ifMatchOf = (i: RouteInput<unknown, unknown, unknown, { 'if-match'?: string }>) => i.headers['if-match'] ?? undefined;

export const driveRoutes = [
  route({
    id: 'drive.list',
    method: 'get',
    path: '/drive',
    summary: 'List a folder (`?parentId=`; the root without it), folders first, then by name.',
    errors: ['account_not_found', 'folder_not_found', 'invalid_cursor', 'project_scope'],
    tag: 'drive',
    query: ListQuery.extend({
      parentId: FolderId.optional(),
      projectId: ProjectId.optional().describe('For an unscoped key: list that project’s drive root.'),
    }),
    response: DriveList,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.listItems',
      request: (i) => ({
        parentId: i.query.parentId,
        projectId: i.query.projectId,
        limit: i.query.limit,
        cursor: i.query.cursor,
        includeDetails: false,
      }),
      response: (res) => ({
        items: res.items.map(driveItem),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    id: 'drive.upload',
    statuses: {
      ...QUOTA_ERRORS,
      200: 'A file of that name was replaced (with `If-Match`).',
    },
    method: 'post',
    effect: 'creates',
    path: '/drive/upload',
    summary:
      'Upload a new file: the raw body with `?name=&parentId=`, or multipart/form-data (the first file part; ' +
      '`name`, `parentId` fields). `If-None-Match: *` makes a taken name a 412; without a precondition it is a 409. ' +
      '`If-Match` replaces the file of that name if it is still that version.',
    errors: [
      'concurrency_limit',
      'file_too_large',
      'folder_not_found',
      'invalid_name',
      'missing_file',
      'name_taken',
      'precondition_failed',
      'quota_exceeded',
      'write_rate_exceeded',
    ],
    tag: 'drive',
    query: z.object({
      name: Name.optional(),
      parentId: FolderId.optional(),
      projectId: ProjectId.optional(),
    }),
    headers: Preconditions,
    content: {
      kinds: ['bytes', 'multipart'],
      fields: z.object({
        name: Name.optional().describe('The file’s name (default: the file part’s filename).'),
        parentId: FolderId.optional(),
        projectId: ProjectId.optional(),
      }),
      description: 'The file’s bytes as the raw body (any content type), or a multipart/form-data form.',
    },
    response: DriveItem,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'drive.upload' },
  }),
  route({
    id: 'drive.createFolder',
    method: 'post',
    effect: 'creates',
    path: '/drive/folders',
    summary: 'Create a folder in the drive (at the root or inside another folder). Returns the folder.',
    errors: ['invalid_name', 'name_taken'],
    tag: 'drive',
    body: z
      .object({
        name: Name,
        parentId: FolderId.nullable().optional().describe('The folder to create it in; null or absent for the drive root.'),
        projectId: ProjectId.optional(),
      })
      .strict()
      .meta({ id: 'CreateFolderRequest' }),
    response: DriveItem,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.createFolder',
      request: (i) => ({ name: i.body.name, parentId: i.body.parentId ?? undefined, projectId: i.body.projectId, lockTokens: [] }),
      response: (res) => withEtag(res, 201),
    },
  }),
  route({
    id: 'drive.get',
    method: 'get',
    path: '/drive/:id',
    summary: 'A file’s or folder’s metadata (with its ETag).',
    errors: ['item_not_found'],
    tag: 'drive',
    params,
    response: DriveItem,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.getItem',
      request: (i) => ({ id: i.params.id, includeDetails: false }),
      response: (res) => withEtag(res),
    },
  }),
  route({
    id: 'drive.read',
    statuses: {
      500: 'The file’s stored content is gone from the file store (`content_missing`): the server lost it, a retry will not help.',
    },
    method: 'get',
    path: '/drive/:id/content',
    summary: 'Read a file, streamed, with its ETag; `Range` (206) and `If-None-Match` (304) are honoured.',
    errors: ['content_missing', 'item_not_found', 'range_not_satisfiable'],
    tag: 'drive',
    params,
    headers: z.object({
      'if-none-match': z.string().max(2000).optional().describe('`"<etag>"` of a copy you hold: 304 with no body if it is still current.'),
      range: z.string().max(200).optional().describe('`bytes=<start>-<end>` (one range): 206 with those bytes only.'),
      'if-range': z.string().max(200).optional().describe('`"<etag>"`: honour `Range` only if the file is still that version, else send it whole.'),
    }),
    response: z.unknown().describe('The content, as its content type.'),
    answer: 'bytes',
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'drive.read' },
  }),
  route({
    id: 'drive.replace',
    statuses: {
      ...QUOTA_ERRORS,
      409: 'The file is locked by a WebDAV client; the write needs its lock token (`locked`).',
      428: 'The write names no version: send `If-Match` with the ETag read, or `If-None-Match: *` to create (`precondition_required`).',
    },
    method: 'put',
    effect: 'updates',
    path: '/drive/:id/content',
    summary:
      'Replace a file’s content (raw body). Requires `If-Match: "<etag>"` of the version read (412 with the ' +
      'current ETag and writer when it changed; nothing is overwritten), or 428.',
    errors: ['item_not_found', 'locked', 'precondition_failed', 'precondition_required'],
    tag: 'drive',
    params,
    headers: Preconditions,
    content: { kinds: ['bytes'], description: 'The new content, as the raw body (any content type).' },
    response: DriveItem,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'drive.replace' },
  }),
  route({
    id: 'drive.update',
    statuses: {
      409: 'Another item has that name in the folder (`name_taken`), or a folder would move into itself (`move_into_itself`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/drive/:id',
    summary: 'Rename and/or move (`parentId`: a folder, or null for the root). `If-Match` is honoured.',
    errors: ['invalid_name', 'item_not_found', 'move_into_itself', 'name_taken', 'precondition_failed'],
    tag: 'drive',
    params,
    headers: IfMatch,
    body: z
      .object({ name: Name.optional(), parentId: FolderId.nullable().optional().describe('The folder to move it into; null for the drive root.') })
      .strict()
      .refine((b) => b.name !== undefined || b.parentId !== undefined, 'name or parentId is required')
      .meta({ id: 'UpdateDriveItemRequest' }),
    response: DriveItem,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.updateItem',
      request: (i) => ({
        id: i.params.id,
        name: i.body.name,
        parentId: i.body.parentId === null ? '' : i.body.parentId,
        ifMatch: ifMatchOf(i),
        overwrite: false,
        lockTokens: [],
      }),
      response: (res) => withEtag(res),
    },
  }),
  route({
    id: 'drive.delete',
    statuses: {
      409: 'The folder is not empty: delete it with `?recursive=true` (`folder_not_empty`).',
    },
    method: 'delete',
    path: '/drive/:id',
    summary: 'Delete a file or an empty folder; a folder with members needs `?recursive=true`. `If-Match` is honoured.',
    errors: ['folder_not_empty', 'item_not_found', 'precondition_failed'],
    tag: 'drive',
    params,
    query: z.object({ recursive: Booleanish.describe('Delete a folder with everything in it (else a folder with members is 409).') }),
    headers: IfMatch,
    response: z.object({ success: z.literal(true), deleted: z.number().int().describe('Items deleted.') }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'drive.deleteItem',
      request: (i) => ({ id: i.params.id, recursive: i.query.recursive, ifMatch: ifMatchOf(i), lockTokens: [] }),
      response: (res) => ({ success: true as const, deleted: res.deleted }),
    },
  }),
];
