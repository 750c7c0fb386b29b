import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import {
  createSystemTokenSource,
  type EventEnvelope,
  generateApiKey,
  hashSecret,
  keyPrefix,
  newId,
  PrincipalSigner,
} from '@svc/kit';
import { drive, keys } from '@svc/proto';

import { ERROR_BODY, startTestStack, type TestStack } from './support/stack';

// The drive through the public API, on embedded backends (or the real ones CI names). The size
// limit is lowered so that 413 is cheap to reach; the service reads SVC_DRIVE_* from its env.
const LIMIT = 4 * 1024 * 1024;
let t: TestStack;
let accountId: string;
const events: Array<{ subject: string; event: EventEnvelope }> = [];

beforeAll(async () => {
  process.env.SVC_DRIVE_MAX_FILE_BYTES = String(LIMIT);
  try {
    t = await startTestStack();
  } finally {
    delete process.env.SVC_DRIVE_MAX_FILE_BYTES;
  }
  accountId = (await t.call('GET', '/me', { key: t.bootstrapKey })).body.accountId;
  const bus = await t.stack.backends.bus();
  await bus.subscribe('drive.>', async (event, meta) => void events.push({ subject: meta.subject, event }));
}, 60_000);
afterAll(() => t?.stop());

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const quoted = (b: Buffer | string) => `"${sha(b)}"`;

interface Reply {
  status: number;
  headers: Headers;
  bytes: Buffer;
  body: any;
}

