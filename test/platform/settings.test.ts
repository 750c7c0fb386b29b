import { accountsService, accountsSettingsSchema } from '@svc/accounts';
import { domainSettings, driveService, driveSettings, driveSettingsSchema } from '@svc/drive';
import { DEFAULT_ACCOUNT_LIMITS, DEFAULT_KEY_LIMITS, gatewaySettingsSchema } from '@svc/gateway';
import { ConfigError, loadSettings } from '@svc/kit';
import { startStack } from '@svc/stack';

import { exitCode, spawnSvc } from '../support/process';

/**
 * A service's own settings live with the service (its module's `settings`, e.g. the drive's
 * SVC_DRIVE_*), not in the kit's config, and are checked at start with the kit's rules and message.
 */

const message = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

test('the drive declares its settings: defaults, and a bad value named as loadConfig names one', () => {
  expect(driveService.settings).toBe(driveSettingsSchema);
  expect(driveSettings(loadSettings({ drive: driveSettingsSchema }, {}).drive)).toEqual({
    maxFileBytes: 5 * 1024 ** 3,
    graceSeconds: 3600,
    collectEveryMs: 60_000,
    maxLockSeconds: 86_400,
    siteMaxFiles: 2000,
    siteMaxBytes: 100 * 1024 ** 2,
    siteKeepDeployments: 100,
    scansPerAccount: 2,
    grepTimeoutMs: 5000,
    quotas: { bytesLive: 10 * 1024 ** 3, bytesVersions: 5 * 1024 ** 3, writesPerMinute: 600 },
  });
  // Empty is unset, as for every variable.
  expect(loadSettings({ drive: driveSettingsSchema }, { SVC_DRIVE_GRACE_SECONDS: '', SVC_DRIVE_MAX_LOCK_SECONDS: '60' }).drive).toMatchObject({
    SVC_DRIVE_GRACE_SECONDS: 3600,
    SVC_DRIVE_MAX_LOCK_SECONDS: 60,
  });
  expect(message(() => loadSettings({ drive: driveSettingsSchema }, { SVC_DRIVE_MAX_FILE_BYTES: 'lots' }))).toMatch(
    /^invalid configuration:\n {2}SVC_DRIVE_MAX_FILE_BYTES: /,
  );
  const both = message(() => loadSettings({ drive: driveSettingsSchema }, { SVC_DRIVE_GRACE_SECONDS: '-1', SVC_DRIVE_COLLECT_INTERVAL_MS: '10' }));
  expect(both).toMatch(/SVC_DRIVE_GRACE_SECONDS: /);
  expect(both).toMatch(/SVC_DRIVE_COLLECT_INTERVAL_MS: /);
});

test('the drive’s custom-domain sweep: defaults of 24 h, 72 h, 7 days and 100; floors and ceilings checked', () => {
  const domains = (env: Record<string, string>) => domainSettings(loadSettings({ drive: driveSettingsSchema }, env).drive);
  expect(domains({})).toMatchObject({ recheckMs: 24 * 3_600_000, graceMs: 72 * 3_600_000, pendingTtlMs: 7 * 24 * 3_600_000, sweepBatch: 100 });
  expect(
    domains({
      SVC_DRIVE_SITE_DOMAIN_RECHECK_MS: '200',
      SVC_DRIVE_SITE_DOMAIN_GRACE_MS: '0',
      SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS: '500',
      SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH: '7',
    }),
  ).toMatchObject({ recheckMs: 200, graceMs: 0, pendingTtlMs: 500, sweepBatch: 7 });
  for (const [variable, value] of [
    ['SVC_DRIVE_SITE_DOMAIN_RECHECK_MS', '10'],
    ['SVC_DRIVE_SITE_DOMAIN_RECHECK_MS', String(366 * 24 * 3_600_000)],
    ['SVC_DRIVE_SITE_DOMAIN_GRACE_MS', '-1'],
    ['SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS', 'a week'],
    ['SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH', '0'],
    ['SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH', '1.5'],
  ]) {
    expect(message(() => loadSettings({ drive: driveSettingsSchema }, { [variable]: value }))).toMatch(
      new RegExp(`^invalid configuration:\n {2}${variable}: `),
    );
  }
});

