import { defineSettings, setting } from '@svc/kit';

import type { DriveSettings } from './types.js';

/**
 * The drive's settings (docs/drive.md), declared by the drive module and checked when the stack
 * starts: a bad value stops it with `svc: invalid configuration: SVC_DRIVE_MAX_FILE_BYTES: …`.
 * - SVC_DRIVE_MAX_FILE_BYTES: largest file, default 5 GiB (413 above);
 * - SVC_DRIVE_GRACE_SECONDS: how long unreferenced content is kept before collection, default 3600;
 * - SVC_DRIVE_COLLECT_INTERVAL_MS: how often the collector runs, default 300000;
 * - SVC_DRIVE_MAX_LOCK_SECONDS: longest WebDAV lock, default 86400;
 * - SVC_DRIVE_SITE_MAX_FILES, SVC_DRIVE_SITE_MAX_BYTES: the most files and bytes (all files
 *   together) one site deployment holds, default 2000 and 100 MiB (413 above; docs/sites.md);
 * - SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: deployments a site keeps (the oldest go at a deploy), default 100.
 */
export const driveSettingsSchema = defineSettings({
  SVC_DRIVE_MAX_FILE_BYTES: setting.int(1, 5 * 1024 ** 3),
  SVC_DRIVE_GRACE_SECONDS: setting.int(0, 3600),
  SVC_DRIVE_COLLECT_INTERVAL_MS: setting.int(1000, 300_000),
  SVC_DRIVE_MAX_LOCK_SECONDS: setting.int(1, 86_400),
  SVC_DRIVE_SITE_MAX_FILES: setting.int(1, 2000),
  SVC_DRIVE_SITE_MAX_BYTES: setting.int(1, 100 * 1024 ** 2),
  SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: setting.int(1, 100),
});

export function driveSettings(env: {
  SVC_DRIVE_MAX_FILE_BYTES: number;
  SVC_DRIVE_GRACE_SECONDS: number;
  SVC_DRIVE_COLLECT_INTERVAL_MS: number;
  SVC_DRIVE_MAX_LOCK_SECONDS: number;
  SVC_DRIVE_SITE_MAX_FILES: number;
  SVC_DRIVE_SITE_MAX_BYTES: number;
  SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: number;
}): DriveSettings {
  return {
    maxFileBytes: env.SVC_DRIVE_MAX_FILE_BYTES,
    graceSeconds: env.SVC_DRIVE_GRACE_SECONDS,
    collectEveryMs: env.SVC_DRIVE_COLLECT_INTERVAL_MS,
    maxLockSeconds: env.SVC_DRIVE_MAX_LOCK_SECONDS,
    siteMaxFiles: env.SVC_DRIVE_SITE_MAX_FILES,
    siteMaxBytes: env.SVC_DRIVE_SITE_MAX_BYTES,
    siteKeepDeployments: env.SVC_DRIVE_SITE_KEEP_DEPLOYMENTS,
  };
}