/** Any request, bytes in and out. */
async function req(method: string, p: string, opts: { key?: string; body?: Buffer | string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  headers.authorization ??= `Bearer ${opts.key ?? t.bootstrapKey}`;
  const res = await fetch(t.url + p, { method, headers, body: opts.body });
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: any = null;
  try {
    body = bytes.length ? JSON.parse(bytes.toString('utf8')) : null;
  } catch {
    body = bytes.toString('utf8');
  }
  return { status: res.status, headers: res.headers, bytes, body };
}

async function uploadFile(name: string, content: Buffer | string, opts: { parentId?: string; key?: string; headers?: Record<string, string> } = {}) {
  const q = new URLSearchParams({ name, ...(opts.parentId ? { parentId: opts.parentId } : {}) });
  return req('POST', `/drive/upload?${q}`, { key: opts.key, body: content, headers: { 'content-type': 'application/octet-stream', ...opts.headers } });
}

async function folder(name: string, parentId?: string, key?: string) {
  const res = await t.call('POST', '/drive/folders', { key: key ?? t.bootstrapKey, body: { name, ...(parentId ? { parentId } : {}) } });
  expect(res.status).toBe(201);
  return res.body as { id: string; etag: string };
}

/** A key of another account (or of an agent), registered the way the bootstrap key is. */
async function importKey(owner: { accountId: string; ownerKind: 'human' | 'agent'; ownerId: string }): Promise<string> {
  const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
  const client = t.stack.registry.client('keys', keys.KeysServiceService, 'svc.keys.v1.KeysService');
  const plaintext = generateApiKey();
  await client.importKey({ keyHash: hashSecret(plaintext), prefix: keyPrefix(plaintext), name: 'test', ...owner }, { principalToken: token });
  return plaintext;
}

async function collectGarbage(graceSeconds = 0) {
  const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
  const client = t.stack.registry.client('drive', drive.DriveServiceService as any, 'svc.drive.v1.DriveService') as any;
  return client.collectGarbage({ graceSeconds }, { principalToken: token });
}

async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

/** Sends part of a body with a larger Content-Length, then drops the connection. */
function abortedUpload(p: string, headers: Record<string, string>, sent: Buffer, declared: number): Promise<void> {
  return new Promise((resolve) => {
    const r = http.request(t.url + p, { method: p.includes('/content') ? 'PUT' : 'POST', headers: { ...headers, 'content-length': String(declared) } });
    r.on('error', () => resolve());
    r.on('response', () => resolve());
    r.write(sent, () => setTimeout(() => {
      r.destroy();
      resolve();
    }, 150));
  });
}

const until = async (cond: () => Promise<boolean> | boolean, ms = 5000) => {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('content and ETags', () => {
  test('an upload answers 201 with the item; its ETag is the quoted SHA-256 of the bytes, and so is every read', async () => {
    const content = Buffer.from('hello drive\n');
    const up = await uploadFile(`hello-${Date.now()}.txt`, content, { headers: { 'content-type': 'text/plain' } });
    expect(up.status).toBe(201);
    expect(up.headers.get('etag')).toBe(quoted(content));
    expect(up.headers.get('location')).toBe(`/v1/drive/${up.body.id}`);
    expect(up.body).toMatchObject({ kind: 'file', size: content.length, sha256: sha(content), etag: quoted(content), contentType: 'text/plain', parentId: null });
    expect(up.body.id).toMatch(/^file_[0-9a-z]{26}$/);
    expect(up.body.updatedBy).toMatchObject({ kind: 'human', id: accountId });
    expect(up.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const read = await req('GET', `/v1/drive/${up.body.id}/content`);
    expect(read.status).toBe(200);
    expect(read.bytes.equals(content)).toBe(true);
    expect(read.headers.get('etag')).toBe(quoted(content));
    expect(read.headers.get('content-type')).toBe('text/plain');
    expect(read.headers.get('content-length')).toBe(String(content.length));
    expect(read.headers.get('x-content-type-options')).toBe('nosniff');

    const meta = await req('GET', `/drive/${up.body.id}`);
    expect(meta.headers.get('etag')).toBe(quoted(content));
    expect(meta.body.sha256).toBe(sha(content));

    const head = await req('HEAD', `/drive/${up.body.id}/content`);
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(quoted(content));
    expect(head.bytes.length).toBe(0);
  });

  test("an item's JSON answer carries its ETag and is always sent whole (a rename keeps a file's ETag)", async () => {
    const { body } = await uploadFile(`meta-${Date.now()}.txt`, 'metadata');
    const first = await req('GET', `/v1/drive/${body.id}`);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toBe(quoted('metadata'));
    const renamed = await t.call('PATCH', `/drive/${body.id}`, { key: t.bootstrapKey, body: { name: `renamed-${Date.now()}.txt` }, headers: { 'if-match': etag } });
    expect(renamed.status).toBe(200);
    // A client without fetch's Cache-Control: no-cache (curl, the SDKs): no 304 with the old name.
    const again = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get(`${t.url}/v1/drive/${body.id}`, { headers: { authorization: `Bearer ${t.bootstrapKey}`, 'if-none-match': etag } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        })
        .on('error', reject);
    });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body).name).toBe(renamed.body.name);
  });

  test('If-None-Match answers 304; Range answers 206 (and 416 outside the file)', async () => {
    const content = Buffer.from('0123456789abcdef');
    const { body } = await uploadFile(`range-${Date.now()}.bin`, content);
    const url = `/drive/${body.id}/content`;
    expect((await req('GET', url, { headers: { 'if-none-match': quoted(content) } })).status).toBe(304);
    expect((await req('GET', url, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
    const part = await req('GET', url, { headers: { range: 'bytes=2-5' } });
    expect(part.status).toBe(206);
    expect(part.bytes.toString()).toBe('2345');
    expect(part.headers.get('content-range')).toBe('bytes 2-5/16');
    expect(part.headers.get('etag')).toBe(quoted(content));
    const suffix = await req('GET', url, { headers: { range: 'bytes=-3' } });
    expect(suffix.bytes.toString()).toBe('def');
    const open = await req('GET', url, { headers: { range: 'bytes=14-' } });
    expect(open.bytes.toString()).toBe('ef');
    const outside = await req('GET', url, { headers: { range: 'bytes=99-' } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get('content-range')).toBe('bytes */16');
    // If-Range with another version: the whole file.
    const stale = await req('GET', url, { headers: { range: 'bytes=0-1', 'if-range': '"old"' } });
    expect(stale.status).toBe(200);
    expect(stale.bytes.equals(content)).toBe(true);
  });

  test('a JSON file is stored as sent, not parsed; curl’s default form type leaves the type to the name', async () => {
    const json = Buffer.from(JSON.stringify({ a: [1, 2, 3] }, null, 2));
    const up = await uploadFile(`data-${Date.now()}.json`, json, { headers: { 'content-type': 'application/json' } });
    expect(up.status).toBe(201);
    expect(up.body.contentType).toBe('application/json');
    expect((await req('GET', `/drive/${up.body.id}/content`)).bytes.equals(json)).toBe(true);
    const form = await uploadFile(`notes-${Date.now()}.md`, 'x', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.body.contentType).toBe('text/markdown; charset=utf-8');
  });

  test('multipart/form-data: the file part, with name and parentId fields', async () => {
    const f = await folder(`forms-${Date.now()}`);
    const fd = new FormData();
    fd.append('parentId', f.id);
    fd.append('file', new Blob(['from a form\r\n--not-a-boundary\r\n'], { type: 'text/plain' }), 'form.txt');
    const res = await fetch(`${t.url}/drive/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.bootstrapKey}` }, body: fd });
    const body = (await res.json()) as any;
    expect(res.status).toBe(201);
    expect(body).toMatchObject({ name: 'form.txt', parentId: f.id, contentType: 'text/plain', size: 31 });
    expect(body.etag).toBe(quoted('from a form\r\n--not-a-boundary\r\n'));
    const none = new FormData();
    none.append('name', 'x');
    const missing = await fetch(`${t.url}/drive/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.bootstrapKey}` }, body: none });
    expect(missing.status).toBe(400);
  });
});

