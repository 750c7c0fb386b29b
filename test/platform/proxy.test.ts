import { startTestStack, type TestStack } from '../support/stack';

// Behind an ingress (SVC_TRUST_PROXY=1) the failed-authentication limit counts the client's
// address from X-Forwarded-For, so one flooding client does not lock out everyone behind the proxy.
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SVC_TRUST_PROXY: '1' });
});
afterAll(() => t?.stop());

test('the failed-authentication limit is per forwarded client address', async () => {
  const bad = `svc_${'2'.repeat(64)}`;
  let last = 0;
  for (let i = 0; i < 40 && last !== 429; i++) {
    last = (await t.call('GET', '/me', { key: bad, headers: { 'x-forwarded-for': '203.0.113.7' } })).status;
  }
  expect(last).toBe(429);
  expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: { 'x-forwarded-for': '203.0.113.7' } })).status).toBe(429);
  expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: { 'x-forwarded-for': '198.51.100.9' } })).status).toBe(200);
});
