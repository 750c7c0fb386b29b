import { Readable } from 'node:stream';

import { type Blobs, type BlobRange, DomainError, type HashPool, type Logger, newId } from '@svc/kit';

import type { DriveStore } from './store.js';

/** SHA-256 of no bytes: the content of an empty file (a WebDAV lock on a new name makes one). */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Where the content of `sha256` in an account is kept: content-addressed, so a retried upload lands on the same key. */
export function contentKey(accountId: string, sha256: string): string {
  return `drive/${accountId}/${sha256.slice(0, 2)}/${sha256}`;
}

const tmpKey = (uploadId: string) => `drive-tmp/${uploadId}`;

export interface Received {
  uploadId: string;
  tmpKey: string;
  sha256: string;
  size: number;
}

export const tooLarge = (limit: number) =>
  new DomainError('too_large', 'file_too_large', `The file is larger than the limit of ${limit} bytes.`, { limitBytes: limit });

/**
 * Content: streamed into a temporary blob while it is hashed and counted, then moved to its
 * content-addressed key. Nothing is buffered whole; a stream that fails or stops early leaves
 * no blob (the kit's puts are all-or-nothing), so a previous version is never touched.
 */
export class Content {
  constructor(
    private readonly blobs: Blobs,
    private readonly store: DriveStore,
    private readonly log: Logger,
    private readonly hashes: HashPool,
  ) {}

  /**
   * Streams `chunks` to a temporary blob. `chunks` yields the bytes, and must finish by calling
   * `end(size)` through the returned promise protocol: a source that stops without reporting its
   * end (a client that went away) rejects and leaves nothing.
   */
  async receive(
    accountId: string,
    chunks: AsyncIterable<Buffer>,
    opts: { limit: number; declaredSize?: number },
  ): Promise<Received> {
    const uploadId = newId('upl');
    const key = tmpKey(uploadId);
    await this.store.startUpload(uploadId, accountId, key);
    // SHA-256 runs on a worker thread (about as slow as the disk write itself): this thread only
    // copies each chunk over, and keeps reading the stream and writing the blob meanwhile. (A
    // small file, by its declared length, is hashed here: quicker than the trip to the worker.)
    const hash = this.hashes.hash('sha256', opts.declaredSize);
    let size = 0;
    const limit = opts.limit;
    let digest: Promise<string> | undefined;
    async function* counted() {
      for await (const chunk of chunks) {
        size += chunk.length;
        if (size > limit) throw tooLarge(limit);
        const behind = hash.update(chunk);
        if (behind) await behind;
        yield chunk;
      }
      // The source is whole: the digest is computed while the blob store finishes its write.
      digest = hash.digest();
      digest.catch(() => {}); // awaited below; a failed put must not leave it unhandled
    }
    const body = Readable.from(counted(), { objectMode: false, highWaterMark: 1 << 20 });
    // The S3 client sizes its multipart parts (each held in memory) from the length it is told;
    // told nothing, it plans for 5 TiB objects (~550 MiB parts). The limit bounds the length.
    const sizeHint = opts.declaredSize ?? (this.blobs.kind === 's3' ? limit : undefined);
    let sha256: string;
    try {
      const stored = await this.blobs.put(key, body, sizeHint);
      if (stored.size !== size) throw new Error(`stored ${stored.size} bytes of ${size}`);
      if (!digest) throw new Error('the blob store finished before the upload ended');
      sha256 = await digest;
    } catch (err) {
      body.destroy();
      hash.abort();
      await this.discard(uploadId, key);
      throw err;
    }
    return { uploadId, tmpKey: key, sha256, size };
  }

  /**
   * Makes the received content readable at its content key. The blob row is held first (in its
   * own commit), so the collector cannot remove the key between this and the metadata commit.
   */
  async place(accountId: string, r: Received, holdSeconds: number): Promise<void> {
    await this.store.hold(this.store.sql, accountId, r.sha256, r.size, holdSeconds);
    const target = contentKey(accountId, r.sha256);
    const existing = await this.blobs.stat(target);
    if (existing && existing.size === r.size) {
      // Same bytes already stored (a retried upload, or a copy): keep the one there.
      await this.blobs.remove(r.tmpKey);
    } else {
      await this.blobs.move(r.tmpKey, target);
    }
  }

  /** Ensures the empty content exists (a new file made by a WebDAV LOCK). */
  async ensureEmpty(accountId: string, holdSeconds: number): Promise<void> {
    await this.store.hold(this.store.sql, accountId, EMPTY_SHA256, 0, holdSeconds);
    const key = contentKey(accountId, EMPTY_SHA256);
    if (!(await this.blobs.stat(key))) await this.blobs.put(key, Buffer.alloc(0));
  }

  /** Forgets an upload: its temporary blob and its row. */
  async discard(uploadId: string, key: string): Promise<void> {
    await this.blobs.remove(key).catch((err) => this.log.warn({ err, key }, 'could not remove a temporary blob'));
    await this.store.endUpload(uploadId).catch((err) => this.log.warn({ err, uploadId }, 'could not forget an upload'));
  }

  async finish(uploadId: string): Promise<void> {
    await this.store.endUpload(uploadId).catch((err) => this.log.warn({ err, uploadId }, 'could not forget an upload'));
  }

  open(accountId: string, sha256: string, range?: BlobRange): Promise<Readable> {
    return this.blobs.get(contentKey(accountId, sha256), range);
  }

  /**
   * Removes blobs no item references once their hold has passed, temporary blobs of uploads
   * whose process died, and expired locks. Each blob is removed while its row is locked, so an
   * upload holding the same content waits and then stores it again.
   */
  async collect(
    graceSeconds: number,
    configuredGrace: number,
    uploadAgeSeconds: number,
  ): Promise<{ blobs: number; uploads: number; locks: number }> {
    const earlierBy = Math.max(0, configuredGrace - graceSeconds);
    const sql = this.store.sql;
    let blobs = 0;
    for (;;) {
      const n = await sql.tx(async (q) => {
        const rows = await this.store.collectable(q, 100, earlierBy);
        for (const r of rows) {
          await this.blobs.remove(contentKey(r.account_id, r.sha256));
          await this.store.forgetBlob(q, r.account_id, r.sha256);
        }
        return rows.length;
      });
      blobs += n;
      if (n < 100) break;
    }
    const uploads = await sql.tx(async (q) => {
      const rows = await this.store.staleUploads(q, uploadAgeSeconds, 1000);
      for (const r of rows) {
        await this.blobs.remove(r.tmp_key);
        await q.query(`DELETE FROM drive.uploads WHERE id = $1`, [r.id]);
      }
      return rows.length;
    });
    const locks = await sql.tx((q) => this.store.deleteExpiredLocks(q));
    return { blobs, uploads, locks };
  }
}