describe('concurrency', () => {
  test('a content write without a precondition answers 428 and changes nothing', async () => {
    const { body } = await uploadFile(`pre-${Date.now()}.txt`, 'v1');
    const res = await req('PUT', `/drive/${body.id}/content`, { body: 'v2' });
    expect(res.status).toBe(428);
    expect(res.body).toMatchObject(ERROR_BODY);
    expect(res.body.error.code).toBe('precondition_required');
    expect(res.body.error.message).toMatch(/If-Match/);
    expect((await req('GET', `/drive/${body.id}/content`)).bytes.toString()).toBe('v1');
  });

  test('a stale If-Match answers 412 with the current ETag and writer; the content is unchanged', async () => {
    const { body } = await uploadFile(`stale-${Date.now()}.txt`, 'v1');
    const ok = await req('PUT', `/drive/${body.id}/content`, { body: 'v2', headers: { 'if-match': quoted('v1') } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe(quoted('v2'));
    expect(ok.body.etag).toBe(quoted('v2'));
    const stale = await req('PUT', `/drive/${body.id}/content`, { body: 'v3', headers: { 'if-match': quoted('v1') } });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject(ERROR_BODY);
    expect(stale.body.error.code).toBe('precondition_failed');
    expect(stale.body.error.details).toMatchObject({ etag: quoted('v2'), updatedBy: { kind: 'human', id: accountId } });
    expect(stale.headers.get('etag')).toBe(quoted('v2'));
    const now = await req('GET', `/drive/${body.id}/content`);
    expect(now.bytes.toString()).toBe('v2');
    expect(now.headers.get('etag')).toBe(quoted('v2'));
    // Rebase in one round trip: the ETag from the 412 works.
    const rebased = await req('PUT', `/drive/${body.id}/content`, { body: 'v3', headers: { 'if-match': stale.body.error.details.etag } });
    expect(rebased.status).toBe(200);
  });

  test('If-None-Match: * on a taken name answers 412 (with the existing ETag); without a precondition 409', async () => {
    const name = `taken-${Date.now()}.txt`;
    expect((await uploadFile(name, 'first', { headers: { 'if-none-match': '*' } })).status).toBe(201);
    const again = await uploadFile(name, 'second', { headers: { 'if-none-match': '*' } });
    expect(again.status).toBe(412);
    expect(again.body.error.details.etag).toBe(quoted('first'));
    const plain = await uploadFile(name, 'second');
    expect(plain.status).toBe(409);
    expect(plain.body.error.code).toBe('name_taken');
    // POST with If-Match replaces the file of that name when it is still that version.
    const replaced = await uploadFile(name, 'second', { headers: { 'if-match': quoted('first') } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.etag).toBe(quoted('second'));
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.filter((i: any) => i.name === name)).toHaveLength(1);
  });

  test('two racing writers with the same If-Match: exactly one wins, the other gets 412', async () => {
    for (let round = 0; round < 3; round++) {
      const { body } = await uploadFile(`race-${round}-${Date.now()}.txt`, 'base');
      const writers = ['a', 'b', 'c', 'd'].map((w) => `${w}-${round}-`.repeat(5000));
      const results = await Promise.all(
        writers.map((w) => req('PUT', `/drive/${body.id}/content`, { body: w, headers: { 'if-match': quoted('base') } })),
      );
      const winners = results.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 412)).toHaveLength(writers.length - 1);
      const won = writers[results.indexOf(winners[0]!)]!;
      const now = await req('GET', `/drive/${body.id}/content`);
      expect(now.bytes.toString()).toBe(won);
      expect(now.headers.get('etag')).toBe(quoted(won));
    }
  });

  test('racing creates of one name with If-None-Match: * make one file', async () => {
    const name = `create-race-${Date.now()}.txt`;
    const results = await Promise.all(['1', '2', '3'].map((c) => uploadFile(name, c.repeat(10000), { headers: { 'if-none-match': '*' } })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(2);
  });

  test('PATCH and DELETE honour If-Match', async () => {
    const { body } = await uploadFile(`pd-${Date.now()}.txt`, 'x');
    const stale = await t.call('PATCH', `/drive/${body.id}`, { key: t.bootstrapKey, body: { name: 'y.txt' }, headers: { 'if-match': '"nope"' } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details.etag).toBe(quoted('x'));
    const renamed = await t.call('PATCH', `/drive/${body.id}`, { key: t.bootstrapKey, body: { name: `pd-${Date.now()}-renamed.txt` }, headers: { 'if-match': quoted('x') } });
    expect(renamed.status).toBe(200);
    expect(renamed.headers.get('etag')).toBe(quoted('x'));
    expect((await req('DELETE', `/drive/${body.id}`, { headers: { 'if-match': '"nope"' } })).status).toBe(412);
    expect((await req('DELETE', `/drive/${body.id}`, { headers: { 'if-match': quoted('x') } })).status).toBe(200);
    expect((await req('GET', `/drive/${body.id}`)).status).toBe(404);
  });
});

describe('nothing lost', () => {
  test('a client that disconnects mid-upload leaves the previous version intact and readable', async () => {
    const { body } = await uploadFile(`abort-${Date.now()}.bin`, 'the old version');
    const uploadsBefore = (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n;
    await abortedUpload(
      `/drive/${body.id}/content`,
      { authorization: `Bearer ${t.bootstrapKey}`, 'if-match': quoted('the old version') },
      randomBytes(256 * 1024),
      1024 * 1024,
    );
    const created = `abort-new-${Date.now()}.bin`;
    await abortedUpload(`/drive/upload?name=${created}`, { authorization: `Bearer ${t.bootstrapKey}` }, randomBytes(100_000), 500_000);
    await until(async () => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n === uploadsBefore);
    const now = await req('GET', `/drive/${body.id}/content`);
    expect(now.status).toBe(200);
    expect(now.bytes.toString()).toBe('the old version');
    expect(now.headers.get('etag')).toBe(quoted('the old version'));
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.map((i: any) => i.name)).not.toContain(created);
    // No temporary blob is left behind.
    const tmp = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive-tmp');
    expect(fs.existsSync(tmp) ? fs.readdirSync(tmp) : []).toEqual([]);
  });

  test('every stored blob hashes to its name; the same bytes are stored once', async () => {
    const content = randomBytes(300_000);
    const a = await uploadFile(`same-a-${Date.now()}.bin`, content);
    const b = await uploadFile(`same-b-${Date.now()}.bin`, content);
    expect(a.body.sha256).toBe(b.body.sha256);
    const rows = await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.blobs WHERE sha256 = $1', [sha(content)]);
    expect(rows[0]!.n).toBe(1);
    const root = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId);
    for (const dir of fs.readdirSync(root)) {
      for (const f of fs.readdirSync(path.join(root, dir))) {
        expect(sha(fs.readFileSync(path.join(root, dir, f)))).toBe(f);
      }
    }
  });

  test('a stored blob that no longer matches its hash is never served whole; a range of it still is', async () => {
    const content = randomBytes(3 * 1024 * 1024); // hashed on a worker (over 1 MiB)
    const small = randomBytes(1000); // hashed inline
    for (const bytes of [content, small]) {
      const up = await uploadFile(`damaged-${Date.now()}.bin`, bytes);
      expect(up.status).toBe(201);
      const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, up.body.sha256.slice(0, 2), up.body.sha256);
      const damaged = Buffer.from(bytes);
      damaged[damaged.length - 10] ^= 0xff; // same length, one byte flipped near the end
      fs.writeFileSync(blob, damaged);
      try {
        // The last chunk is withheld: the client sees a cut transfer (or, for a one-chunk file, a
        // closed connection), never a complete damaged file.
        const whole = async () => {
          const res = await fetch(`${t.url}/v1/drive/${up.body.id}/content`, { headers: { authorization: `Bearer ${t.bootstrapKey}` } });
          expect(res.headers.get('content-length')).toBe(String(bytes.length));
          return Buffer.from(await res.arrayBuffer());
        };
        await expect(whole()).rejects.toThrow();
        const range = await req('GET', `/v1/drive/${up.body.id}/content`, { headers: { range: 'bytes=0-99' } });
        expect(range.status).toBe(206);
        expect(range.bytes.equals(bytes.subarray(0, 100))).toBe(true);
      } finally {
        fs.writeFileSync(blob, bytes);
      }
      expect((await req('GET', `/v1/drive/${up.body.id}/content`)).bytes.equals(bytes)).toBe(true);
    }
  });

  test('a blob store that cannot take an upload answers 503 storage_unavailable; nothing is written', async () => {
    const tmpDir = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive-tmp');
    const name = `unstorable-${Date.now()}.bin`;
    fs.rmSync(tmpDir, { recursive: true, force: true });
    fs.writeFileSync(tmpDir, 'not a folder'); // every put under drive-tmp/ now fails
    try {
      const res = await uploadFile(name, randomBytes(5000));
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject(ERROR_BODY);
      expect(res.body.error.code).toBe('storage_unavailable');
    } finally {
      fs.rmSync(tmpDir, { force: true });
    }
    const listed = await req('GET', '/drive');
    expect(listed.body.items.map((i: { name: string }) => i.name)).not.toContain(name);
    await until(async () => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n === 0);
    expect((await uploadFile(name, 'stored now')).status).toBe(201);
  });

  test('a file whose stored content is gone answers 500 content_missing with the error body', async () => {
    const bytes = randomBytes(2000);
    const up = await uploadFile(`lost-${Date.now()}.bin`, bytes);
    const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, up.body.sha256.slice(0, 2), up.body.sha256);
    fs.rmSync(blob);
    try {
      const res = await req('GET', `/drive/${up.body.id}/content`);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject(ERROR_BODY);
      expect(res.body.error.code).toBe('content_missing');
    } finally {
      fs.writeFileSync(blob, bytes);
    }
  });

  test('the service side of an upload: it belongs to its account, and a commit checks what the blob holds', async () => {
    const signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
    const as = async (account: string) => ({ principalToken: (await signer.sign({ kind: 'human', userId: account, accountId: account, channel: 'api' })).token });
    const client = t.stack.registry.client('drive', drive.DriveServiceService, 'svc.drive.v1.DriveService');
    const blobs = await t.stack.backends.blobs();
    const header = { name: `steps-${Date.now()}.txt`, requirePrecondition: false, overwrite: false, lockTokens: [] };
    const bytes = Buffer.from('written by the gateway');
    const pending = async (id: string) => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads WHERE id = $1', [id]))[0]!.n;

    const first = await client.beginUpload(header, await as(accountId));
    expect(first.blobKey).toBe(`drive-tmp/${first.uploadId}`);
    await blobs.put(first.blobKey, bytes);
    const commit = { header, uploadId: first.uploadId, sha256: sha(bytes), size: bytes.length };
    // Another account cannot commit (or abort) it: the upload does not exist for it.
    await expect(client.commitUpload(commit, await as(newId('acct')))).rejects.toMatchObject({ code: 'upload_not_found' });
    await client.abortUpload({ uploadId: first.uploadId }, await as(newId('acct')));
    expect(await pending(first.uploadId)).toBe(1);
    // No content at the upload's key (a gateway on another blob store): refused, and the upload is gone.
    const orphan = await client.beginUpload(header, await as(accountId));
    await expect(client.commitUpload({ ...commit, uploadId: orphan.uploadId }, await as(accountId))).rejects.toMatchObject({ code: 'upload_content_missing' });
    expect(await pending(orphan.uploadId)).toBe(0);
    // A size the blob does not hold: refused, and the upload and its blob are gone.
    await expect(client.commitUpload({ ...commit, size: bytes.length + 1 }, await as(accountId))).rejects.toMatchObject({ code: 'upload_incomplete' });
    expect(await pending(first.uploadId)).toBe(0);
    expect(await blobs.stat(first.blobKey)).toBeNull();
    await expect(client.commitUpload(commit, await as(accountId))).rejects.toMatchObject({ code: 'upload_not_found' });
    await expect(client.commitUpload({ ...commit, sha256: 'not-a-digest' }, await as(accountId))).rejects.toMatchObject({ code: 'invalid_request' });

    const second = await client.beginUpload(header, await as(accountId));
    await blobs.put(second.blobKey, bytes);
    const done = await client.commitUpload({ ...commit, uploadId: second.uploadId }, await as(accountId));
    expect(done.item).toMatchObject({ name: header.name, size: bytes.length, sha256: sha(bytes) });
    expect(await pending(second.uploadId)).toBe(0);
    expect(await blobs.stat(second.blobKey)).toBeNull();
    expect((await req('GET', `/drive/${done.item!.id}/content`)).bytes.equals(bytes)).toBe(true);
    // The name is taken now: a second begin fails before any byte is sent.
    await expect(client.beginUpload(header, await as(accountId))).rejects.toMatchObject({ code: 'name_taken' });
  });

  test('content an open upload is placing is not collected, whatever its hold; once the upload ends it is', async () => {
    const bytes = randomBytes(1000);
    const digest = sha(bytes);
    const blobs = await t.stack.backends.blobs();
    const key = `drive/${accountId}/${digest.slice(0, 2)}/${digest}`;
    await blobs.put(key, bytes);
    // What an upload leaves between moving its blob into place and its commit: a hold that may
    // already be over (grace 0), no item yet, and the upload row naming the content.
    const uploadId = newId('upl');
    await sql(`INSERT INTO drive.blobs (account_id, sha256, size, held_until) VALUES ($1, $2, $3, now() - interval '1 hour')`, [accountId, digest, bytes.length]);
    await sql(`INSERT INTO drive.uploads (id, account_id, tmp_key, sha256) VALUES ($1, $2, $3, $4)`, [uploadId, accountId, `drive-tmp/${uploadId}`, digest]);
    await collectGarbage(0);
    expect(await blobs.stat(key)).toEqual({ size: bytes.length });
    await sql(`DELETE FROM drive.uploads WHERE id = $1`, [uploadId]);
    await collectGarbage(0);
    expect(await blobs.stat(key)).toBeNull();
  });

  test('replaced and deleted content is collected after the grace period, current content stays', async () => {
    const { body } = await uploadFile(`gc-${Date.now()}.bin`, 'gc version one');
    await req('PUT', `/drive/${body.id}/content`, { body: 'gc version two', headers: { 'if-match': quoted('gc version one') } });
    const blob = (s: string) => path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, sha(s).slice(0, 2), sha(s));
    expect(fs.existsSync(blob('gc version one'))).toBe(true);
    // Within the grace period nothing referenced a moment ago is removed.
    await collectGarbage(3600);
    expect(fs.existsSync(blob('gc version one'))).toBe(true);
    const res = await collectGarbage(0);
    expect(res.blobsRemoved).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(blob('gc version one'))).toBe(false);
    expect(fs.existsSync(blob('gc version two'))).toBe(true);
    expect((await req('GET', `/drive/${body.id}/content`)).bytes.toString()).toBe('gc version two');
    // The temporary blob of an upload whose process died is collected too.
    const blobs = await t.stack.backends.blobs();
    await blobs.put('drive-tmp/upl_dead', Buffer.from('partial'));
    await sql(`INSERT INTO drive.uploads (id, account_id, tmp_key, started_at) VALUES ('upl_dead', $1, 'drive-tmp/upl_dead', now() - interval '2 days')`, [accountId]);
    expect((await collectGarbage(3600)).uploadsRemoved).toBe(1);
    expect(await blobs.stat('drive-tmp/upl_dead')).toBeNull();
  });

  test('a file over the size limit answers 413, declared or streamed, and is not stored', async () => {
    const name = `big-${Date.now()}.bin`;
    const declared = await uploadFile(name, randomBytes(LIMIT + 1));
    expect(declared.status).toBe(413);
    expect(declared.body.error.code).toBe('file_too_large');
    // Streamed without a length: stopped when it crosses the limit.
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(randomBytes(1024 * 1024));
        c.close();
      },
    });
    const res = await fetch(`${t.url}/drive/upload?name=${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.bootstrapKey}` },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.map((i: any) => i.name)).not.toContain(name);
  });
});

