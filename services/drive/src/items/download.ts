import { byteRange, DomainError, ifNoneMatchPasses, type Principal } from '@svc/kit';

import { contentKey } from './content.js';
import type { DriveDomain } from './domain.js';
import { notFound } from './errors.js';
import { etagOf } from './rules.js';
import type { DownloadRequest, DownloadResult } from './types.js';

/** The Range header a request carries; older callers sent its parts (range_start/range_end, suffix_length). */
function rangeHeader(req: DownloadRequest): string | undefined {
  if (req.range !== undefined) return req.range;
  if (req.suffixLength !== undefined) return `bytes=-${req.suffixLength}`;
  if (req.rangeStart !== undefined) return `bytes=${req.rangeStart}-${req.rangeEnd ?? ''}`;
  return undefined;
}

/**
 * A read: the file's version and what to serve of it (not modified, a range, or all), with the
 * blob the gateway streams the bytes from when there are any.
 */
export async function openContent(drive: DriveDomain, p: Principal, req: DownloadRequest): Promise<DownloadResult> {
  // The item and its content's CRC-32 in one statement (a whole read is checked against the CRC).
  const found = await drive.store.byIdWithCrc32(drive.sql, p.accountId, req.id);
  if (!drive.sees(p, found)) throw notFound();
  const { crc32, ...row } = found;
  if (row.kind !== 'file') throw new DomainError('conflict', 'not_a_file', 'A folder has no content to read.');
  const etag = etagOf(row);
  const base = { item: row, notModified: false, partial: false, rangeNotSatisfiable: false, start: 0, end: row.size - 1 };
  if (req.ifNoneMatch !== undefined && !ifNoneMatchPasses(req.ifNoneMatch, etag)) return { ...base, notModified: true };
  let out: DownloadResult = base;
  // If-Range naming another version: the whole file.
  if (req.ifRange === undefined || req.ifRange.trim() === etag) {
    const range = byteRange(row.size, rangeHeader(req));
    if (range.kind === 'unsatisfiable') return { ...base, rangeNotSatisfiable: true };
    if (range.kind === 'partial') out = { ...base, partial: true, start: range.start, end: range.end };
  }
  if (req.headOnly) return out;
  if (row.size === 0) return out;
  const blobKey = contentKey(p.accountId, row.sha256!);
  // A range is served as stored (it cannot be checked); a whole read is checked by the CRC.
  return { ...out, blobKey, ...(crc32 === null || out.partial ? {} : { crc32 }) };
}
