import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type * as Minio from 'minio';

import { CONNECTION_ERRNO, DomainError } from '../errors.js';
import { putStream, S3_PART_BYTES } from './s3-upload.js';

export interface BlobRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface BlobReadOptions {
  /**
   * Read into a few buffers used again rather than a new one per chunk: a chunk's bytes stay
   * valid only until the reader takes the third chunk after it (REUSED_READ_BUFFERS − 1), so a
   * reader must be done with a chunk by then (passed through verifiedContent, which holds one
   * back: until its reader asks for the next one). A new 1 MiB buffer per chunk costs more than the copy into it: the garbage
   * collector runs a full collection of the process's heap for every few dozen MiB of them. The
   * filesystem store does it; S3's chunks are the HTTP client's, new each time.
   */
  reuseBuffers?: boolean;
}

export interface BlobPutOptions {
  /**
   * The object is written only to be moved (`move`) before anything relies on it, as an upload's
   * temporary blob is: its data is on the disk when the put returns, but its name may not survive
   * a crash (the filesystem store does not flush the folder; the move flushes the folder of the
   * name that counts). A crash before the move can lose it; the upload was not committed then.
   */
  staged?: boolean;
}

/**
 * Content storage by key. A put is all-or-nothing (a failed put leaves no partial object) and
 * durable when it returns (the filesystem store flushes the data and the new name to the disk;
 * MinIO/S3 acknowledge a put once it is stored), so a crash after it cannot leave a cut object.
 */
export interface Blobs {
  readonly kind: 'fs' | 's3';
  /**
   * `key` may still be on its way (a promise): the filesystem store writes and flushes the data
   * meanwhile and gives it the key once it comes (a key that fails removes what was written and
   * fails the put with its error); S3 waits for it before the first byte.
   */
  put(key: string | Promise<string>, body: Readable | Buffer, size?: number, opts?: BlobPutOptions): Promise<{ size: number }>;
  get(key: string, range?: BlobRange, opts?: BlobReadOptions): Promise<Readable>;
  stat(key: string): Promise<{ size: number } | null>;
  remove(key: string): Promise<void>;
  /**
   * Moves a stored object to another key, replacing what is there: atomic on the filesystem
   * (rename, then the folder is flushed so that the new name is durable); on S3 a server-side
   * copy, then the source is removed. Readers of `to` see the old object or the new one, never a
   * partial one.
   */
  move(from: string, to: string): Promise<void>;
  ping(): Promise<void>;
}

function checkKey(key: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,500}$/.test(key) || key.includes('..')) {
    throw new Error(`bad blob key ${JSON.stringify(key)}`);
  }
}

/** While a file is being written, its data is flushed to the disk every this many bytes (in the background). */
const FS_SYNC_EVERY = 8 * 1024 * 1024;
/** Bytes a file write gathers before it waits for the disk (several chunks go out in one writev). */
const FS_WRITE_BUFFER = 1024 * 1024;
/**
 * Bytes per read of a blob (fs.createReadStream's default is 64 KiB): each chunk then goes through
 * the hash, the content's checks and the socket once, so fewer, larger chunks move a large file
 * faster (a 64 MiB read hashed on the way: ~1.4 GiB/s with 1 MiB chunks, about half with 64 KiB).
 */
const FS_READ_BUFFER = 1024 * 1024;
/** The buffers a read with `reuseBuffers` cycles through (BlobReadOptions). */
const REUSED_READ_BUFFERS = 4;

/**
 * A file (or a range of it) in chunks read into REUSED_READ_BUFFERS buffers in turn. One chunk is
 * read ahead at most (one object buffered, read when the one before is taken), so a chunk's
 * buffer is read into again only once the reader takes the third chunk after it.
 */
function reusedBufferRead(file: string, range?: BlobRange): Readable {
  const buffers: Buffer[] = [];
  let turn = 0;
  let position = range?.start ?? 0;
  let end = range ? range.end + 1 : Infinity;
  let fh: fs.promises.FileHandle | undefined;
  return new Readable({
    objectMode: true,
    highWaterMark: 1,
    construct(cb) {
      (async () => {
        fh = await fs.promises.open(file, 'r');
        // The buffers are no larger than what there is to read (a small file, a short range).
        end = Math.min(end, (await fh.stat()).size);
      })().then(() => cb(), cb);
    },
    read() {
      const length = Math.min(FS_READ_BUFFER, end - position);
      if (length <= 0) return void this.push(null);
      const i = turn++ % REUSED_READ_BUFFERS;
      const buffer = (buffers[i] ??= Buffer.allocUnsafeSlow(Math.min(FS_READ_BUFFER, end - (range?.start ?? 0))));
      fh!.read(buffer, 0, length, position).then(
        ({ bytesRead }) => {
          position += bytesRead;
          if (bytesRead === 0) this.push(null);
          else this.push(buffer.subarray(0, bytesRead));
        },
        (err: Error) => this.destroy(err),
      );
    },
    destroy(err, cb) {
      const h = fh;
      fh = undefined;
      if (!h) return cb(err);
      h.close().then(
        () => cb(err),
        () => cb(err),
      );
    },
  });
}