describe('folders, names and listing', () => {
  test('names are validated', async () => {
    for (const name of ['a/b', '', ' ', '.', '..', 'x'.repeat(256), 'tab\there']) {
      const res = await t.call('POST', '/drive/folders', { key: t.bootstrapKey, body: { name } });
      expect(res.status).toBe(400);
    }
    expect((await uploadFile('é'.repeat(128), 'x')).status).toBe(400); // 256 bytes of UTF-8
    expect((await uploadFile('ok name (1).txt', 'x')).status).toBe(201);
  });

  test('list a folder with cursor pagination: folders first, then names; every item once', async () => {
    const f = await folder(`page-${Date.now()}`);
    await folder('sub-b', f.id);
    await folder('sub-a', f.id);
    for (const n of ['c.txt', 'a.txt', 'b.txt']) await uploadFile(n, n, { parentId: f.id });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply = await req('GET', `/drive?parentId=${f.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((i: any) => i.name));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['sub-a', 'sub-b', 'a.txt', 'b.txt', 'c.txt']);
    const item = (await req('GET', `/drive?parentId=${f.id}&limit=1`)).body.items[0];
    expect(Object.keys(item).sort()).toEqual(
      ['contentType', 'createdAt', 'createdBy', 'etag', 'id', 'kind', 'name', 'parentId', 'projectId', 'sha256', 'size', 'updatedAt', 'updatedBy'].sort(),
    );
    expect((await req('GET', '/drive?cursor=garbage')).status).toBe(400);
  });

  test('rename and move; a folder cannot move into itself; a taken name is a conflict', async () => {
    const a = await folder(`mv-a-${Date.now()}`);
    const b = await folder('b', a.id);
    const c = await folder('c', b.id);
    const into = await t.call('PATCH', `/drive/${a.id}`, { key: t.bootstrapKey, body: { parentId: c.id } });
    expect(into.status).toBe(409);
    expect(into.body.error.code).toBe('move_into_itself');
    expect((await t.call('PATCH', `/drive/${a.id}`, { key: t.bootstrapKey, body: { parentId: a.id } })).status).toBe(409);
    const file = await uploadFile('f.txt', 'f', { parentId: c.id });
    const moved = await t.call('PATCH', `/drive/${file.body.id}`, { key: t.bootstrapKey, body: { parentId: a.id, name: 'g.txt' } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ parentId: a.id, name: 'g.txt', etag: quoted('f') });
    await uploadFile('h.txt', 'h', { parentId: a.id });
    const clash = await t.call('PATCH', `/drive/${file.body.id}`, { key: t.bootstrapKey, body: { name: 'h.txt' } });
    expect(clash.status).toBe(409);
    const toRoot = await t.call('PATCH', `/drive/${c.id}`, { key: t.bootstrapKey, body: { parentId: null, name: `mv-c-${Date.now()}` } });
    expect(toRoot.status).toBe(200);
    expect(toRoot.body.parentId).toBeNull();
  });

  test('deleting a non-empty folder needs ?recursive=true; its files become unreadable', async () => {
    const f = await folder(`del-${Date.now()}`);
    const sub = await folder('sub', f.id);
    const file = await uploadFile('x.txt', 'x', { parentId: sub.id });
    const refused = await req('DELETE', `/drive/${f.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('folder_not_empty');
    const done = await req('DELETE', `/drive/${f.id}?recursive=true`);
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ success: true, deleted: 3 });
    expect((await req('GET', `/drive/${file.body.id}/content`)).status).toBe(404);
  });
});

