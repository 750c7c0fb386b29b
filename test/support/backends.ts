import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { connect } from 'nats';
import pg from 'pg';

/** Real backends come from the environment (CI sets them all); absent ones are embedded. */
export const REAL = {
  pg: process.env.DATABASE_URL,
  redis: process.env.REDIS_URL,
  nats: process.env.NATS_URL,
};

export const randomName = (prefix: string) => `${prefix}${randomBytes(5).toString('hex')}`;

export function tempDir(prefix = 'svc-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A fresh database on the real server, so parallel suites never see each other's rows. */
export async function createDatabase(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = randomName('svc_t_');
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** s3rver on a free loopback port: the S3 peer that stands in for MinIO in tests. */
export async function startS3(): Promise<{ endpoint: string; accessKey: string; secretKey: string; stop(): Promise<void> }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3rver = require('s3rver');
  const dir = tempDir('svc-s3-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir });
  const addr = (await server.run()) as { port: number };
  return {
    endpoint: `http://127.0.0.1:${addr.port}`,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    async stop() {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Deletes the JetStream stream of a test namespace, so runs do not pile streams up on the server. */
export async function dropNatsNamespace(namespace: string): Promise<void> {
  if (!REAL.nats) return;
  const nc = await connect({ servers: REAL.nats });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(namespace.toUpperCase()).catch(() => false);
  } finally {
    await nc.close();
  }
}
