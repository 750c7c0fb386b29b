/** Drive routes that find and measure: paths, trees, names, recent files, sizes, usage, duplicates. */
import { z } from 'zod';

import type { drive_files } from '@svc/proto';

import { ListQuery, Nullable, route, Timestamp } from '../../route.js';
import { DrivePath, FolderId, folderParams, idParams, PathItem, pathItem, PathItems, pathItems, ProjectQuery } from './kit.js';
import { KEY } from './kit.js';

const Counts = z.object({
  files: z.number().int(),
  folders: z.number().int(),
  bytes: z.number().int().describe('Bytes of the files, each counted.'),
});

const DriveQuota = z
  .object({
    limits: z.object({
      bytesLive: z.number().int().describe('Bytes of files the account may hold (SVC_DRIVE_QUOTA_BYTES).'),
      bytesVersions: z.number().int().describe('Bytes of replaced content it keeps; the oldest go first above it (SVC_DRIVE_QUOTA_VERSION_BYTES).'),
      writesPerMinute: z.number().int().describe('Content writes it may make in a minute (SVC_DRIVE_WRITES_PER_MINUTE).'),
    }),
    usage: z.object({
      bytesLive: z.number().int().describe('Bytes of its files now.'),
      bytesVersions: z.number().int().describe('Bytes of its kept versions now.'),
      writes: z.number().int().describe('Content writes counted in the minute that started at `windowStart`.'),
      windowStart: Nullable(Timestamp).describe('The last minute the account wrote in (over once a minute has passed); null if it never wrote.'),
    }),
  })
  .describe('The account’s storage quotas, every drive of it together, whatever project was asked (docs/drive.md, "Quotas").')
  .meta({ id: 'DriveQuota' });

function quotaOf(q: drive_files.DriveQuota | undefined): z.infer<typeof DriveQuota> {
  const l = q?.limits;
  const u = q?.usage;
  return {
    limits: { bytesLive: l?.bytesLive ?? 0, bytesVersions: l?.bytesVersions ?? 0, writesPerMinute: l?.writesPerMinute ?? 0 },
    usage: { bytesLive: u?.bytesLive ?? 0, bytesVersions: u?.bytesVersions ?? 0, writes: u?.writes ?? 0, windowStart: u?.windowStart || null },
  };
}