/**
 * fsync of a directory: makes the names created, renamed or removed in it durable. Not possible
 * on Windows (a directory cannot be opened there); there the rename is what there is.
 */
async function syncDir(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const fh = await fs.promises.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Makes `dir`'s entries durable, and, when `mkdir` created folders on the way (`created`: the
 * first one it made), each new folder's entry in its parent too.
 */
async function syncDirs(dir: string, created: string | undefined): Promise<void> {
  const dirs = [dir];
  if (created) {
    for (let d = dir; d !== created && path.dirname(d) !== d;) {
      d = path.dirname(d);
      dirs.push(d);
    }
    dirs.push(path.dirname(created));
  }
  await Promise.all(dirs.map(syncDir));
}

/** Writes all of `buffers` (a short write continues where it stopped). */
async function writeAll(fh: fs.promises.FileHandle, buffers: Buffer[]): Promise<void> {
  let total = buffers.reduce((n, b) => n + b.length, 0);
  while (total > 0) {
    const { bytesWritten } = buffers.length === 1 ? await fh.write(buffers[0]!) : await fh.writev(buffers);
    total -= bytesWritten;
    if (total <= 0) break;
    let skip = bytesWritten;
    while (skip >= buffers[0]!.length) skip -= buffers.shift()!.length;
    if (skip) buffers[0] = buffers[0]!.subarray(skip);
  }
}

/**
 * A stream into an open file whose data is on the disk when the stream finishes: several chunks
 * go out in one writev, the data written so far is flushed (fdatasync) in the background every
 * FS_SYNC_EVERY bytes so that the last flush has little left to do, and `final` flushes the rest.
 */
function durableFileSink(fh: fs.promises.FileHandle): Writable {
  let unsynced = 0;
  let syncing: Promise<void> | null = null;
  let syncError: unknown = null;
  const startSync = () => {
    unsynced = 0;
    syncing = fh.datasync().then(
      () => {
        syncing = null;
      },
      (err: unknown) => {
        syncing = null;
        syncError ??= err;
      },
    );
  };
  const wrote = (n: number, cb: (err?: Error | null) => void) => {
    if (syncError) return cb(syncError as Error);
    unsynced += n;
    if (unsynced >= FS_SYNC_EVERY && !syncing) startSync();
    cb();
  };
  return new Writable({
    highWaterMark: FS_WRITE_BUFFER,
    writev(chunks, cb) {
      const buffers = chunks.map((c) => c.chunk as Buffer);
      const n = buffers.reduce((s, b) => s + b.length, 0);
      writeAll(fh, buffers).then(() => wrote(n, cb), cb);
    },
    final(cb) {
      (async () => {
        await syncing;
        if (syncError) throw syncError;
        await fh.datasync();
      })().then(() => cb(), cb);
    },
  });
}

/**
 * Files under a folder. A put is durable when it returns: the data is written to a temporary
 * file and flushed to the disk (fdatasync), the file is renamed into place, and the folder is
 * flushed (fsync) so that the new name survives a crash too (not for a staged put: the move
 * flushes the folder it lands in, a flush fewer per upload). A put that fails leaves nothing
 * (the temporary file is removed); a crash in the middle leaves at most a temporary file, never
 * a partial object.
 */
export function createFsBlobs(root: string): Blobs {
  const tmp = path.join(root, '.tmp');
  fs.mkdirSync(tmp, { recursive: true });
  // Partial writes of a process that was killed are never readable; remove the stale ones.
  for (const name of fs.readdirSync(tmp)) {
    const f = path.join(tmp, name);
    try {
      if (Date.now() - fs.statSync(f).mtimeMs > 3600_000) fs.rmSync(f, { force: true });
    } catch {
      // gone already
    }
  }
  const file = (key: string) => {
    checkKey(key);
    return path.join(root, key);
  };
  return {
    kind: 'fs',
    async put(key, body, _size, opts) {
      const named = typeof key === 'string' ? file(key) : undefined;
      const partial = path.join(tmp, randomBytes(12).toString('hex'));
      let target: string | undefined;
      try {
        // The folder is made while the data is being written (once the key is known).
        const made = named ? fs.promises.mkdir(path.dirname(named), { recursive: true }) : undefined;
        made?.catch(() => {});
        const fh = await fs.promises.open(partial, 'wx');
        try {
          if (Buffer.isBuffer(body)) {
            await writeAll(fh, [body]);
            await fh.datasync();
          } else {
            await pipeline(body, durableFileSink(fh));
          }
        } finally {
          await fh.close();
        }
        target = named ?? file(await key);
        const dir = path.dirname(target);
        const created = await (made ?? fs.promises.mkdir(dir, { recursive: true }));
        await fs.promises.rename(partial, target);
        // A staged object's name is made durable by the move that follows (BlobPutOptions).
        if (!opts?.staged) await syncDirs(dir, created);
      } catch (err) {
        await fs.promises.rm(partial, { force: true });
        throw err;
      }
      return { size: (await fs.promises.stat(target)).size };
    },
    async get(key, range, opts) {
      const f = file(key);
      await fs.promises.access(f);
      if (opts?.reuseBuffers) return reusedBufferRead(f, range);
      return fs.createReadStream(f, { highWaterMark: FS_READ_BUFFER, ...(range ? { start: range.start, end: range.end } : {}) });
    },
    async stat(key) {
      try {
        return { size: (await fs.promises.stat(file(key))).size };
      } catch {
        return null;
      }
    },
    async remove(key) {
      await fs.promises.rm(file(key), { force: true });
    },
    async move(from, to) {
      const source = file(from);
      const target = file(to);
      const dir = path.dirname(target);
      const created = await fs.promises.mkdir(dir, { recursive: true });
      // The source's data was flushed when it was put; the rename is made durable by flushing
      // the folder it lands in (and the folders made for it).
      await fs.promises.rename(source, target);
      await syncDirs(dir, created);
    },
    async ping() {
      await fs.promises.access(tmp, fs.constants.W_OK);
    },
  };
}

