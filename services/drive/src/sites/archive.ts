/** Files out of an uploaded archive (zip by fflate, tar or tar.gz), with the deployment's limits applied. */
import { unzipSync } from 'fflate';

import { DomainError } from '@svc/kit';

import { untar } from '../files/archives.js';
import { tooLarge } from './rules.js';

const invalid = (why: string) => new DomainError('invalid_argument', 'invalid_archive', `The archive could not be read: ${why}`);

/**
 * The files of a zip archive (folders skipped). The limits are checked on the sizes the archive
 * declares, before anything is inflated; an entry that inflates to more than it declared is cut
 * at its declared size (fflate writes into a buffer of that size), so memory stays within the limit.
 */
export function unzipFiles(archive: Buffer, limits: { maxFiles: number; maxBytes: number }): Array<{ path: string; content: Buffer }> {
  let count = 0;
  let bytes = 0;
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(archive, {
      filter: (f) => {
        if (f.name.endsWith('/')) return false;
        count += 1;
        bytes += f.originalSize;
        if (count > limits.maxFiles) throw tooLarge(`A deployment holds at most ${limits.maxFiles} files; this archive has more.`);
        if (bytes > limits.maxBytes) throw tooLarge(`A deployment holds at most ${limits.maxBytes} bytes; this archive holds more.`);
        return true;
      },
    });
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw invalid(err instanceof Error ? err.message : String(err));
  }
  return Object.entries(entries).map(([path, content]) => ({ path, content: Buffer.from(content.buffer, content.byteOffset, content.byteLength) }));
}

/**
 * The files of a tar archive, gzipped or not (folders skipped; the gzip is bounded by the archive
 * tools' own limit as it inflates). The deployment's limits are checked on the files read.
 */
export function untarFiles(archive: Buffer, limits: { maxFiles: number; maxBytes: number }): Array<{ path: string; content: Buffer }> {
  const files = untar(archive).filter((e): e is { path: string; content: Buffer } => e.content !== undefined && !e.path.endsWith('/'));
  if (files.length > limits.maxFiles) throw tooLarge(`A deployment holds at most ${limits.maxFiles} files; this archive has more.`);
  if (files.reduce((n, f) => n + f.content.length, 0) > limits.maxBytes) {
    throw tooLarge(`A deployment holds at most ${limits.maxBytes} bytes; this archive holds more.`);
  }
  return files;
}