export const driveFindRoutes = [
  route({
    ...KEY,
    id: 'drive.stat',
    method: 'get',
    path: '/drive/stat',
    summary: 'The file or folder at a path from the drive root ("docs/notes.md"), with its path; 404 when nothing is there.',
    errors: ['item_not_found'],
    query: z.object({ path: DrivePath, projectId: ProjectQuery }),
    response: PathItem,
    handler: { rpc: 'drive.statPath', request: (i) => ({ path: i.query.path, projectId: i.query.projectId }), response: (r) => pathItem(r) },
  }),
  route({
    ...KEY,
    id: 'drive.tree',
    method: 'get',
    path: '/drive/tree',
    summary: 'Everything under a folder (or the drive root), breadth first with paths and depths, to `maxDepth` levels (default 3).',
    errors: ['item_not_found'],
    query: z.object({
      folderId: FolderId.optional().describe('The folder (default: the drive root).'),
      projectId: ProjectQuery,
      maxDepth: z.coerce.number().int().min(1).max(50).default(3).describe('Levels to descend (1: the members only).'),
      limit: z.coerce.number().int().min(1).max(2000).default(500).describe('Most items answered (truncated says when more exist).'),
    }),
    response: PathItems,
    handler: {
      rpc: 'drive.tree',
      request: (i) => ({ folderId: i.query.folderId, projectId: i.query.projectId, maxDepth: i.query.maxDepth, limit: i.query.limit }),
      response: pathItems,
    },
  }),
  route({
    ...KEY,
    id: 'drive.find',
    method: 'get',
    path: '/drive/find',
    summary: 'Find files and folders by name under a folder, however deep: a glob (`*.md`, `report-??.csv`) or a substring, case-insensitive.',
    query: z.object({
      name: z.string().min(1).max(255).describe('A glob with * and ?, or (without them) a substring of the name.'),
      folderId: FolderId.optional().describe('Search under this folder (default: the whole drive).'),
      kind: z.enum(['file', 'folder']).optional().describe('Only files or only folders.'),
      projectId: ProjectQuery,
      limit: z.coerce.number().int().min(1).max(1000).default(100).describe('How many items to return at most (1–1,000; default 100).'),
    }),
    response: PathItems,
    handler: {
      rpc: 'drive.findItems',
      request: (i) => ({
        name: i.query.name,
        folderId: i.query.folderId,
        kind: i.query.kind ?? '',
        projectId: i.query.projectId,
        limit: i.query.limit,
      }),
      response: pathItems,
    },
  }),
  route({
    ...KEY,
    id: 'drive.recent',
    method: 'get',
    path: '/drive/recent',
    summary: 'The drive’s files, the most recently written first, with their paths.',
    query: ListQuery.extend({ projectId: ProjectQuery }),
    response: PathItems,
    handler: {
      rpc: 'drive.recentFiles',
      request: (i) => ({ projectId: i.query.projectId, limit: i.query.limit, cursor: i.query.cursor }),
      response: pathItems,
    },
  }),
  route({
    ...KEY,
    id: 'drive.usage',
    method: 'get',
    path: '/drive/usage',
    summary: 'What the drive holds: files, folders, bytes (and bytes stored once per distinct content), kept versions, and bytes by content type.',
    query: z.object({ projectId: ProjectQuery.describe('Only that project’s drive (default: every drive of the account, or the key’s project).') }),
    response: Counts.extend({
      storedBytes: z.number().int().describe('Bytes of distinct contents (equal files are stored once).'),
      versions: z.number().int().describe('Earlier versions kept.'),
      versionBytes: z.number().int(),
      byType: z
        .array(z.object({ contentType: z.string(), files: z.number().int(), bytes: z.number().int() }))
        .describe('The 50 largest content types.'),
      quota: DriveQuota,
    }).meta({ id: 'DriveUsage' }),
    handler: {
      rpc: 'drive.usage',
      request: (i) => ({ projectId: i.query.projectId }),
      response: (r) => ({ ...r, quota: quotaOf(r.quota) }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.duplicates',
    method: 'get',
    path: '/drive/duplicates',
    summary: 'Files with identical content (by SHA-256), grouped, the groups wasting the most bytes first.',
    query: z.object({
      projectId: ProjectQuery,
      minSize: z.coerce.number().int().min(0).default(1).describe('Ignore files smaller than this many bytes (default 1: empty files ignored).'),
      limit: z.coerce.number().int().min(1).max(500).default(50).describe('Most groups.'),
    }),
    response: z
      .object({
        groups: z.array(
          z.object({
            sha256: z.string(),
            size: z.number().int(),
            files: z.array(z.object({ id: z.string(), path: z.string() })).describe('Oldest first.'),
          }),
        ),
        wastedBytes: z.number().int().describe('Bytes that keeping one file per group would free.'),
      })
      .meta({ id: 'DriveDuplicates' }),
    handler: {
      rpc: 'drive.duplicates',
      request: (i) => ({ projectId: i.query.projectId, minSize: i.query.minSize, limit: i.query.limit }),
      response: (r) => r,
    },
  }),
  route({
    ...KEY,
    id: 'drive.ancestors',
    method: 'get',
    path: '/drive/:id/ancestors',
    summary: 'An item’s folders from the drive root down, then the item itself, each with its path (breadcrumbs).',
    errors: ['item_not_found'],
    params: idParams,
    response: PathItems,
    handler: { rpc: 'drive.itemAncestors', request: (i) => ({ id: i.params.id, includeDetails: false }), response: pathItems },
  }),
  route({
    ...KEY,
    id: 'drive.folderSize',
    method: 'get',
    path: '/drive/:id/size',
    summary: 'How many files and folders a folder holds, however deep, and their bytes.',
    errors: ['item_not_found'],
    params: folderParams,
    response: Counts.meta({ id: 'DriveFolderSize' }),
    handler: { rpc: 'drive.folderSize', request: (i) => ({ id: i.params.id, includeDetails: false }), response: (r) => r },
  }),
];