/** The largest object one S3 CopyObject call copies. */
const S3_MAX_COPY_BYTES = 5 * 1024 ** 3;

/** MinIO or any S3 API, through the minio client. */
export async function createS3Blobs(options: {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}): Promise<Blobs> {
  // Loaded here, not at the top: the embedded stack, with its blobs in files, never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const minio = require('minio') as typeof Minio;
  const url = new URL(options.endpoint);
  const client = new minio.Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    useSSL: url.protocol === 'https:',
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    region: options.region,
    pathStyle: true,
    // Streams are sent by putStream in parts of S3_PART_BYTES; a Buffer goes in one PUT up to this.
    partSize: S3_PART_BYTES,
  });
  const { bucket } = options;
  if (!(await client.bucketExists(bucket))) {
    await client.makeBucket(bucket, options.region).catch(async (err) => {
      if (!(await client.bucketExists(bucket))) throw err;
    });
  }
  return {
    kind: 's3',
    async put(named, body, size) {
      const key = await named;
      checkKey(key);
      if (Buffer.isBuffer(body)) {
        await retried(() => client.putObject(bucket, key, body, size));
        return { size: (await retried(() => client.statObject(bucket, key))).size };
      }
      await putStream(client, bucket, key, body, retried);
      const st = await retried(() => client.statObject(bucket, key));
      return { size: st.size };
    },
    async get(key, range) {
      checkKey(key);
      if (range) return retried(() => client.getPartialObject(bucket, key, range.start, range.end - range.start + 1));
      return retried(() => client.getObject(bucket, key));
    },
    async stat(key) {
      checkKey(key);
      try {
        return { size: (await retried(() => client.statObject(bucket, key))).size };
      } catch (err) {
        if ((err as { code?: string }).code === 'NotFound' || (err as { code?: string }).code === 'NoSuchKey') {
          return null;
        }
        throw err;
      }
    },
    async remove(key) {
      checkKey(key);
      await retried(() => client.removeObject(bucket, key));
    },
    async move(from, to) {
      checkKey(from);
      checkKey(to);
      await retried(() => moveObject(from, to));
    },
    async ping() {
      await client.bucketExists(bucket);
    },
  };

  async function moveObject(from: string, to: string): Promise<void> {
    const st = await client.statObject(bucket, from);
    if (st.size > S3_MAX_COPY_BYTES) {
      // CopyObject stops at 5 GiB; larger objects are copied part by part.
      await client.composeObject(new minio.CopyDestinationOptions({ Bucket: bucket, Object: to }), [
        new minio.CopySourceOptions({ Bucket: bucket, Object: from }),
      ]);
    } else {
      await client.copyObject(bucket, to, `/${bucket}/${from}`, new minio.CopyConditions());
    }
    await client.removeObject(bucket, from);
  }
}

/** A failure of the connection to the object store, not an answer of it. */
const connectionFailed = (err: unknown) =>
  CONNECTION_ERRNO.has((err as { code?: string })?.code ?? '') || /socket hang up/i.test((err as Error)?.message ?? '');

/**
 * Runs a request of the object store that may be sent again (it carries no stream) once more when
 * its connection failed: a kept-alive connection the store closed in the meantime (after a pause of
 * the process, or the store's idle timeout) fails the first request sent on it. A failure that
 * remains is the store being unreachable: 503 storage_unavailable, not an internal error.
 */
async function retried<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    if (!connectionFailed(err)) throw err;
    try {
      return await request();
    } catch (again) {
      if (!connectionFailed(again)) throw again;
      throw new DomainError(
        'unavailable',
        'storage_unavailable',
        'The file store is unavailable; try again.',
        { retryAfterSeconds: 2 },
        { cause: again },
      );
    }
  }
}
