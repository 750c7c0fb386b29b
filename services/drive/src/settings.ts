import { z } from 'zod';

import { defineSettings, setting } from '@svc/kit';

import type { DriveSettings } from './items/types.js';

const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;

/**
 * The drive's settings (docs/drive.md), declared by the drive module and checked when the stack
 * starts: a bad value stops it with `svc: invalid configuration: SVC_DRIVE_MAX_FILE_BYTES: …`.
 * - SVC_DRIVE_MAX_FILE_BYTES: largest file, default 5 GiB (413 above);
 * - SVC_DRIVE_GRACE_SECONDS: how long unreferenced content is kept before collection, default 3600;
 * - SVC_DRIVE_COLLECT_INTERVAL_MS: how often the collector runs, default 60000;
 * - SVC_DRIVE_QUOTA_BYTES: bytes of files one account may hold (every drive of it), default 10 GiB
 *   (413 `quota_exceeded` above; docs/drive.md, "Quotas");
 * - SVC_DRIVE_QUOTA_VERSION_BYTES: bytes of replaced content one account keeps (versions, and
 *   replaced content awaiting collection), default 5 GiB: the oldest go first above it;
 * - SVC_DRIVE_WRITES_PER_MINUTE: content writes (uploads, edits, copies, extracts) one account may
 *   make in a minute, default 600 (429 `write_rate_exceeded` with Retry-After above);
 * - SVC_DRIVE_MAX_LOCK_SECONDS: longest WebDAV lock, default 86400;
 * - SVC_DRIVE_SITE_MAX_FILES, SVC_DRIVE_SITE_MAX_BYTES: the most files and bytes (all files
 *   together) one site deployment holds, default 2000 and 100 MiB (413 above; docs/sites.md);
 * - SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: deployments a site keeps (the oldest go at a deploy), default 100.
 * - SVC_DRIVE_GREP_TIMEOUT_MS: how long one grep may search (its pattern is matched on a worker
 *   thread, terminated then: 422 grep_timeout), default 5000; below the gateway's gRPC deadline.
 * - SVC_DRIVE_SITE_MAX_DOMAINS: custom domains a site may have (pending or verified), default 10;
 * - SVC_SITES_DNS_SERVERS: the DNS servers a custom domain's TXT record is looked up on
 *   (`1.1.1.1,8.8.8.8`, `127.0.0.1:5353`); unset, the system's;
 * - SVC_SITES_DNS_TIMEOUT_MS: how long one TXT lookup may take, default 3000;
 * - SVC_SITES_RESERVED_HOSTS: the API's own host names (`api.example.com`, comma-separated),
 *   refused as custom domains with every name under them;
 * - SVC_SITES_HOST: read here too (the gateway checks its form): names under it are refused as
 *   custom domains.
 * - SVC_DRIVE_SITE_DOMAIN_RECHECK_MS: how often a verified domain's TXT record is looked up again,
 *   default 24 h;
 * - SVC_DRIVE_SITE_DOMAIN_GRACE_MS: how long a verified domain whose record is gone stays served
 *   before it goes back to pending, default 72 h;
 * - SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS: how long a pending claim lives, default 7 days;
 * - SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH: domains one sweep re-checks (and pending claims it
 *   deletes), default 100.
 * - SVC_DRIVE_SCANS_PER_ACCOUNT: whole-drive scans (grep, find, duplicates, folder size, zip,
 *   extract) one account may run at once on one drive replica, default 2 (an agent: 1); one more
 *   answers 429 `concurrency_limit` (docs/reliability.md, "Fair shares").
 */
export const driveSettingsSchema = defineSettings({
  SVC_DRIVE_MAX_FILE_BYTES: setting.int(1, 5 * 1024 ** 3),
  SVC_DRIVE_GRACE_SECONDS: setting.int(0, 3600),
  SVC_DRIVE_COLLECT_INTERVAL_MS: setting.int(1000, 60_000),
  SVC_DRIVE_QUOTA_BYTES: setting.int(0, 10 * 1024 ** 3),
  SVC_DRIVE_QUOTA_VERSION_BYTES: setting.int(0, 5 * 1024 ** 3),
  SVC_DRIVE_WRITES_PER_MINUTE: setting.int(1, 600, 1_000_000),
  SVC_DRIVE_MAX_LOCK_SECONDS: setting.int(1, 86_400),
  SVC_DRIVE_SITE_MAX_FILES: setting.int(1, 2000),
  SVC_DRIVE_SITE_MAX_BYTES: setting.int(1, 100 * 1024 ** 2),
  SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: setting.int(1, 100),
  SVC_DRIVE_GREP_TIMEOUT_MS: setting.int(100, 5000, 60_000),
  SVC_DRIVE_SITE_MAX_DOMAINS: setting.int(1, 10, 1000),
  SVC_SITES_DNS_SERVERS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(
            /^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-f:.]+\](:\d{1,5})?|[0-9a-f:]+)$/i,
            'each server must be an IP address, optionally with :port',
          ),
      ),
    ),
  SVC_SITES_DNS_TIMEOUT_MS: setting.int(100, 3000, 60_000),
  SVC_SITES_RESERVED_HOSTS: z.string().default(''),
  SVC_SITES_HOST: z.string().optional(),
  // Milliseconds, so that a test runs the whole cycle in seconds; a re-check at most every 100 ms
  // (a sweep must not spin), and nothing longer than a year (a typo, not a policy).
  SVC_DRIVE_SITE_DOMAIN_RECHECK_MS: setting.int(100, 24 * HOUR, YEAR),
  SVC_DRIVE_SITE_DOMAIN_GRACE_MS: setting.int(0, 72 * HOUR, YEAR),
  SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS: setting.int(100, 7 * 24 * HOUR, YEAR),
  SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH: setting.int(1, 100, 10_000),
  SVC_DRIVE_SCANS_PER_ACCOUNT: setting.int(1, 2, 10_000),
});

