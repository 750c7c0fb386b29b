/** Content in and out of the drive service itself (for the file tools): whole files, bounded. */
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';

import { contentTooLarge, DomainError, type Principal } from '@svc/kit';

import { contentKey } from '../items/content.js';
import type { DriveDomain } from '../items/domain.js';
import type { ItemRow } from '../items/store.js';
import type { UploadHeader } from '../items/types.js';
import { commitUpload } from '../items/uploads.js';
import { isText } from './search-text.js';

/** The most bytes a file tool reads or writes in one call. */
export const TOOL_MAX_BYTES = 5 * 1024 * 1024;

export const notAFile = () => new DomainError('conflict', 'not_a_file', 'This is a folder; the operation needs a file.');
export const notAFolder = () => new DomainError('conflict', 'not_a_folder', 'This is a file; the operation needs a folder.');

/** A file's bytes (at most `max`: larger files are refused with 413). */
export async function readBytes(drive: DriveDomain, row: ItemRow, max = TOOL_MAX_BYTES): Promise<Buffer> {
  if (row.kind !== 'file') throw notAFile();
  if (row.size > max) {
    throw new DomainError('too_large', 'file_too_large', `The file has ${row.size} bytes; this operation reads files of at most ${max}.`);
  }
  if (row.size === 0) return Buffer.alloc(0);
  return readBlob(drive, row.account_id, row.sha256!);
}

/**
 * A blob's bytes (a few MiB at most: every caller bounds the size first), checked against its
 * SHA-256, which is its name: damaged content is refused (500 `content_damaged`), never returned,
 * so that nothing built from it (a restored version, a copy of a site file's text) stores it again.
 */
export async function readBlob(drive: DriveDomain, accountId: string, sha256: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const hash = createHash('sha256');
  for await (const c of await drive.blobs.get(contentKey(accountId, sha256))) {
    chunks.push(c as Buffer);
    hash.update(c as Buffer);
  }
  if (hash.digest('hex') !== sha256) {
    throw new DomainError('internal', 'content_damaged', 'The stored content does not match the file; it was not used.');
  }
  return Buffer.concat(chunks);
}

export { isText } from './search-text.js';

/** A file's text (UTF-8); a binary file is refused. */
export async function readText(drive: DriveDomain, row: ItemRow, max = TOOL_MAX_BYTES): Promise<string> {
  const b = await readBytes(drive, row, max);
  if (!isText(b)) throw new DomainError('invalid_argument', 'not_text', `"${row.name}" is not a UTF-8 text file.`);
  return b.toString('utf8');
}

/**
 * Writes bytes as a drive upload does (the same checks, preconditions, locks, events and
 * versions): a temporary blob, then the commit.
 */
export async function writeBytes(
  drive: DriveDomain,
  p: Principal,
  h: Partial<UploadHeader>,
  bytes: Buffer,
): Promise<{ row: ItemRow; created: boolean }> {
  if (bytes.length > Math.min(drive.settings.maxFileBytes, TOOL_MAX_BYTES))
    throw contentTooLarge(Math.min(drive.settings.maxFileBytes, TOOL_MAX_BYTES));
  const header: UploadHeader = { requirePrecondition: false, overwrite: false, lockTokens: [], ...h };
  const { uploadId, key } = await drive.content.begin(p.accountId);
  try {
    await drive.blobs.put(key, bytes, bytes.length, { staged: true });
  } catch (err) {
    await drive.content.discard(uploadId, key);
    throw err;
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return commitUpload(drive, p, header, { uploadId, sha256, size: bytes.length, crc32: zlib.crc32(bytes) });
}

/** Replaces a text file's content with what `change` makes of its text, as of the version read. */
export async function rewriteText<T>(
  drive: DriveDomain,
  p: Principal,
  id: string,
  ifMatch: string | undefined,
  change: (text: string) => { text: string; extra: T },
): Promise<{ row: ItemRow; extra: T }> {
  const row = await drive.visible(drive.sql, p, id);
  const text = await readText(drive, row);
  const { text: next, extra } = change(text);
  // Nothing changed (a removal of what is not there): no new version.
  if (next === text && ifMatch === undefined) return { row, extra };
  // The version read is the precondition: a write between the read and this commit fails (412) instead of being lost.
  const { row: written } = await writeBytes(
    drive,
    p,
    { itemId: row.id, ifMatch: ifMatch ?? `"${row.sha256}"`, contentType: row.content_type ?? undefined },
    Buffer.from(next, 'utf8'),
  );
  return { row: written, extra };
}

/** Splits a path from the drive root into names ("a/b/c.txt"; empty segments and a leading "/" ignored). */
export function segments(path: string): string[] {
  // Names are stored in NFC (packages/kit/src/names.ts): a path finds them however it is composed.
  const segs = path
    .normalize('NFC')
    .split('/')
    .filter((s) => s !== '');
  if (!segs.length) throw new DomainError('invalid_argument', 'invalid_path', 'The path names no item.');
  if (segs.some((s) => s === '.' || s === '..')) throw new DomainError('invalid_argument', 'invalid_path', 'A path cannot contain "." or "..".');
  return segs;
}
