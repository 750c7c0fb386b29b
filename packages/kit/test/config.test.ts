import { ConfigError, loadConfig } from '@svc/kit';

describe('loadConfig', () => {
  test('defaults run the embedded stack', () => {
    const c = loadConfig({});
    expect(c.SVC_SERVICE).toBe('all');
    expect(c.PORT).toBe(8080);
    expect(c.SVC_DATA_DIR).toBe('.data');
    expect(c.SVC_NAMESPACE).toBe('svc');
    expect(c.internalSecret).toHaveLength(64);
    expect(c.DATABASE_URL).toBeUndefined();
    // SVC_TRUST_PROXY and SVC_BODY_LIMIT are the gateway's settings, SVC_BOOTSTRAP_KEY the accounts
    // service's: test/platform/settings.test.ts.
  });

  test('a bad value stops the start with a message naming the variable', () => {
    const bad = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(bad({ PORT: 'eighty' })).toMatch(/PORT/);
    expect(bad({ SVC_SERVICE: 'billing' })).toMatch(/SVC_SERVICE/);
    expect(bad({ DATABASE_URL: 'mysql://x' })).toMatch(/DATABASE_URL: must start with postgres/);
    expect(bad({ S3_ENDPOINT: 'http://minio:9000' })).toMatch(/S3_ENDPOINT needs S3_ACCESS_KEY/);
    expect(bad({ SVC_SERVICE: 'keys' })).toMatch(/SVC_INTERNAL_SECRET/);
    // SVC_DRIVE_* are the drive's own settings now: test/platform/settings.test.ts.
  });

  test('service addresses come from SVC_<NAME>_ADDR', () => {
    const c = loadConfig({ SVC_KEYS_ADDR: 'keys:50051', SVC_PROFILES_ADDR: '10.0.0.1:1' });
    expect(c.addresses).toEqual({ keys: 'keys:50051', profiles: '10.0.0.1:1' });
  });
});