describe('tenancy and principals', () => {
  test("another account's files answer 404 everywhere, and never show in its listing", async () => {
    const mine = await uploadFile(`private-${Date.now()}.txt`, 'secret');
    const myFolder = await folder(`private-folder-${Date.now()}`);
    const other = newId('acct');
    const otherKey = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
    const id = mine.body.id;
    const as = { key: otherKey };
    expect((await req('GET', `/drive/${id}`, as)).status).toBe(404);
    expect((await req('GET', `/drive/${id}/content`, as)).status).toBe(404);
    expect((await req('PUT', `/drive/${id}/content`, { ...as, body: 'x', headers: { 'if-match': quoted('secret') } })).status).toBe(404);
    expect((await req('DELETE', `/drive/${id}`, as)).status).toBe(404);
    expect((await t.call('PATCH', `/drive/${id}`, { key: otherKey, body: { name: 'stolen' } })).status).toBe(404);
    expect((await req('GET', `/drive?parentId=${myFolder.id}`, as)).status).toBe(404);
    expect((await uploadFile('x.txt', 'x', { ...as, parentId: myFolder.id })).status).toBe(404);
    const theirs = await req('GET', '/drive', as);
    expect(theirs.status).toBe(200);
    expect(theirs.body.items).toEqual([]);
    // Their own drive works, and mine does not see it.
    const own = await uploadFile('theirs.txt', 'theirs', as);
    expect(own.status).toBe(201);
    expect((await req('GET', `/drive/${own.body.id}`)).status).toBe(404);
    expect((await req('GET', `/drive/${id}/content`)).bytes.toString()).toBe('secret');
  });

  test('a project-scoped key sees only its project’s drive', async () => {
    const created = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: 'proj', projectId: 'proj-drive' } });
    const projectKey = created.body.key as string;
    const accountFile = await uploadFile(`account-${Date.now()}.txt`, 'account');
    const projFile = await uploadFile('project.txt', 'project', { key: projectKey });
    expect(projFile.status).toBe(201);
    expect(projFile.body.projectId).toBe('proj-drive');
    expect((await req('GET', `/drive/${accountFile.body.id}`, { key: projectKey })).status).toBe(404);
    const projList = await req('GET', '/drive', { key: projectKey });
    expect(projList.body.items.map((i: any) => i.name)).toEqual(['project.txt']);
    expect((await req('GET', '/drive?projectId=other', { key: projectKey })).status).toBe(403);
    // The unscoped key sees its own drive at the root, and the project's by projectId or id.
    const rootList = await req('GET', '/drive?limit=200');
    expect(rootList.body.items.map((i: any) => i.name)).not.toContain('project.txt');
    const viaProject = await req('GET', '/drive?projectId=proj-drive');
    expect(viaProject.body.items.map((i: any) => i.name)).toEqual(['project.txt']);
    expect((await req('GET', `/drive/${projFile.body.id}/content`)).bytes.toString()).toBe('project');
  });

  test('an agent key uses the drive, and the file says the agent wrote it', async () => {
    const agentId = newId('agt');
    const agentKey = await importKey({ accountId, ownerKind: 'agent', ownerId: agentId });
    const { body } = await uploadFile(`by-agent-${Date.now()}.txt`, 'by agent', { key: agentKey });
    expect(body.updatedBy).toMatchObject({ kind: 'agent', id: agentId });
    const human = await req('PUT', `/drive/${body.id}/content`, { body: 'by human', headers: { 'if-match': body.etag } });
    expect(human.body.updatedBy).toMatchObject({ kind: 'human', id: accountId });
    expect(human.body.createdBy).toMatchObject({ kind: 'agent', id: agentId });
    const stale = await req('PUT', `/drive/${body.id}/content`, { key: agentKey, body: 'again', headers: { 'if-match': body.etag } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details.updatedBy).toMatchObject({ kind: 'human', id: accountId });
  });
});

test('each change publishes a drive event through the outbox', async () => {
  const f = await folder(`events-${Date.now()}`);
  const up = await uploadFile('e.txt', 'e1', { parentId: f.id });
  await req('PUT', `/drive/${up.body.id}/content`, { body: 'e2', headers: { 'if-match': quoted('e1') } });
  await t.call('PATCH', `/drive/${up.body.id}`, { key: t.bootstrapKey, body: { name: 'e2.txt' } });
  await req('DELETE', `/drive/${f.id}?recursive=true`);
  const ns = t.env.SVC_NAMESPACE;
  const expected = ['drive.folder.created', 'drive.file.created', 'drive.file.updated', 'drive.file.moved', 'drive.folder.deleted'];
  await until(() => expected.every((s) => events.some((e) => e.subject === `${ns}.${s}` && [f.id, up.body.id].includes((e.event.data as any).id))));
  const updated = events.find((e) => e.subject === `${ns}.drive.file.updated` && (e.event.data as any).id === up.body.id)!;
  expect(updated.event).toMatchObject({ type: 'drive.file.updated', accountId, data: { etag: quoted('e2'), previousEtag: quoted('e1'), sha256: sha('e2') } });
  expect(updated.event.id).toMatch(/^evt_/);
});