/** What custom domains need (docs/sites.md, "Custom domains"). */
export interface DomainSettings {
  maxDomains: number;
  dnsServers: string[];
  dnsTimeoutMs: number;
  /** Host names refused with the names under them: the API's own, and SVC_SITES_HOST. */
  reservedHosts: string[];
  /** How often a verified domain is re-checked. */
  recheckMs: number;
  /** How long a verified domain whose record is gone stays verified (and served). */
  graceMs: number;
  /** How long a pending claim lives (from its creation, or from when a re-check made it pending). */
  pendingTtlMs: number;
  /** Domains one sweep re-checks, and pending claims it deletes. */
  sweepBatch: number;
}

export function domainSettings(env: {
  SVC_DRIVE_SITE_MAX_DOMAINS: number;
  SVC_SITES_DNS_SERVERS: string[];
  SVC_SITES_DNS_TIMEOUT_MS: number;
  SVC_SITES_RESERVED_HOSTS: string;
  SVC_SITES_HOST?: string;
  SVC_DRIVE_SITE_DOMAIN_RECHECK_MS: number;
  SVC_DRIVE_SITE_DOMAIN_GRACE_MS: number;
  SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS: number;
  SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH: number;
}): DomainSettings {
  const hosts = [...env.SVC_SITES_RESERVED_HOSTS.split(','), env.SVC_SITES_HOST ?? '']
    .map((h) => h.trim().toLowerCase().replace(/^\*\./, '').replace(/\.$/, ''))
    .filter(Boolean);
  return {
    maxDomains: env.SVC_DRIVE_SITE_MAX_DOMAINS,
    dnsServers: env.SVC_SITES_DNS_SERVERS,
    dnsTimeoutMs: env.SVC_SITES_DNS_TIMEOUT_MS,
    reservedHosts: hosts,
    recheckMs: env.SVC_DRIVE_SITE_DOMAIN_RECHECK_MS,
    graceMs: env.SVC_DRIVE_SITE_DOMAIN_GRACE_MS,
    pendingTtlMs: env.SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS,
    sweepBatch: env.SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH,
  };
}

export function driveSettings(env: {
  SVC_DRIVE_MAX_FILE_BYTES: number;
  SVC_DRIVE_GRACE_SECONDS: number;
  SVC_DRIVE_COLLECT_INTERVAL_MS: number;
  SVC_DRIVE_MAX_LOCK_SECONDS: number;
  SVC_DRIVE_SITE_MAX_FILES: number;
  SVC_DRIVE_SITE_MAX_BYTES: number;
  SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: number;
  SVC_DRIVE_SCANS_PER_ACCOUNT: number;
  SVC_DRIVE_GREP_TIMEOUT_MS: number;
  SVC_DRIVE_QUOTA_BYTES: number;
  SVC_DRIVE_QUOTA_VERSION_BYTES: number;
  SVC_DRIVE_WRITES_PER_MINUTE: number;
}): Omit<DriveSettings, 'grepNice'> {
  return {
    maxFileBytes: env.SVC_DRIVE_MAX_FILE_BYTES,
    graceSeconds: env.SVC_DRIVE_GRACE_SECONDS,
    collectEveryMs: env.SVC_DRIVE_COLLECT_INTERVAL_MS,
    maxLockSeconds: env.SVC_DRIVE_MAX_LOCK_SECONDS,
    siteMaxFiles: env.SVC_DRIVE_SITE_MAX_FILES,
    siteMaxBytes: env.SVC_DRIVE_SITE_MAX_BYTES,
    siteKeepDeployments: env.SVC_DRIVE_SITE_KEEP_DEPLOYMENTS,
    scansPerAccount: env.SVC_DRIVE_SCANS_PER_ACCOUNT,
    grepTimeoutMs: env.SVC_DRIVE_GREP_TIMEOUT_MS,
    quotas: {
      bytesLive: env.SVC_DRIVE_QUOTA_BYTES,
      bytesVersions: env.SVC_DRIVE_QUOTA_VERSION_BYTES,
      writesPerMinute: env.SVC_DRIVE_WRITES_PER_MINUTE,
    },
  };
}
