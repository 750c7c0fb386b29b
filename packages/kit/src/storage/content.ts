import { Readable } from 'node:stream';
import zlib from 'node:zlib';

import { DomainError } from '../errors.js';
import type { HashPool } from '../hashing.js';
import type { Blobs } from './blobs.js';

/**
 * Content in and out of the blob store, hashed on the way (the drive's bytes: the gateway moves
 * them between the client and the blob store, the drive service decides and keeps the metadata).
 */

export interface StoredContent {
  /** Lowercase hex SHA-256 of the bytes: the content's identity. */
  sha256: string;
  /** zlib's CRC-32 of the same bytes (an unsigned 32-bit value): what a full read is checked against. */
  crc32: number;
  size: number;
}

export const contentTooLarge = (limit: number) =>
  new DomainError('too_large', 'file_too_large', `The file is larger than the limit of ${limit} bytes.`, { limitBytes: limit });

const interrupted = () => new DomainError('invalid_argument', 'request_aborted', 'The upload was interrupted; nothing was written.');

/** Where an upload's bytes go and how many it may have: what the drive's BeginUpload answers. */
export interface UploadTarget {
  key: string;
  limit: number;
}

/**
 * How many bytes an upload takes in while its target is still being decided (a promise): on the
 * filesystem they are written to the store's temporary file meanwhile, so the decision's round
 * trips overlap the first bytes' hashing and writing. Past this the upload waits for it; a
 * refusal then removes what was written.
 */
export const EARLY_BYTES = 4 * 1024 * 1024;

/**
 * Streams `source` to the blob of `target` while it is hashed (SHA-256 and CRC-32 of the same copy of
 * the bytes, on the pool's workers unless the declared size is small) and counted. Nothing is held whole in memory; the blob store reads
 * only as fast as it writes. All or nothing: a source that fails (a client gone mid-body: a
 * `request_aborted` error, unless the source threw a DomainError of its own), content over
 * the target's limit (`file_too_large`) or a failed write leaves no blob at its key. `staged`: the blob is
 * moved before anything relies on it (BlobPutOptions).
 *
 * `target` may still be on its way (a promise): the filesystem store writes the first EARLY_BYTES
 * meanwhile and names the file once it comes; a target that fails (the write refused) fails the
 * store with its error, and nothing stays. S3 waits for it before the first byte.
 */
export async function storeHashed(
  blobs: Blobs,
  hashes: HashPool,
  target: UploadTarget | Promise<UploadTarget>,
  source: AsyncIterable<Buffer>,
  opts: { declaredSize?: number; staged?: boolean },
): Promise<StoredContent> {
  const { declaredSize, staged } = opts;
  let known: UploadTarget | undefined;
  let refused: { err: unknown } | undefined;
  if (!(target instanceof Promise) || blobs.kind !== 'fs') known = await target;
  const decided: Promise<UploadTarget> = known
    ? Promise.resolve(known)
    : (target as Promise<UploadTarget>).then(
        (t) => (known = t),
        (err: unknown) => {
          refused = { err };
          throw err;
        },
      );
  decided.catch(() => {}); // awaited by the put (the key) and below
  const checkLimit = (size: number) => {
    if (known && size > known.limit) throw contentTooLarge(known.limit);
  };
  if (declaredSize !== undefined) checkLimit(declaredSize);
  const hash = hashes.hash(['sha256', 'crc32'], declaredSize);
  let size = 0;
  let digest: Promise<string[]> | undefined;
  async function* counted(): AsyncGenerator<Buffer> {
    const chunks = source[Symbol.asyncIterator]();
    for (;;) {
      if (refused) throw refused.err;
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch (err) {
        throw err instanceof DomainError ? err : interrupted();
      }
      if (next.done) break;
      const chunk = next.value;
      size += chunk.length;
      // Past the early bytes, nothing more is taken in before the target is known.
      if (!known && size > EARLY_BYTES) await decided;
      checkLimit(size);
      const behind = hash.update(chunk);
      if (behind) await behind;
      yield chunk;
    }
    // The source is whole: the digest is computed while the blob store finishes its write.
    digest = hash.digests();
    digest.catch(() => {}); // awaited below; a failed put must not leave it unhandled
  }
  const body = Readable.from(counted(), { objectMode: false, highWaterMark: 1 << 20 });
  // The S3 client sizes its multipart parts (each held in memory) from the length it is told;
  // told nothing, it plans for 5 TiB objects (~550 MiB parts). The limit bounds the length.
  const sizeHint = declaredSize ?? (blobs.kind === 's3' ? known!.limit : undefined);
  const key = known ? known.key : decided.then((t) => t.key);
  if (typeof key !== 'string') key.catch(() => {}); // the put awaits it once its data is written
  try {
    const stored = await blobs.put(key, body, sizeHint, { staged });
    if (stored.size !== size) throw new Error(`stored ${stored.size} bytes of ${size}`);
    if (!digest) throw new Error('the blob store finished before the content ended');
    // A body that ended before the target came is judged against its limit now.
    checkLimit(size);
    const [sha256, crc32] = await digest;
    return { sha256: sha256!, crc32: parseInt(crc32!, 16), size };
  } catch (err) {
    body.destroy();
    hash.abort();
    // The put is all-or-nothing; this removes what a store finished just before a late failure.
    if (digest && known) await blobs.remove(known.key).catch(() => {});
    // A refused target is the answer, whatever the write was doing when it came.
    if (refused) throw refused.err;
    throw err;
  }
}

/**
 * The bytes `body` holds, passed through; a whole content is checked on the way: by its CRC-32
 * when `crc32` is given (content stored with one), else by its SHA-256 when `sha256` is; and the
 * byte count must be `bytes`. The last chunk is held back until both are checked: on a mismatch
 * it is never sent and `content_damaged` is thrown, so a reader of a damaged blob gets fewer
 * bytes than announced (a failed transfer), never a damaged file that looks complete. Stopping
 * early (a reader gone) destroys `body` and drops the hash.
 *
 * The check guards against accidental damage at rest (a flipped bit, a cut or partly written
 * blob, the wrong blob), which a CRC-32 catches; SHA-256 is the content's identity, checked when
 * the content was written. The CRC runs on this thread: at ~6 GiB/s it costs less than copying
 * the bytes to a hashing worker would, where SHA-256 (~2 GiB/s) is hashed on the pool's workers.
 */
export async function* verifiedContent(
  body: Readable,
  hashes: HashPool,
  expect: { bytes: number; sha256?: string; crc32?: number },
): AsyncGenerator<Buffer> {
  const crc = expect.crc32 !== undefined;
  const hash = !crc && expect.sha256 ? hashes.hash('sha256', expect.bytes) : null;
  let value = 0;
  let read = 0;
  let held: Buffer | undefined;
  let ok = false;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (crc) value = zlib.crc32(chunk, value);
      const behind = hash?.update(chunk);
      if (behind) await behind;
      read += chunk.length;
      if (held) yield held;
      held = chunk;
    }
    const digest = hash ? await hash.digest() : null;
    if (read !== expect.bytes || (crc && value !== expect.crc32) || (hash && digest !== expect.sha256)) {
      throw new DomainError('internal', 'content_damaged', 'The stored content does not match the file; it was not served.', {
        expectedBytes: expect.bytes,
        readBytes: read,
      });
    }
    ok = true;
  } finally {
    if (!ok) {
      hash?.abort();
      body.destroy();
    }
  }
  if (held) yield held;
}
