import { createHash, randomBytes } from 'node:crypto';
import zlib from 'node:zlib';

import { startTestStack, type TestStack } from '../support/stack';

// Byte ranges of a hosted site's files (RFC 9110 14): one range answers 206 with Content-Range,
// from the content cache (small files) and from the blob store (large ones); a range past the end
// answers 416; If-Range naming another version, several ranges or a malformed header get the
// whole file. A 404 page has no ranges.

let t: TestStack;
let key: string;
const big = randomBytes(600 * 1024);

beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ranger' })).body.key as string;
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

// A whole read of a large file is checked as it streams: against the CRC-32 the deploy kept with
// its blob, or, for content stored without one, its SHA-256. A damaged blob is never served whole.
test('a damaged large file is refused whole (checked by its CRC-32, or its SHA-256 without one); a range of it is served as stored', async () => {
  const sha = createHash('sha256').update(big).digest('hex');
  const accountId = (await t.ok('GET', '/me', key)).body.accountId as string;
  const db = await t.stack.backends.sql();
  const blobs = await t.stack.backends.blobs();
  const crc = async () =>
    (await db.query<{ crc32: string | null }>(`SELECT crc32 FROM drive.blobs WHERE account_id = $1 AND sha256 = $2`, [accountId, sha]))[0]!.crc32;
  expect(Number(await crc())).toBe(zlib.crc32(big));
  // The CRC-32 on record is what a whole read is checked against: a wrong one refuses intact bytes.
  const setCrc = (v: number | null) => db.query(`UPDATE drive.blobs SET crc32 = $3 WHERE account_id = $1 AND sha256 = $2`, [accountId, sha, v]);
  await setCrc((zlib.crc32(big) + 1) % 2 ** 32);
  await expect(get('big.bin')).rejects.toThrow();
  await setCrc(zlib.crc32(big));
  const damaged = Buffer.from(big);
  damaged[1000] ^= 0xff;
  await blobs.put(`drive/${accountId}/${sha.slice(0, 2)}/${sha}`, damaged);
  try {
    await expect(get('big.bin')).rejects.toThrow();
    expect((await get('big.bin', { range: 'bytes=0-9' })).body.equals(big.subarray(0, 10))).toBe(true);
    await setCrc(null);
    await expect(get('big.bin')).rejects.toThrow();
  } finally {
    await blobs.put(`drive/${accountId}/${sha.slice(0, 2)}/${sha}`, big);
  }
  expect((await get('big.bin')).body.equals(big)).toBe(true);
});
