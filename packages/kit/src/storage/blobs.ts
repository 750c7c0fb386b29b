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
    async ping() {
      await fs.promises.access(tmp, fs.constants.W_OK);
    },
  };
}

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
    async ping() {
      await client.bucketExists(bucket);
    },
  };
}
