import { type Blobs, DomainError, hasPrefix, type Logger, newId, type Queryable } from '@svc/kit';

import { QuotaStore } from '../quotas/store.js';
import type { DriveStore } from './store.js';

/** SHA-256 of no bytes: the content of an empty file (locking a new name makes one). */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Where the content of `sha256` in an account is kept: content-addressed, so a retried upload lands on the same key. */
export function contentKey(accountId: string, sha256: string): string {
  return `drive/${accountId}/${sha256.slice(0, 2)}/${sha256}`;
}

const tmpKey = (uploadId: string) => `drive-tmp/${uploadId}`;
/** An id `begin` could have made: anything else is unknown without a look (no I/O for garbage). */
const ours = (uploadId: string) => hasPrefix(uploadId, 'upl');
const quotaStore = new QuotaStore();

export interface Received {
  uploadId: string;
  tmpKey: string;
  sha256: string;
  size: number;
  crc32?: number;
}

const unknownUpload = () => new DomainError('not_found', 'upload_not_found', 'No such upload in progress (it was committed, aborted or collected).');

/**
 * Content: the gateway writes an upload's bytes to a temporary blob this service names (and
 * registers, so that the collector removes it if the upload is never finished); a commit moves
 * it to its content-addressed key. A put is all-or-nothing, so a previous version is never touched.
 */
export class Content {
  constructor(
    private readonly blobs: Blobs,
    private readonly store: DriveStore,
    private readonly log: Logger,
  ) {}

  /** Registers a new upload of the account; its bytes go to the returned key. */
  async begin(accountId: string): Promise<{ uploadId: string; key: string }> {
    const uploadId = newId('upl');
    const key = tmpKey(uploadId);
    await this.store.startUpload(uploadId, accountId, key);
    return { uploadId, key };
  }

  /**
   * The upload the gateway says it wrote, once checked: it is the account's, in progress, and its
   * blob holds `size` bytes. (The digest is the gateway's, computed as the bytes went by; every
   * full read checks it again.)
   */
  async received(accountId: string, uploadId: string, sha256: string, size: number, crc32?: number): Promise<Received> {
    if (!ours(uploadId)) throw unknownUpload();
    // The blob is looked at while the row is read (at the key begin gave it; whose upload it is,
    // and so whether the look counts, is checked below; the look tells the caller nothing).
    const [row, early] = await Promise.allSettled([this.store.upload(uploadId), this.blobs.stat(tmpKey(uploadId))]);
    if (row.status === 'rejected') throw row.reason;
    const upload = row.value;
    if (!upload || upload.account_id !== accountId) throw unknownUpload();
    if (early.status === 'rejected') throw early.reason;
    const stored = upload.tmp_key === tmpKey(uploadId) ? early.value : await this.blobs.stat(upload.tmp_key);
    if (!stored) {
      // The gateway wrote somewhere this service cannot see: not the same blob store.
      await this.discard(uploadId, upload.tmp_key);
      this.log.error(
        { uploadId, key: upload.tmp_key },
        'an upload committed without its content: do the gateway and the drive share one blob store?',
      );
      throw new DomainError('internal', 'upload_content_missing', "The upload's content is not in the file store; nothing was written.");
    }
    if (stored.size !== size) {
      await this.discard(uploadId, upload.tmp_key);
      throw new DomainError('invalid_argument', 'upload_incomplete', `The upload holds ${stored.size} of ${size} bytes; nothing was written.`);
    }
    return { uploadId, tmpKey: upload.tmp_key, sha256, size, crc32 };
  }

  /** Forgets an upload of the account that will not be committed (its bytes did not arrive). */
  async abort(accountId: string, uploadId: string): Promise<void> {
    if (!ours(uploadId)) return;
    const upload = await this.store.upload(uploadId);
    if (upload && upload.account_id === accountId) await this.discard(uploadId, upload.tmp_key);
  }

  /**
   * Makes the received content readable at its content key. The upload is marked as placing that
   * content and the blob row is held first (one statement, committed on its own), so the collector
   * cannot remove the key between this and the metadata commit, even with no grace period; once
   * the upload ends the hold counts.
   */
  async place(accountId: string, r: Received, holdSeconds: number): Promise<void> {
    // The hold first, then the look: a collector removing the same content holds its row until the
    // blob is gone, so a look taken before the hold could see a blob about to go.
    await this.store.placeAndHold(this.store.sql, r.uploadId, accountId, r.sha256, r.size, holdSeconds, r.crc32);
    const target = contentKey(accountId, r.sha256);
    const existing = await this.blobs.stat(target);
    if (existing && existing.size === r.size) {
      // Same bytes already stored (a retried upload, or a copy): keep the one there.
      await this.blobs.remove(r.tmpKey);
    } else {
      await this.blobs.move(r.tmpKey, target);
    }
  }

  /** Ensures the empty content exists (for a new file made by locking a name). */
  async ensureEmpty(accountId: string, holdSeconds: number): Promise<void> {
    await this.store.hold(this.store.sql, accountId, EMPTY_SHA256, 0, holdSeconds, 0); // the CRC-32 of no bytes
    const key = contentKey(accountId, EMPTY_SHA256);
    if (!(await this.blobs.stat(key))) await this.blobs.put(key, Buffer.alloc(0));
  }

  /** Forgets an upload: its temporary blob and its row. */
  async discard(uploadId: string, key: string): Promise<void> {
    await this.blobs.remove(key).catch((err) => this.log.warn({ err, key }, 'could not remove a temporary blob'));
    await this.finish(uploadId);
  }

  /** Forgets an upload's row (its blob was moved into place, or is gone). */
  async finish(uploadId: string): Promise<void> {
    await this.store.endUpload(this.store.sql, uploadId).catch((err) => this.log.warn({ err, uploadId }, 'could not forget an upload'));
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
    versionQuota: number,
  ): Promise<{ blobs: number; uploads: number; locks: number }> {
    const earlierBy = Math.max(0, configuredGrace - graceSeconds);
    const sql = this.store.sql;
    let blobs = 0;
    for (;;) {
      const n = await sql.tx(async (q) => this.removeBlobs(q, await this.store.collectable(q, 100, earlierBy)));
      blobs += n;
      if (n < 100) break;
    }
    // Then, in each account, released content beyond what its version quota leaves room for, the
    // longest-released first, grace period or not: a writing account's disk does not grow unbounded.
    for (;;) {
      const n = await sql.tx(async (q) =>
        this.removeBlobs(q, await quotaStore.lockUnreferenced(q, await quotaStore.overBudget(q, versionQuota, configuredGrace, 100))),
      );
      blobs += n;
      if (n < 100) break;
    }
    const uploads = await sql.tx(async (q) => {
      const rows = await this.store.staleUploads(q, uploadAgeSeconds, 1000);
      for (const r of rows) {
        await this.blobs.remove(r.tmp_key);
        await this.store.endUpload(q, r.id);
      }
      return rows.length;
    });
    const locks = await sql.tx((q) => this.store.deleteExpiredLocks(q));
    return { blobs, uploads, locks };
  }

  /** Removes locked, unreferenced blobs and their rows; how many. */
  private async removeBlobs(q: Queryable, rows: Array<{ account_id: string; sha256: string }>): Promise<number> {
    for (const r of rows) {
      await this.blobs.remove(contentKey(r.account_id, r.sha256));
      await this.store.forgetBlob(q, r.account_id, r.sha256);
    }
    return rows.length;
  }
}
