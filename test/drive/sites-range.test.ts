import { randomBytes } from 'node:crypto';

import { startTestStack, type TestStack } from '../support/stack';

// Byte ranges of a hosted site's files (RFC 9110 14): one range answers 206 with Content-Range,
// from the content cache (small files) and from the blob store (large ones); a range past the end
// answers 416; If-Range naming another version, several ranges or a malformed header get the
// whole file. A 404 page has no ranges.

let t: TestStack;
const big = randomBytes(600 * 1024);

beforeAll(async () => {
  t = await startTestStack();
  const key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ranger' })).body.key as string;
  const s = (await t.ok('POST', '/sites', key, { slug: 'ranges' })).body;
  await t.ok('POST', `/sites/${s.id}/deployments`, key, {
    files: [
      { path: 'a.txt', content: 'hello world' },
      { path: 'big.bin', content: big.toString('base64'), encoding: 'base64' },
      { path: '404.html', content: 'not here' },
    ],
  });
}, 90_000);
afterAll(() => t?.stop());

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.url}/sites/ranges/${path}`, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

test('one byte range of a small file: 206 with Content-Range; suffix ranges; past the end 416', async () => {
  const whole = await get('a.txt');
  expect([whole.status, whole.headers.get('accept-ranges'), whole.body.toString()]).toEqual([200, 'bytes', 'hello world']);
  const first = await get('a.txt', { range: 'bytes=0-4' });
  expect([first.status, first.headers.get('content-range'), first.headers.get('content-length'), first.body.toString()]).toEqual([
    206,
    'bytes 0-4/11',
    '5',
    'hello',
  ]);
  expect((await get('a.txt', { range: 'bytes=-5' })).body.toString()).toBe('world');
  expect((await get('a.txt', { range: 'bytes=6-' })).body.toString()).toBe('world');
  const past = await get('a.txt', { range: 'bytes=20-' });
  expect([past.status, past.headers.get('content-range')]).toEqual([416, 'bytes */11']);
  // Several ranges, another unit, a malformed value: the whole file.
  for (const range of ['bytes=0-1,3-4', 'items=0-1', 'bytes=x']) expect((await get('a.txt', { range })).status).toBe(200);
});

test('If-Range: the range only while the file is the version named', async () => {
  const etag = (await get('a.txt')).headers.get('etag')!;
  expect((await get('a.txt', { range: 'bytes=0-4', 'if-range': etag })).status).toBe(206);
  const other = await get('a.txt', { range: 'bytes=0-4', 'if-range': '"0000"' });
  expect([other.status, other.body.toString()]).toEqual([200, 'hello world']);
});

test('a range of a large file comes from the blob store; a 404 page has no ranges', async () => {
  const part = await get('big.bin', { range: 'bytes=300000-300009' });
  expect([part.status, part.headers.get('content-range')]).toEqual([206, `bytes 300000-300009/${big.length}`]);
  expect(part.body.equals(big.subarray(300000, 300010))).toBe(true);
  const tail = await get('big.bin', { range: 'bytes=-16' });
  expect(tail.body.equals(big.subarray(big.length - 16))).toBe(true);
  const missing = await get('nope.txt', { range: 'bytes=0-1' });
  expect([missing.status, missing.headers.get('accept-ranges'), missing.body.toString()]).toEqual([404, null, 'not here']);
});
