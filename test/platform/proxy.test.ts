import { startTestStack, type TestStack } from '../support/stack';

// Behind an ingress (SVC_TRUST_PROXY=1) the failed-authentication limit counts the client's
// address from X-Forwarded-For, and the presented key's prefix whatever the address: bad keys
// from a flooded address or of a flooded prefix get 429, good keys never do.
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SVC_TRUST_PROXY: '1' });
});
afterAll(() => t?.stop());

const from = (address: string) => ({ 'x-forwarded-for': address });
const tail = (i: number) => i.toString(16).padStart(56, '0');

test('the failed-authentication limit is per forwarded client address, and a good key from it is served', async () => {
  const bad = `svc_${'2'.repeat(64)}`;
  let last = 0;
  for (let i = 0; i < 40 && last !== 429; i++) {
    last = (await t.call('GET', '/me', { key: bad, headers: from('203.0.113.7') })).status;
  }
  expect(last).toBe(429);
  expect((await t.call('GET', '/me', { key: `svc_${'3'.repeat(64)}`, headers: from('203.0.113.7') })).status).toBe(429);
  expect((await t.call('GET', '/me', { key: `svc_${'3'.repeat(64)}`, headers: from('198.51.100.9') })).status).toBe(401);
  expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: from('203.0.113.7') })).status).toBe(200);
  expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: from('198.51.100.9') })).status).toBe(200);
});

test('bad keys of one prefix are counted together from any address', async () => {
  // 31 made-up keys of one prefix (`svc_deadbeef`), each from its own address.
  const statuses: number[] = [];
  for (let i = 0; i < 31; i++) {
    statuses.push((await t.call('GET', '/me', { key: `svc_deadbeef${tail(i)}`, headers: from(`192.0.2.${i + 1}`) })).status);
  }
  expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
  const refused = await t.call('GET', '/me', { key: `svc_deadbeef${tail(99)}`, headers: from('192.0.2.200') });
  expect([refused.status, refused.body.error.code]).toEqual([429, 'too_many_failed_authentications']);
  // Another prefix from a fresh address is an ordinary 401; a good key is served.
  expect((await t.call('GET', '/me', { key: `svc_feedface${tail(1)}`, headers: from('192.0.2.201') })).status).toBe(401);
  expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: from('192.0.2.200') })).status).toBe(200);
});
