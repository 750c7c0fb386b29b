import { randomBytes } from 'node:crypto';
import http from 'node:http';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * What a key holds open past its authentication ends with it (docs/keys.md, "Open streams"): a
 * content transfer in flight (API or WebDAV) is cut when the key is revoked. Its WebDAV locks stay
 * its person's: the revoked key cannot present them, another key of the same person can. (Live
 * event streams: test/agents/threads-streams.test.ts.)
 */
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

const basic = (key: string) => `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`;
/** Larger than what the loopback's socket buffers and the client's can hold: the server is still sending when the key is revoked. */
const BIG = randomBytes(64 * 1024 * 1024);

async function newKey(): Promise<{ key: string; id: string }> {
  return (await t.ok('POST', '/me/api-keys', t.bootstrapKey, { name: `transfer ${Date.now()}` })).body;
}

/** GETs `path`, reads one chunk, then pauses (the server waits on backpressure) until `meanwhile` is done; then reads on. */
function slowDownload(
  path: string,
  authorization: string,
  meanwhile: () => Promise<void>,
): Promise<{ status: number; received: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${t.url}${path}`, { headers: { authorization } }, (res) => {
      let received = 0;
      let paused = false;
      const finish = () => resolve({ status: res.statusCode!, received, complete: res.complete });
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (paused) return;
        paused = true;
        res.pause();
        meanwhile().then(() => res.resume(), reject);
      });
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
    });
    req.on('error', reject);
  });
}

test('revoking a key cuts its API content download in flight', async () => {
  const k = await newKey();
  const up = await fetch(`${t.url}/drive/upload?name=big-api.bin`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/octet-stream' },
    body: BIG,
  });
  expect(up.status).toBe(201);
  const id = ((await up.json()) as { id: string }).id;
  const got = await slowDownload(`/drive/${id}/content`, `Bearer ${k.key}`, async () => {
    await t.ok('DELETE', `/me/api-keys/${k.id}`, t.bootstrapKey);
  });
  expect(got.status).toBe(200);
  expect([got.complete, got.received < BIG.length]).toEqual([false, true]);
  // The same file, whole, for a key that stays.
  const whole = await slowDownload(`/drive/${id}/content`, `Bearer ${t.bootstrapKey}`, async () => {});
  expect([whole.complete, whole.received]).toEqual([true, BIG.length]);
});

test('revoking a key cuts its WebDAV download in flight; its lock stays its person’s', async () => {
  const k = await newKey();
  const file = `/dav/big-dav-${Date.now()}.bin`;
  expect((await fetch(t.url + file, { method: 'PUT', headers: { authorization: basic(k.key) }, body: BIG })).status).toBe(201);
  const doc = `/dav/locked-${Date.now()}.txt`;
  await fetch(t.url + doc, { method: 'PUT', headers: { authorization: basic(k.key) }, body: 'v1' });
  const lockinfo =
    '<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>' +
    '<D:locktype><D:write/></D:locktype></D:lockinfo>';
  const lock = await fetch(t.url + doc, {
    method: 'LOCK',
    headers: { authorization: basic(k.key), 'content-type': 'application/xml' },
    body: lockinfo,
  });
  expect(lock.status).toBe(200);
  const token = /^<(.+)>$/.exec(lock.headers.get('lock-token')!)![1]!;

  const got = await slowDownload(file, basic(k.key), async () => {
    await t.ok('DELETE', `/me/api-keys/${k.id}`, t.bootstrapKey);
  });
  expect(got.status).toBe(200);
  expect([got.complete, got.received < BIG.length]).toEqual([false, true]);

  const put = (key: string, ifHeader?: string) =>
    fetch(t.url + doc, { method: 'PUT', headers: { authorization: basic(key), ...(ifHeader ? { if: ifHeader } : {}) }, body: 'v2' }).then(
      (r) => r.status,
    );
  // The revoked key is refused, lock token or not.
  expect(await put(k.key, `(<${token}>)`)).toBe(401);
  // The lock is its person's (the drive checks the holder): still in force, and usable and releasable with another key of theirs.
  expect(await put(t.bootstrapKey)).toBe(423);
  expect(await put(t.bootstrapKey, `(<${token}>)`)).toBe(204);
  const unlock = await fetch(t.url + doc, { method: 'UNLOCK', headers: { authorization: basic(t.bootstrapKey), 'lock-token': `<${token}>` } });
  expect(unlock.status).toBe(204);
});
