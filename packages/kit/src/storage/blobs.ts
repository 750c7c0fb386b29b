import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import * as Minio from 'minio';

export interface BlobRange {
  start: number;
  /** Inclusive. */
  end: number;
}

/** Content storage by key. A put is all-or-nothing: a failed put leaves no partial object. */
export interface Blobs {
  readonly kind: 'fs' | 's3';
  put(key: string, body: Readable | Buffer, size?: number): Promise<{ size: number }>;
  get(key: string, range?: BlobRange): Promise<Readable>;
  stat(key: string): Promise<{ size: number } | null>;
  remove(key: string): Promise<void>;
  /**
   * Moves a stored object to another key, replacing what is there: atomic on the filesystem
   * (rename); on S3 a server-side copy, then the source is removed. Readers of `to` see the old
   * object or the new one, never a partial one.
   */
  move(from: string, to: string): Promise<void>;
  ping(): Promise<void>;
}

function checkKey(key: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,500}$/.test(key) || key.includes('..')) {
    throw new Error(`bad blob key ${JSON.stringify(key)}`);
  }
}

/** Files under a folder; writes go to a temporary file and are renamed into place. */
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
    async put(key, body) {
      const target = file(key);
      const partial = path.join(tmp, randomBytes(12).toString('hex'));
      try {
        if (Buffer.isBuffer(body)) await fs.promises.writeFile(partial, body);
        else await pipeline(body, fs.createWriteStream(partial));
        await fs.promises.mkdir(path.dirname(target), { recursive: true });
        await fs.promises.rename(partial, target);
      } catch (err) {
        await fs.promises.rm(partial, { force: true });
        throw err;
      }
      return { size: (await fs.promises.stat(target)).size };
    },
    async get(key, range) {
      const f = file(key);
      await fs.promises.access(f);
      return fs.createReadStream(f, range ? { start: range.start, end: range.end } : {});
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
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      await fs.promises.rename(source, target);
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
  const url = new URL(options.endpoint);
  const client = new Minio.Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    useSSL: url.protocol === 'https:',
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    region: options.region,
    pathStyle: true,
    // The client buffers one part in memory: keep parts small (its default grows to ~550 MiB).
    partSize: 16 * 1024 * 1024,
  });
  const { bucket } = options;
  if (!(await client.bucketExists(bucket))) {
    await client.makeBucket(bucket, options.region).catch(async (err) => {
      if (!(await client.bucketExists(bucket))) throw err;
    });
  }
  return {
    kind: 's3',
    async put(key, body, size) {
      checkKey(key);
      const upload = client.putObject(bucket, key, body, size);
      if (Buffer.isBuffer(body)) {
        await upload;
      } else {
        // The minio client does not notice a source stream that fails (a client that went away):
        // stop waiting on it; the unfinished upload never becomes an object.
        upload.catch(() => {});
        await Promise.race([
          upload,
          new Promise((_, reject) => {
            body.once('error', reject);
            body.once('close', () => {
              if (!body.readableEnded) reject(new Error('upload stream closed before its end'));
            });
          }),
        ]);
      }
      const st = await client.statObject(bucket, key);
      return { size: st.size };
    },
    async get(key, range) {
      checkKey(key);
      if (range) return client.getPartialObject(bucket, key, range.start, range.end - range.start + 1);
      return client.getObject(bucket, key);
    },
    async stat(key) {
      checkKey(key);
      try {
        return { size: (await client.statObject(bucket, key)).size };
      } catch (err) {
        if ((err as { code?: string }).code === 'NotFound' || (err as { code?: string }).code === 'NoSuchKey') {
          return null;
        }
        throw err;
      }
    },
    async remove(key) {
      checkKey(key);
      await client.removeObject(bucket, key);
    },
    async move(from, to) {
      checkKey(from);
      checkKey(to);
      const st = await client.statObject(bucket, from);
      if (st.size > S3_MAX_COPY_BYTES) {
        // CopyObject stops at 5 GiB; larger objects are copied part by part.
        await client.composeObject(new Minio.CopyDestinationOptions({ Bucket: bucket, Object: to }), [
          new Minio.CopySourceOptions({ Bucket: bucket, Object: from }),
        ]);
      } else {
        await client.copyObject(bucket, to, `/${bucket}/${from}`, new Minio.CopyConditions());
      }
      await client.removeObject(bucket, from);
    },
    async ping() {
      await client.bucketExists(bucket);
    },
  };
}