test('a bad service setting stops the stack before anything starts', async () => {
  await expect(startStack({ SVC_SERVICE: 'all', SVC_DRIVE_MAX_FILE_BYTES: '1.5', LOG_LEVEL: 'silent' })).rejects.toThrow(
    /invalid configuration:\n {2}SVC_DRIVE_MAX_FILE_BYTES: /,
  );
});

test('the entrypoint prints it as it prints the shared settings', async () => {
  const child = spawnSvc({ SVC_SERVICE: 'drive', SVC_INTERNAL_SECRET: 'x'.repeat(32), SVC_DRIVE_MAX_LOCK_SECONDS: 'forever' });
  expect(await exitCode(child)).toBe(1);
  expect(child.output()).toMatch(/^svc: invalid configuration:\n {2}SVC_DRIVE_MAX_LOCK_SECONDS: /m);
});

test('the gateway and the accounts service declare theirs: proxies trusted, the body limit, the bootstrap key', () => {
  const gateway = (env: Record<string, string>) => loadSettings({ gateway: gatewaySettingsSchema }, env).gateway;
  expect(gateway({})).toEqual({
    SVC_BODY_LIMIT: '1mb',
    SVC_TRUST_PROXY: false,
    SVC_MCP_ALLOWED_ORIGINS: [],
    SVC_MCP_TOOLS_PAGE_SIZE: 50,
    SVC_SSE_MAX_STREAMS_PER_KEY: 20,
    SVC_UPLOADS_PER_ACCOUNT: 4,
    SVC_GIT_BUILDS_PER_ACCOUNT: 2,
    SVC_RATE_LIMITS: DEFAULT_KEY_LIMITS,
    SVC_RATE_LIMITS_ACCOUNT: DEFAULT_ACCOUNT_LIMITS,
    SVC_OAUTH: 'on',
    SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS: 600,
    SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS: 30 * 24 * 3600,
    SVC_OAUTH_METADATA_ALLOWED_HOSTS: [],
  });
  expect(message(() => gateway({ SVC_PUBLIC_URL: 'https://api.example.com/v1' }))).toMatch(/SVC_PUBLIC_URL: must be an origin/);
  expect(message(() => gateway({ SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS: '86400' }))).toMatch(/SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS/);
  expect(gateway({ SVC_PUBLIC_URL: 'https://api.example.com', SVC_OAUTH: 'off' })).toMatchObject({
    SVC_PUBLIC_URL: 'https://api.example.com',
    SVC_OAUTH: 'off',
  });
  expect(gateway({ SVC_RATE_LIMITS: 'compute=5/60', SVC_RATE_LIMITS_ACCOUNT: 'off' })).toMatchObject({
    SVC_RATE_LIMITS: { ...DEFAULT_KEY_LIMITS, compute: { capacity: 5, windowSeconds: 60 } },
    SVC_RATE_LIMITS_ACCOUNT: null,
  });
  expect(message(() => gateway({ SVC_RATE_LIMITS: 'reads=5/10' }))).toMatch(/SVC_RATE_LIMITS: reads=5\/10: must look like read=1000\/10/);
  expect(gateway({ SVC_MCP_ALLOWED_ORIGINS: 'https://a.example, http://localhost:3000' }).SVC_MCP_ALLOWED_ORIGINS).toEqual([
    'https://a.example',
    'http://localhost:3000',
  ]);
  expect(message(() => gateway({ SVC_MCP_ALLOWED_ORIGINS: 'a.example' }))).toMatch(/SVC_MCP_ALLOWED_ORIGINS/);
  expect(gateway({ SVC_TRUST_PROXY: '2' }).SVC_TRUST_PROXY).toBe(2);
  expect(message(() => gateway({ SVC_TRUST_PROXY: 'yes' }))).toMatch(/SVC_TRUST_PROXY/);
  expect(message(() => gateway({ SVC_BODY_LIMIT: 'huge' }))).toMatch(/SVC_BODY_LIMIT: must look like 1mb/);
  expect(accountsService.settings).toBe(accountsSettingsSchema);
  expect(message(() => loadSettings({ accounts: accountsSettingsSchema }, { SVC_BOOTSTRAP_KEY: 'svc_123' }))).toMatch(
    /SVC_BOOTSTRAP_KEY: must be svc_ followed by 64/,
  );
});
