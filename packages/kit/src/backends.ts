import path from 'node:path';

import type { Config } from './config.js';
import { DomainError } from './errors.js';
import type { Logger } from './log.js';
import { type Blobs, createFsBlobs, createS3Blobs } from './storage/blobs.js';
import type { Bus } from './storage/bus.js';
import { createMemoryBus } from './storage/bus-memory.js';
import { createNatsBus } from './storage/bus-nats.js';
import { type Cache, createMemoryCache, createRedisCache } from './storage/cache.js';
import { createPgliteSql } from './storage/pglite.js';
import { createPgSql, type Sql } from './storage/sql.js';

export type BackendName = 'sql' | 'bus' | 'cache' | 'blobs';

export interface BackendStatus {
  ok: boolean;
  kind: string;
  /** The error's message (for the operator's log: it may name hosts). */
  error?: string;
  /** Why, in words meant for callers (a DomainError's code and message), when the backend said so. */
  cause?: string;
}

/**
 * The process's backends, each opened on first use and shared by every service in the process:
 * the real one when its variable is set, the embedded one otherwise.
 */
export class Backends {
  /** By name; a database pool with its own session settings under `sql <settings>`. */
  private readonly opened = new Map<string, Promise<unknown>>();

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  private once<T>(name: string, open: () => Promise<T>): Promise<T> {
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

  /** Whether a backend has been opened in this process (the gateway reports the database only then). */
  isOpen(name: BackendName): boolean {
    return this.opened.has(name);
  }

  /**
   * The database. With `settings` (a service's own server settings, PostgreSQL only), a pool of its
   * own for the caller, as a service in its own process would have; the embedded database is one
   * connection for the whole process, where they do not apply.
   */
  sql(settings?: Record<string, string>): Promise<Sql> {
    const c = this.config;
    const own = c.DATABASE_URL && settings && Object.keys(settings).length ? settings : undefined;
    return this.once(own ? `sql ${JSON.stringify(own)}` : 'sql', async () =>
      c.DATABASE_URL
        ? createPgSql(c.DATABASE_URL, {
            applicationName: `svc-${c.SVC_SERVICE}`,
            guard: c.SVC_SQL_GUARD,
            warn: (message, statement) => this.log.warn({ statement }, message),
            settings: own,
          })
        : createPgliteSql(path.resolve(c.SVC_DATA_DIR, 'pg'), {
            txTimeoutMs: c.SVC_SQL_TX_TIMEOUT_MS,
            busyTimeoutMs: c.SVC_SQL_BUSY_TIMEOUT_MS,
            guard: c.SVC_SQL_GUARD,
            // Within the shutdown's drain bound, which also waits for in-flight calls first.
            closeTimeoutMs: Math.max(1000, Math.floor(c.SVC_SHUTDOWN_GRACE_MS / 2)),
          }),
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

  /**
   * Pings each named backend; the answer per backend is "ok" or the error's message, and, when the
   * backend said why in words meant for callers (a DomainError: `database_busy` with how long the
   * embedded database's connection has been held), that as `cause`.
   */
  async check(names: BackendName[]): Promise<Record<string, BackendStatus>> {
    const out: Record<string, BackendStatus> = {};
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
          if (err instanceof DomainError) out[name].cause = `${err.code}: ${err.message}`;
        }
      }),
    );
    return out;
  }

  /**
   * Closes every opened backend, together, and returns within `withinMs` whatever they do (a pool
   * waiting for a connection that is never given back, a server that does not answer): the
   * process is ending.
   */
  async close(withinMs = this.config.SVC_SHUTDOWN_GRACE_MS): Promise<void> {
    const all = [...this.opened.entries()];
    this.opened.clear();
    let timer: NodeJS.Timeout | undefined;
    const closing = Promise.all(
      all.map(async ([name, p]) => {
        const b = (await p.catch(() => null)) as { close?: () => Promise<void> } | null;
        await b?.close?.().catch((err: unknown) => this.log.warn({ err, backend: name }, 'closing a backend failed'));
      }),
    );
    const late = await Promise.race([
      closing.then(() => false),
      new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), Math.max(0, withinMs)))),
    ]);
    clearTimeout(timer);
    if (late) this.log.warn({ withinMs }, 'backends did not close in time; left as they are');
  }
}
