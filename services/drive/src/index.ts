import { type Config, defineService, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { drive } from '@svc/proto';

import { DriveDomain } from './domain.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { SCHEMA } from './store.js';
import type { DriveSettings } from './types.js';

export { DriveDomain } from './domain.js';
export type { DriveSettings } from './types.js';
export { etagOf, validName } from './rules.js';

/**
 * Drive settings from the environment (SVC_DRIVE_*):
 * - SVC_DRIVE_MAX_FILE_BYTES: largest file, default 5 GiB (413 above);
 * - SVC_DRIVE_GRACE_SECONDS: how long unreferenced content is kept before collection, default 3600;
 * - SVC_DRIVE_COLLECT_INTERVAL_MS: how often the collector runs, default 300000;
 * - SVC_DRIVE_MAX_LOCK_SECONDS: longest item lock, default 86400.
 */
export function driveSettings(config: Config, env: NodeJS.ProcessEnv = process.env): DriveSettings {
  const read = (name: string, fallback: number, min: number): number => {
    const raw = (config as unknown as Record<string, unknown>)[name] ?? env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}`);
    return n;
  };
  return {
    maxFileBytes: read('SVC_DRIVE_MAX_FILE_BYTES', 5 * 1024 ** 3, 1),
    graceSeconds: read('SVC_DRIVE_GRACE_SECONDS', 3600, 0),
    collectEveryMs: read('SVC_DRIVE_COLLECT_INTERVAL_MS', 300_000, 1000),
    maxLockSeconds: read('SVC_DRIVE_MAX_LOCK_SECONDS', 86_400, 1),
  };
}

export const driveService = defineService({
  name: 'drive',
  grpcServiceName: 'svc.drive.v1.DriveService',
  definition: drive.DriveServiceService,
  needs: ['sql', 'bus', 'blobs'],
  schema: SCHEMA,
  migrations,
  async create(ctx) {
    const [sql, bus, blobs] = await Promise.all([ctx.backends.sql(), ctx.backends.bus(), ctx.backends.blobs()]);
    const settings = driveSettings(ctx.config);
    let relay: OutboxRelay | undefined;
    const domain = new DriveDomain(sql, blobs, settings, () => relay, ctx.log);
    let timer: NodeJS.Timeout | undefined;
    return {
      handlers: handlers(domain),
      async start() {
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        timer = setInterval(() => {
          domain.collect().catch((err) => ctx.log.warn({ err }, 'drive collection failed'));
        }, settings.collectEveryMs);
        timer.unref();
      },
      async stop() {
        clearInterval(timer);
        await relay?.stop();
      },
    };
  },
});
