/** The drive's ids and names, declared once for its routes (files, file tools, sites). */
import { z } from 'zod';

import { prefixedId } from '../../route.js';

export const ItemId = z.string().regex(/^(file|fld)_[0-9a-z]{26}$/, 'must be a drive item id (file_… or fld_…)');
export const DriveItemId = ItemId.describe('The item’s id: a file (file_…) or a folder (fld_…).');
export const FileId = prefixedId('file', 'a file id');
export const FolderId = prefixedId('fld', 'a folder id');
export const SiteId = prefixedId('site', 'a site id');
export const DeploymentId = prefixedId('dep', 'a deployment id');

/** A name as the drive accepts it (the service checks the UTF-8 length too). */
export const Name = z
  .string()
  .min(1, 'name is required')
  .max(255)
  .refine((v) => v.trim() !== '' && v !== '.' && v !== '..', 'must not be empty, "." or ".."')
  .refine((v) => !/[/\u0000-\u001f\u007f]/.test(v), 'must not contain "/" or control characters')
  .describe('The item’s name: 1–255 characters, no "/" or control characters, not "." or "..".');
