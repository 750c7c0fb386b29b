import { driveClient } from '@svc/clients';
import type { AccountLimiter, Backends, HashPool, Logger, Principal, Registry } from '@svc/kit';
import { DomainError, storeHashed, verifiedContent } from '@svc/kit';
import type { drive } from '@svc/proto';

/**
 * A commit moves the blob (a server-side copy on S3): its deadline is the usual one plus the time
 * of the copy at a slow store's pace, at most COMMIT_DEADLINE_MAX_MS. A small file's commit then
 * waits for a frozen or stalled drive no longer than any other call (issue 23: within the
 * deadline, never a hang); it once waited for the drive however long it was stopped.
 */
const COMMIT_DEADLINE_MAX_MS = 120_000;
/** The slowest copy a commit allows for: 10 MiB a second (10,486 bytes a millisecond). */
const COPY_BYTES_PER_MS = (10 * 1024 * 1024) / 1000;

/** The deadline of a commit of `size` bytes, for a registry whose calls have `deadlineMs`. */
export function commitDeadlineMs(deadlineMs: number, size: number): number {
  return Math.max(deadlineMs, Math.min(COMMIT_DEADLINE_MAX_MS, deadlineMs + Math.ceil(size / COPY_BYTES_PER_MS)));
}

/**
 * Errors of writes the drive refused before it took their content (BeginUpload: a failed
 * precondition, a taken name): nothing ran, however much of the body was read meanwhile, so an
 * idempotency key is released as for a request cut short (idempotency.ts).
 */
export const refusedBeforeContent = new WeakSet<object>();

/** What moving drive content needs: the drive's client, the blob store, the hash pool. */
export interface ContentDeps {
  log: Logger;
  registry: Registry;
  /** The blob store (drive content goes through the front, not through the drive service). */
  backends: Pick<Backends, 'blobs'>;
  /** SHA-256 (and CRC-32) of content on its way in, on worker threads; SHA-256 of old content on its way out. */
  hashes: HashPool;
  /** Uploads an account may have in progress at once (absent: no cap; docs/reliability.md, "Fair shares"). */
  uploads?: AccountLimiter;
}

// Content through the gateway --------------------------------------------------------------------
// Bytes never pass through the drive service: it checks a write and names a temporary blob key,
// the gateway streams the client's bytes to that key (hashed on the way), and the service commits
// the new version (or forgets the upload). Reads are the same: the service answers with the
// version and range, the gateway streams them from the blob store and checks their CRC-32 (or,
// for content stored without one, their SHA-256).

export interface Caller {
  token: string;
  requestId: string;
  /** Who calls (the token's principal), for the per-account caps. */
  principal?: Principal;
}

/**
 * Writes `chunks` as a file's content: BeginUpload (a failed precondition answers before any
 * byte is read), the bytes to the blob store, then CommitUpload. A source that fails (a client
 * gone mid-body) or goes over the limit leaves nothing, and the upload is forgotten.
 */
export async function upload(
  deps: ContentDeps,
  caller: Caller,
  header: drive.UploadHeader,
  chunks: AsyncIterable<Buffer>,
): Promise<drive.ItemResponse> {
  // Refused before anything is asked or read when the account has its uploads in progress already.
  const release = caller.principal && deps.uploads ? deps.uploads.acquire(caller.principal) : undefined;
  try {
    return await uploadSlot(deps, caller, header, chunks);
  } finally {
    release?.();
  }
}

