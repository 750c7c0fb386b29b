import { randomBytes } from 'node:crypto';

import { zipSync } from 'fflate';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * The accounts' byte counters (drive.usage, kept by triggers on drive.items and drive.versions;
 * docs/drive.md, "Quotas") against the rows themselves, after every kind of write that adds,
 * resizes, moves or removes files and versions, in two accounts at once; and a write the quota
 * refuses (rolled back) moves nothing.
 */
const LIVE = 200_000;

let t: TestStack;
const users: Record<string, { key: string; account: string }> = {};
beforeAll(async () => {
  t = await startTestStack({ SVC_DRIVE_QUOTA_BYTES: String(LIVE), SVC_DRIVE_WRITES_PER_MINUTE: '10000' });
  for (const name of ['Ada', 'Bob']) {
    const b = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
    users[name] = { key: b.key, account: b.account.id };
  }
}, 60_000);
afterAll(() => t?.stop());

async function call(who: string, method: string, p: string, body?: unknown, raw = false, headers: Record<string, string> = {}) {
  const res = await fetch(t.url + p, {
    method,
    headers: { authorization: `Bearer ${users[who]!.key}`, 'content-type': raw ? 'application/octet-stream' : 'application/json', ...headers },
    body: body === undefined ? undefined : raw ? (body as Buffer) : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function ok(who: string, method: string, p: string, body?: unknown, raw = false, headers: Record<string, string> = {}) {
  const r = await call(who, method, p, body, raw, headers);
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** An upload; with `replacing` (the file of that name as last answered), a replacement of it (If-Match). */
const upload = (who: string, name: string, bytes: Buffer, parentId?: string, replacing?: { sha256: string }) =>
  ok(
    who,
    'POST',
    `/drive/upload?name=${encodeURIComponent(name)}${parentId ? `&parentId=${parentId}` : ''}`,
    bytes,
    true,
    replacing ? { 'if-match': `"${replacing.sha256}"` } : {},
  );

async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

/** Each account's counters, its sums over the rows, and what GET /drive/usage answers it. */
async function measured(who: string) {
  const account = users[who]!.account;
  const [counters] = await sql<{ live: string; versions: string }>(
    'SELECT bytes_live AS live, bytes_versions AS versions FROM drive.usage WHERE account_id = $1',
    [account],
  );
  const [live] = await sql<{ n: string }>(`SELECT COALESCE(sum(size), 0) AS n FROM drive.items WHERE account_id = $1 AND kind = 'file'`, [account]);
  const [kept] = await sql<{ n: string }>('SELECT COALESCE(sum(size), 0) AS n FROM drive.versions WHERE account_id = $1', [account]);
  const usage = (await ok(who, 'GET', '/drive/usage')).quota.usage;
  return {
    counters: { live: Number(counters?.live ?? 0), versions: Number(counters?.versions ?? 0) },
    rows: { live: Number(live!.n), versions: Number(kept!.n) },
    answered: { live: usage.bytesLive, versions: usage.bytesVersions },
  };
}

async function expectTrue(who: string) {
  const m = await measured(who);
  expect(m.counters).toEqual(m.rows);
  expect(m.answered).toEqual(m.rows);
  return m.rows;
}

test('the counters equal the rows after uploads, replacements, copies, moves, extracts, edits, version restores and deletes, in two accounts at once', async () => {
  const work = async (who: string, n: number) => {
    const folder = await ok(who, 'POST', '/drive/folders', { name: `f-${who}` });
    const a = await upload(who, 'a.bin', randomBytes(1000 + n));
    const b = await upload(who, 'b.bin', randomBytes(2000 + n), folder.id);
    // A replacement: the file's size changes and the replaced content is kept as a version.
    const a2 = await upload(who, 'a.bin', randomBytes(3000 + n), undefined, a);
    await upload(who, 'a.bin', randomBytes(500 + n), undefined, a2);
    await ok(who, 'POST', `/drive/${b.id}/copy`, { parentId: null, name: 'b-copy.bin' });
    await ok(who, 'POST', `/drive/${folder.id}/copy`, { parentId: null, name: `f-${who}-copy` });
    await ok(who, 'PATCH', `/drive/${b.id}`, { parentId: null });
    const zip = await upload(who, 'z.zip', Buffer.from(zipSync({ 'x/one.txt': Buffer.from('one\n'), 'x/two.txt': randomBytes(700) })));
    await ok(who, 'POST', `/drive/${zip.id}/extract`, {});
    const text = await upload(who, 'notes.txt', Buffer.from('first line\n'));
    await ok(who, 'POST', `/drive/${text.id}/append`, { text: 'a second, longer line\n' });
    const versions = (await ok(who, 'GET', `/drive/${a.id}/versions`)).versions as Array<{ id: string }>;
    expect(versions.length).toBeGreaterThanOrEqual(2);
    await ok(who, 'POST', `/drive/${a.id}/versions/${versions[versions.length - 1]!.id}/restore`, {});
    await ok(who, 'DELETE', `/drive/${a.id}/versions/${versions[0]!.id}`);
    return { a, b, folder };
  };
  const [ada, bob] = await Promise.all([work('Ada', 1), work('Bob', 2)]);
  const adaBefore = await expectTrue('Ada');
  const bobBefore = await expectTrue('Bob');
  expect(adaBefore.live).toBeGreaterThan(0);
  expect(adaBefore.versions).toBeGreaterThan(0);
  expect(adaBefore).not.toEqual(bobBefore);

  // Deletes: a file (its versions go with it), and a folder with everything in it.
  await ok('Ada', 'DELETE', `/drive/${ada.a.id}`);
  const copied = (await ok('Ada', 'GET', '/drive')).items.find((i: { name: string }) => i.name === 'f-Ada-copy');
  await ok('Ada', 'POST', '/drive/batch/delete', { ids: [copied.id], recursive: true });
  const adaAfter = await expectTrue('Ada');
  expect(adaAfter.live).toBeLessThan(adaBefore.live);
  // Bob's counters did not move with Ada's deletes.
  expect(await expectTrue('Bob')).toEqual(bobBefore);
  expect(bob.folder.id).not.toBe(ada.folder.id);
});

test('a write the quota refuses is rolled back with its counters', async () => {
  const before = await expectTrue('Bob');
  const r = await call('Bob', 'POST', '/drive/upload?name=big.bin', randomBytes(LIVE), true);
  expect(r.status).toBe(413);
  expect(r.body.error.code).toBe('quota_exceeded');
  expect(await expectTrue('Bob')).toEqual(before);
  // The account can still fill what is left of its quota, to the byte.
  await upload('Bob', 'fill.bin', randomBytes(LIVE - before.live));
  expect((await expectTrue('Bob')).live).toBe(LIVE);
  const over = await call('Bob', 'POST', '/drive/upload?name=one-more.bin', Buffer.from('x'), true);
  expect(over.status).toBe(413);
});
