import { ERROR_BODY, startTestStack, type TestStack } from './support/stack';

/** Input built to break the platform, sent from outside: each answers a clear 4xx, never a 500. */
let t: TestStack;
let accountId: string;
beforeAll(async () => {
  t = await startTestStack();
  accountId = (await t.call('GET', '/me', { key: t.bootstrapKey })).body.accountId;
});
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, headers?: Record<string, string>) =>
  t.call(method, p, { key: t.bootstrapKey, body, headers });
const nested = (levels: number, leaf = '1') => '['.repeat(levels) + leaf + ']'.repeat(levels);

describe('deeply nested JSON', () => {
  test('a body nested ~3,750 levels answers 400 naming the limit, on every kind of JSON route', async () => {
    const body = nested(3750);
    for (const [method, p] of [
      ['POST', '/api/api-keys'],
      ['POST', '/v1/profiles'],
      ['PATCH', `/accounts/${accountId}/settings`],
    ] as const) {
      const res = await call(method, p, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message).toMatch(/deeper than 64 levels/);
    }
    // Inside an object, too: the limit counts every level.
    const inField = await call('POST', '/v1/profiles', `{"name":"p","profileData":{"workingChanges":{"constraints":[${nested(100)}]}}}`);
    expect(inField.status).toBe(400);
    expect(inField.body.error.message).toMatch(/deeper than 64 levels/);
  });

  test('a profile constraint nested 3,000 deep cannot be created, and nesting within the limit still works', async () => {
    const deep = `{"name":"deep","profileData":{"workingChanges":{"constraints":[{"id":"c","answer":${nested(3000)}}],"exemplars":[],"comparisons":[]}}}`;
    const res = await call('POST', '/v1/profiles', deep);
    expect(res.status).toBe(400);
    const fine = await call(
      'POST',
      '/v1/profiles',
      `{"name":"ok","profileData":{"workingChanges":{"constraints":[{"id":"c","answer":${nested(50)}}],"exemplars":[],"comparisons":[]}}}`,
    );
    expect(fine.status).toBe(201);
  });
});

describe('out-of-range numbers', () => {
  test('PATCH settings with 1e400 answers 400 naming the field and leaves the setting as it was', async () => {
    const base = `/accounts/${accountId}/settings`;
    expect((await call('PATCH', base, { hosts: { callTimeoutMs: 6000 } })).status).toBe(200);
    for (const method of ['PATCH', 'PUT']) {
      const res = await call(method, base, '{"hosts":{"callTimeoutMs":1e400}}');
      expect(res.status).toBe(400);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.message).toMatch(/hosts\.callTimeoutMs: must be a finite number/);
    }
    expect((await call('GET', base)).body.hosts.callTimeoutMs).toBe(6000);
  });
});
