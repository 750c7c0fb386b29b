import { createHash, randomBytes } from 'node:crypto';

import { zipSync } from 'fflate';

import { createSystemTokenSource, PrincipalSigner } from '@svc/kit';
import { drive } from '@svc/proto';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * Per-account storage quotas (docs/drive.md, "Quotas"), with small limits so that each is cheap
 * to reach: Ada fills her live bytes, Cara her writes a minute, Eve her kept versions; Bob, in
 * another account, is served all along and keeps his replaced content until its grace period ends.
 */
const LIVE = 10_000;
const VERSIONS = 3000;
const RATE = 20;

let t: TestStack;
const users: Record<string, { key: string; account: string }> = {};
beforeAll(async () => {
  t = await startTestStack({
    SVC_DRIVE_QUOTA_BYTES: String(LIVE),
    SVC_DRIVE_QUOTA_VERSION_BYTES: String(VERSIONS),
    SVC_DRIVE_WRITES_PER_MINUTE: String(RATE),
    SVC_UPLOADS_PER_ACCOUNT: '100',
  });
  for (const name of ['Ada', 'Bob', 'Cara', 'Eve']) {
    const b = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
    users[name] = { key: b.key, account: b.account.id };
  }
}, 60_000);
afterAll(() => t?.stop());

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function req(key: string, method: string, p: string, body?: Buffer | string | ReadableStream, headers: Record<string, string> = {}) {
  const res = await fetch(t.url + p, {
    method,
    headers: { authorization: `Bearer ${key}`, ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json };
}

const upload = (who: string, name: string, bytes: Buffer | ReadableStream, headers: Record<string, string> = {}) =>
  req(users[who]!.key, 'POST', `/drive/upload?name=${encodeURIComponent(name)}`, bytes, { 'content-type': 'application/octet-stream', ...headers });

/** A body sent chunked: no Content-Length, so the size is known only at the commit. */
const chunked = (bytes: Buffer) =>
  new ReadableStream({
    start(c) {
      c.enqueue(new Uint8Array(bytes.subarray(0, 100)));
      c.enqueue(new Uint8Array(bytes.subarray(100)));
      c.close();
    },
  });

const usage = async (who: string) => (await req(users[who]!.key, 'GET', '/drive/usage')).body;

async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

async function collectGarbage(graceSeconds: number) {
  const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
  const client = t.stack.registry.client('drive', drive.DriveServiceService as any, 'svc.drive.v1.DriveService') as any;
  return client.collectGarbage({ graceSeconds }, { principalToken: token });
}

const blobOf = async (who: string, b: Buffer) =>
  (await t.stack.backends.blobs()).stat(`drive/${users[who]!.account}/${sha(b).slice(0, 2)}/${sha(b)}`);

function expectQuotaExceeded(r: { status: number; body: any }, used: number, adding: number) {
  expect(r.status).toBe(413);
  expect(r.body.error.code).toBe('quota_exceeded');
  expect(r.body.error.details).toEqual({ quota: 'bytesLive', limit: LIVE, used, adding });
  expect(r.body.error.message).toContain(`quota of ${LIVE} bytes`);
}

test('live bytes: a write over the quota is 413 quota_exceeded naming the numbers, declared or chunked, upload, WebDAV, copy or extract; nothing is left', async () => {
  const first = randomBytes(6000);
  const made = await upload('Ada', 'first.bin', first);
  expect(made.status).toBe(201);
  // Declared (Content-Length): refused before any byte is stored.
  expectQuotaExceeded(await upload('Ada', 'declared.bin', randomBytes(5000)), 6000, 5000);
  // Chunked: refused at the commit, and its bytes are not kept.
  expectQuotaExceeded(await upload('Ada', 'chunked.bin', chunked(randomBytes(5000))), 6000, 5000);
  expect(await sql(`SELECT id FROM drive.uploads WHERE account_id = $1`, [users.Ada!.account])).toEqual([]);
  expect(await sql(`SELECT id FROM drive.items WHERE account_id = $1 AND name IN ('declared.bin', 'chunked.bin')`, [users.Ada!.account])).toEqual([]);
  // WebDAV PUT: the same refusal, as WebDAV answers it.
  const basic = `Basic ${Buffer.from(`x:${users.Ada!.key}`).toString('base64')}`;
  const dav = await fetch(`${t.url}/dav/dav.bin`, { method: 'PUT', headers: { authorization: basic }, body: randomBytes(5000) });
  expect(dav.status).toBe(413);
  expect(await dav.text()).toContain(`quota of ${LIVE} bytes`);
  // A replacement counts what it adds: 6000 -> 9000 fits.
  const bigger = randomBytes(9000);
  const replaced = await req(users.Ada!.key, 'PUT', `/drive/${made.body.id}/content`, bigger, { 'if-match': `"${sha(first)}"` });
  expect(replaced.status).toBe(200);
  // A copy would double it.
  expectQuotaExceeded(
    await req(users.Ada!.key, 'POST', `/drive/${made.body.id}/copy`, JSON.stringify({ name: 'twice.bin' }), { 'content-type': 'application/json' }),
    9000,
    9000,
  );
  // An archive whose entries would go over is refused before any entry is written.
  const zip = Buffer.from(zipSync({ 'a.txt': new Uint8Array(Buffer.alloc(800, 'a')), 'b.txt': new Uint8Array(Buffer.alloc(800, 'b')) }));
  expect(zip.length).toBeLessThan(1000);
  const archive = await upload('Ada', 'pack.zip', zip);
  expect(archive.status).toBe(201);
  const extract = await req(users.Ada!.key, 'POST', `/drive/${archive.body.id}/extract`, '{}', { 'content-type': 'application/json' });
  expectQuotaExceeded(extract, 9000 + zip.length, 1600);
  expect(await sql(`SELECT id FROM drive.items WHERE account_id = $1 AND name IN ('a.txt', 'b.txt', 'pack')`, [users.Ada!.account])).toEqual([]);
  // Shrinking is never refused, and what it frees can be written again.
  const small = randomBytes(1000);
  expect((await req(users.Ada!.key, 'PUT', `/drive/${made.body.id}/content`, small, { 'if-match': `"${sha(bigger)}"` })).status).toBe(200);
  expect((await upload('Ada', 'declared.bin', randomBytes(5000))).status).toBe(201);
  // Another account is unaffected.
  expect((await upload('Bob', 'bob.bin', randomBytes(9500))).status).toBe(201);
  const ada = await usage('Ada');
  expect(ada.quota.limits).toEqual({ bytesLive: LIVE, bytesVersions: VERSIONS, writesPerMinute: RATE });
  expect(ada.quota.usage.bytesLive).toBe(1000 + 5000 + zip.length);
  expect(ada.bytes).toBe(ada.quota.usage.bytesLive);
  // The 6000 and 9000 bytes replaced are each over the 3000 bytes of the version quota: neither is kept.
  expect(ada.quota.usage.bytesVersions).toBe(0);
  expect((await usage('Bob')).quota.usage.bytesLive).toBe(9500);
});

test('writes a minute: over the rate is 429 write_rate_exceeded with Retry-After; another account is served', async () => {
  // 2 x RATE + 1 writes within a minute and a half at most: one minute's window holds more than RATE of them.
  const answers = [];
  for (let i = 0; i <= 2 * RATE; i++) {
    const r = await upload('Cara', `w${i}.txt`, Buffer.from(`write ${i}`));
    answers.push(r);
    if (r.status === 429) break;
  }
  const refused = answers[answers.length - 1]!;
  expect(refused.status).toBe(429);
  expect(answers.filter((a) => a.status === 201).length).toBeGreaterThanOrEqual(RATE);
  expect(refused.body.error.code).toBe('write_rate_exceeded');
  expect(refused.body.error.details).toEqual({ quota: 'writesPerMinute', limit: RATE });
  const retry = Number(refused.headers.get('retry-after'));
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(60);
  const cara = await usage('Cara');
  expect(cara.quota.usage.writes).toBe(RATE);
  expect(cara.quota.usage.windowStart).toMatch(/:00\.000Z$/);
  // Without writes, two reads of the usage are equal.
  expect(await usage('Cara')).toEqual(cara);
  expect((await upload('Bob', 'bob-after.txt', Buffer.from('still served'))).status).toBe(201);
});

test('kept versions: beyond the version quota the oldest go, and their content is collected within its grace period; another account keeps its own', async () => {
  const contents = Array.from({ length: 6 }, () => randomBytes(1000));
  const made = await upload('Eve', 'doc.bin', contents[0]!);
  expect(made.status).toBe(201);
  for (let i = 1; i < contents.length; i++) {
    const r = await req(users.Eve!.key, 'PUT', `/drive/${made.body.id}/content`, contents[i]!, { 'if-match': `"${sha(contents[i - 1]!)}"` });
    expect(r.status).toBe(200);
  }
  // Five replaced, three fit: the newest three are kept.
  const kept = (await req(users.Eve!.key, 'GET', `/drive/${made.body.id}/versions`)).body.versions;
  expect(kept.map((v: { sha256: string }) => v.sha256).sort()).toEqual([contents[2]!, contents[3]!, contents[4]!].map(sha).sort());
  const eve = await usage('Eve');
  expect(eve.quota.usage.bytesVersions).toBe(VERSIONS);
  expect(eve.versionBytes).toBe(VERSIONS);
  // Bob replaces a file and deletes the version: his replaced content is in its grace period.
  const b1 = randomBytes(100);
  const b2 = randomBytes(100);
  const bob = await upload('Bob', 'bob-doc.bin', b1);
  await req(users.Bob!.key, 'PUT', `/drive/${bob.body.id}/content`, b2, { 'if-match': `"${sha(b1)}"` });
  const [bobVersion] = (await req(users.Bob!.key, 'GET', `/drive/${bob.body.id}/versions`)).body.versions;
  expect((await req(users.Bob!.key, 'DELETE', `/drive/${bob.body.id}/versions/${bobVersion.id}`)).status).toBe(200);
  // The dropped versions' content is there until a collection, which takes it although its grace
  // period (an hour here) is not over: Eve has no room left for replaced content.
  expect(await blobOf('Eve', contents[0]!)).toEqual({ size: 1000 });
  expect(await blobOf('Eve', contents[1]!)).toEqual({ size: 1000 });
  const res = await collectGarbage(3600);
  expect(res.blobsRemoved).toBeGreaterThanOrEqual(2);
  expect(await blobOf('Eve', contents[0]!)).toBeNull();
  expect(await blobOf('Eve', contents[1]!)).toBeNull();
  for (const c of contents.slice(2)) expect(await blobOf('Eve', c)).toEqual({ size: 1000 });
  // Bob is under his version quota: his replaced content waits out its grace period.
  expect(await blobOf('Bob', b1)).toEqual({ size: 100 });
  expect((await req(users.Eve!.key, 'GET', `/drive/${made.body.id}/content`)).status).toBe(200);
});
