/** What the drive's file-tool routes share: ids, names, paths, booleans in queries, items with paths. */
import { z } from 'zod';

import type { drive } from '@svc/proto';

import { Nullable, reply, type Route } from '../../route.js';
import { DriveItem, driveItem } from './files.js';
import { FileId, FolderId, ItemId } from './ids.js';

export { FileId, FolderId, ItemId, Name } from './ids.js';

/**
 * The 500 of an operation that reads a file's content in the drive service: the bytes it stored no
 * longer match the file (its SHA-256), and nothing was read from or built on them.
 */
export const CONTENT_DAMAGED =
  'The file’s stored content no longer matches it (`content_damaged`): nothing was read from it or written; a retry will not help.';

export const idParams = z.object({ id: ItemId.describe('The item’s id (file_… or fld_…).') });
export const fileParams = z.object({ id: FileId.describe('The file’s id (file_…).') });
export const folderParams = z.object({ id: FolderId.describe('The folder’s id (fld_…).') });

/** A path from the drive root: slash-separated names. */
export const DrivePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((v) => v.split('/').some((s) => s !== ''), 'must name at least one item')
  .refine((v) => !v.split('/').some((s) => s === '.' || s === '..'), 'must not contain "." or ".." segments')
  .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'must not contain control characters')
  .describe('Slash-separated names from the drive root ("docs/notes.md").');

export const QueryBool = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1')
  .describe('true or false (also 1 or 0); default false.');

export const IfMatch = z.object({
  'if-match': z.string().max(2000).optional().describe('The ETag read (`"<etag>"`); 412 if the file changed since.'),
});

export const PathItem = z
  .object({
    item: DriveItem,
    path: z.string().describe('Slash-separated names from the drive root.'),
    depth: z.number().int().describe('Levels below the folder asked about (1: a direct member); for paths from the root, the number of names.'),
  })
  .meta({ id: 'DrivePathItem' });

export const PathItems = z
  .object({
    items: z.array(PathItem),
    truncated: z.boolean().describe('More items matched than the answer holds.'),
    nextCursor: Nullable(z.string()),
  })
  .meta({ id: 'DrivePathItemList' });

export const pathItem = (p: drive.PathItem) => ({ item: driveItem(p.item!), path: p.path, depth: p.depth });
export const pathItems = (r: drive.PathItemsResponse) => ({ items: r.items.map(pathItem), truncated: r.truncated, nextCursor: r.nextCursor ?? null });

/** An item answer with its ETag (201 when `created` and asked). */
export const itemReply = (res: drive.ItemResponse, createdStatus = false) =>
  reply(driveItem(res.item!), { status: createdStatus && res.created ? 201 : 200, headers: { ETag: res.item!.etag } });

export const ifMatchOf = (headers: Record<string, unknown>) => (headers['if-match'] as string | undefined) ?? undefined;

export const ProjectQuery = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'may hold letters, digits and _ . : - only')
  .optional()
  .describe('For an unscoped key: that project’s drive (default: the account drive).');

/** The drive's public operations: a key of a person or an agent, no authority. */
export const KEY: Pick<Route, 'auth' | 'principals' | 'authority' | 'tag'> = {
  auth: 'key',
  principals: ['human', 'agent'],
  authority: false,
  tag: 'drive',
};
