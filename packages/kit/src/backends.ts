import path from 'node:path';

import type { Config } from './config.js';
import type { Logger } from './log.js';
import { type Blobs, createFsBlobs, createS3Blobs } from './storage/blobs.js';
import { type Bus, createMemoryBus, createNatsBus } from './storage/bus.js';
import { type Cache, createMemoryCache, createRedisCache } from './storage/cache.js';
import { createPgliteSql, createPgSql, type Sql } from './storage/sql.js';

export type BackendName = 'sql' | 'bus' | 'cache' | 'blobs';

/**
 * The process's backends, each opened on first use and shared by every service in the process:
 * the real one when its variable is set, the embedded one otherwise.
 */
export class Backends {
  private readonly opened = new Map<BackendName, Promise<unknown>>();

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  private once<T>(name: BackendName, open: () => Promise<T>): Promise<T> {
    let p = this.opened.get(name) as Promise<T> | undefined;
    if (!p) {
      p = open();
      this.opened.set(name, p);
      p.catch(() => this.opened.delete(name));
    }
    return p;
  }

  describe(name: BackendName): string {
    const c = this.config;
    switch (name) {
      case 'sql':
        return c.DATABASE_URL ? 'postgresql' : 'pglite';
      case 'bus':
        return c.NATS_URL ? 'nats-jetstream' : 'in-process';
      case 'cache':
        return c.REDIS_URL ? 'redis' : 'memory';
      case 'blobs':
        return c.S3_ENDPOINT ? 's3' : 'filesystem';
    }
  }

  sql(): Promise<Sql> {
    return this.once('sql', async () =>
      this.config.DATABASE_URL
        ? createPgSql(this.config.DATABASE_URL, { applicationName: `svc-${this.config.SVC_SERVICE}` })
        : createPgliteSql(path.resolve(this.config.SVC_DATA_DIR, 'pg')),
    );
  }

  bus(): Promise<Bus> {
    const onError = (err: unknown) => this.log.warn({ err }, 'event handler failed');
    return this.once('bus', async () =>
      this.config.NATS_URL
        ? createNatsBus(this.config.NATS_URL, this.config.SVC_NAMESPACE, onError)
        : createMemoryBus(this.config.SVC_NAMESPACE, onError),
    );
  }

  cache(): Promise<Cache> {
    return this.once('cache', async () =>
      this.config.REDIS_URL ? createRedisCache(this.config.REDIS_URL, this.config.SVC_NAMESPACE) : createMemoryCache(),
    );
  }

  blobs(): Promise<Blobs> {
    const c = this.config;
    return this.once('blobs', async () =>
      c.S3_ENDPOINT
        ? createS3Blobs({
            endpoint: c.S3_ENDPOINT,
            accessKey: c.S3_ACCESS_KEY!,
            secretKey: c.S3_SECRET_KEY!,
            bucket: c.S3_BUCKET!,
            region: c.S3_REGION,
          })
        : createFsBlobs(path.resolve(c.SVC_DATA_DIR, 'blobs')),
    );
  }

  /** Pings each named backend; the answer per backend is "ok" or the error's message. */
  async check(names: BackendName[]): Promise<Record<string, { ok: boolean; kind: string; error?: string }>> {
    const out: Record<string, { ok: boolean; kind: string; error?: string }> = {};
    await Promise.all(
      names.map(async (name) => {
        const kind = this.describe(name);
        try {
          const b = (await Promise.race([
            this[name](),
            new Promise((_, rej) => setTimeout(() => rej(new Error('timed out opening')), 2000).unref()),
          ])) as { ping(): Promise<void> };
          await Promise.race([b.ping(), new Promise((_, rej) => setTimeout(() => rej(new Error('timed out')), 2000).unref())]);
          out[name] = { ok: true, kind };
        } catch (err) {
          out[name] = { ok: false, kind, error: (err as Error).message };
        }
      }),
    );
    return out;
  }

  async close(): Promise<void> {
    const all = [...this.opened.values()];
    this.opened.clear();
    await Promise.all(
      all.map(async (p) => {
        const b = (await p.catch(() => null)) as { close?: () => Promise<void> } | null;
        await b?.close?.().catch(() => {});
      }),
    );
  }
}