async function uploadSlot(deps: ContentDeps, caller: Caller, header: drive.UploadHeader, chunks: AsyncIterable<Buffer>): Promise<drive.ItemResponse> {
  const client = driveClient(deps.registry);
  const call = { principalToken: caller.token, requestId: caller.requestId };
  // The bytes start on their way while the drive checks the write (storeHashed: at most
  // EARLY_BYTES of them before its answer); a refusal is the answer, and nothing stays.
  const begun = client.beginUpload(header, call);
  const target = begun.then((s) => ({ key: s.blobKey, limit: s.limitBytes }));
  let stored;
  try {
    stored = await storeHashed(await deps.backends.blobs(), deps.hashes, target, chunks, {
      declaredSize: header.declaredSize,
      // The commit moves the bytes to their content key, and makes that name durable.
      staged: true,
    });
  } catch (err) {
    let slot: drive.BeginUploadResponse;
    try {
      slot = await begun;
    } catch (refusal) {
      // A write the drive refused: its answer, as it gave it (no upload was registered, nothing ran).
      if (typeof refusal === 'object' && refusal !== null) refusedBeforeContent.add(refusal);
      throw refusal;
    }
    client
      .abortUpload({ uploadId: slot.uploadId }, call)
      .catch((e: unknown) => deps.log.warn({ err: e, uploadId: slot.uploadId }, 'could not abort an upload'));
    if (err instanceof DomainError) throw err;
    // Not the client's doing (a full disk, an S3 error, a failed hash): nothing was written.
    deps.log.error({ err, uploadId: slot.uploadId, key: slot.blobKey, requestId: caller.requestId }, 'storing an upload failed');
    throw new DomainError('unavailable', 'storage_unavailable', 'The file store could not take the content; nothing was written.', undefined, {
      cause: err,
    });
  }
  const slot = await begun;
  return client.commitUpload(
    { header, uploadId: slot.uploadId, sha256: stored.sha256, size: stored.size, crc32: stored.crc32 },
    { ...call, deadlineMs: commitDeadlineMs(deps.registry.deadlineMs, stored.size) },
  );
}

export interface Download {
  header: drive.DownloadHeader;
  /**
   * The bytes, when the answer has any (verified against the content's checksum on a full read).
   * Each chunk is lent: it is valid until the next one is asked for (the blob store reads into a
   * few buffers it uses again, BlobReadOptions), so a reader writes it out before asking for more
   * and copies what it keeps.
   */
  body?: AsyncIterable<Buffer>;
  /** Stops reading (the client went away); nothing is held after it. */
  cancel(): void;
}

/** Asks the drive what to serve, and opens the blob when there are bytes to send. */
export async function download(deps: ContentDeps, caller: Caller, request: drive.DownloadRequest): Promise<Download> {
  const opened = await driveClient(deps.registry).openContent(request, { principalToken: caller.token, requestId: caller.requestId });
  const header = opened.header;
  if (!header?.item) throw new DomainError('internal', 'upstream_error', 'The drive answered without the file.');
  if (!opened.blobKey) return { header, cancel: () => {} };
  const item = header.item;
  const range = header.partial ? { start: header.start, end: header.end } : undefined;
  const where = { id: item.id, sha256: item.sha256, key: opened.blobKey, requestId: caller.requestId };
  let blob;
  try {
    blob = await (await deps.backends.blobs()).get(opened.blobKey, range, { reuseBuffers: true });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'NoSuchKey' || code === 'NotFound') {
      // A committed file whose blob is gone: content was lost, the operator must hear of it.
      deps.log.error({ err, ...where }, 'the content of a file is missing from the blob store');
      throw new DomainError('internal', 'content_missing', "The file's content could not be read.", undefined, { cause: err });
    }
    throw new DomainError('unavailable', 'storage_unavailable', 'The file store is unavailable; try again.', undefined, { cause: err });
  }
  // A whole read is checked by the content's CRC-32 when the drive has one (else its SHA-256); a range is served as stored.
  const whole = header.partial ? {} : { sha256: item.sha256, crc32: opened.crc32 };
  const verified = verifiedContent(blob, deps.hashes, { bytes: header.end - header.start + 1, ...whole });
  async function* logged(): AsyncGenerator<Buffer> {
    try {
      yield* verified;
    } catch (err) {
      // The reader sees a broken transfer; the operator must hear why.
      const damaged = err instanceof DomainError && err.code === 'content_damaged';
      deps.log.error({ err, ...where }, damaged ? 'stored content does not match its file' : "reading a file's content failed");
      throw err;
    }
  }
  const body = logged();
  return {
    header,
    body,
    cancel: () => {
      blob.destroy();
      void body.return(undefined);
    },
  };
}
