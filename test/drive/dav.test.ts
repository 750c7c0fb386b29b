import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createSystemTokenSource, generateApiKey, hashSecret, keyPrefix, newId, PrincipalSigner } from '@svc/kit';
import { drive, keys } from '@svc/proto';

import { startTestStack, type TestStack } from '../support/stack';
import { withTools } from '../support/tools';

// WebDAV at /dav with HTTP Basic (the API key as the password), on a stack whose blobs are an S3
// peer (s3rver, started by the harness): content goes over the real S3 protocol here.
let t: TestStack;
// The stack's warnings and errors, so that a failing answer can be explained (printed with it).
const logs: string[] = [];
beforeAll(async () => {
  t = await startTestStack({ S3_ENDPOINT: 'start', LOG_LEVEL: 'warn' }, { logDestination: { write: (l: string) => void logs.push(l) } });
}, 60_000);
afterAll(() => t?.stop());

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const quoted = (b: Buffer | string) => `"${sha(b)}"`;
const basic = (key: string) => `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`;

async function dav(method: string, p: string, opts: { key?: string | null; body?: string | Buffer; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key !== null) headers.authorization = basic(opts.key ?? t.bootstrapKey);
  const res = await fetch(t.url + p, { method, headers, body: opts.body });
  const bytes = Buffer.from(await res.arrayBuffer());
  // A server error is never expected here: say what it was and what the stack logged.
  if (res.status >= 500) console.error(`${method} ${p} answered ${res.status}: ${bytes.toString('utf8')}\n${logs.slice(-5).join('')}`);
  return { status: res.status, headers: res.headers, text: bytes.toString('utf8'), bytes };
}

async function api(method: string, p: string, opts: { body?: string | Buffer; headers?: Record<string, string> } = {}) {
  const res = await fetch(t.url + p, { method, headers: { authorization: `Bearer ${t.bootstrapKey}`, ...opts.headers }, body: opts.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

const LOCKINFO = (scope = 'exclusive') =>
  `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:${scope}/></D:lockscope>` +
  '<D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:test@example.com</D:href></D:owner></D:lockinfo>';

/** The <D:response> blocks of a multistatus, by href. */
function responses(xml: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of xml.matchAll(/<D:response>([\s\S]*?)<\/D:response>/g)) {
    const href = /<D:href>([^<]*)<\/D:href>/.exec(m[1]!)![1]!;
    out.set(decodeURIComponent(href), m[1]!);
  }
  return out;
}
const prop = (block: string, name: string) => new RegExp(`<D:${name}>([^<]*)</D:${name}>`).exec(block)?.[1];

describe('WebDAV', () => {
  test('credentials: none or a wrong key is 401 with a Basic challenge; OPTIONS announces class 1 and 2', async () => {
    const none = await dav('PROPFIND', '/dav/', { key: null, headers: { depth: '0' } });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm="svc"/);
    const wrong = await dav('PROPFIND', '/dav/', { key: `svc_${'0'.repeat(64)}`, headers: { depth: '0' } });
    expect(wrong.status).toBe(401);
    const options = await dav('OPTIONS', '/dav/');
    expect(options.status).toBe(200);
    expect(options.headers.get('dav')).toBe('1, 2');
    expect(options.headers.get('allow')).toContain('PROPFIND');
    // The /v1 prefix works for WebDAV too.
    expect((await dav('PROPFIND', '/v1/dav/', { headers: { depth: '0' } })).status).toBe(207);
  });

  test('PUT, GET and PROPFIND: ETags equal the API’s (the SHA-256 of the bytes)', async () => {
    const dir = `dav-${Date.now()}`;
    expect((await dav('MKCOL', `/dav/${dir}`)).status).toBe(201);
    const content = randomBytes(200_000);
    const put = await dav('PUT', `/dav/${dir}/report%20one.bin`, { body: content });
    expect(put.status).toBe(201);
    expect(put.headers.get('etag')).toBe(quoted(content));
    const get = await dav('GET', `/dav/${dir}/report%20one.bin`);
    expect(get.status).toBe(200);
    expect(get.bytes.equals(content)).toBe(true);
    expect(get.headers.get('etag')).toBe(quoted(content));

    const pf = await dav('PROPFIND', `/dav/${dir}/`, { headers: { depth: '1' } });
    expect(pf.status).toBe(207);
    expect(pf.headers.get('content-type')).toMatch(/xml/);
    const r = responses(pf.text);
    const file = r.get(`/dav/${dir}/report one.bin`)!;
    expect(file).toBeDefined();
    expect(prop(file, 'getetag')).toBe(`&quot;${sha(content)}&quot;`);
    expect(prop(file, 'getcontentlength')).toBe(String(content.length));
    expect(r.get(`/dav/${dir}/`)).toContain('<D:collection/>');

    // The API sees the same file with the same ETag.
    const list = await api('GET', '/drive?limit=200');
    const folder = list.body.items.find((i: any) => i.name === dir);
    const inside = await api('GET', `/drive?parentId=${folder.id}`);
    expect(inside.body.items[0]).toMatchObject({ name: 'report one.bin', etag: quoted(content), size: content.length });
    const viaApi = await fetch(`${t.url}/drive/${inside.body.items[0].id}/content`, { headers: { authorization: `Bearer ${t.bootstrapKey}` } });
    expect(Buffer.from(await viaApi.arrayBuffer()).equals(content)).toBe(true);

    // Range over S3.
    const part = await dav('GET', `/dav/${dir}/report%20one.bin`, { headers: { range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.bytes.equals(content.subarray(100, 200))).toBe(true);
  });

  test('PUT honours If-Match and If-None-Match like the API', async () => {
    const p = `/dav/cond-${Date.now()}.txt`;
    expect((await dav('PUT', p, { body: 'one', headers: { 'if-none-match': '*' } })).status).toBe(201);
    expect((await dav('PUT', p, { body: 'two', headers: { 'if-none-match': '*' } })).status).toBe(412);
    const stale = await dav('PUT', p, { body: 'two', headers: { 'if-match': '"not-it"' } });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('etag')).toBe(quoted('one'));
    expect((await dav('GET', p)).text).toBe('one');
    const ok = await dav('PUT', p, { body: 'two', headers: { 'if-match': quoted('one') } });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('etag')).toBe(quoted('two'));
    // Without a precondition a WebDAV PUT replaces (file managers send none).
    expect((await dav('PUT', p, { body: 'three' })).status).toBe(204);
    expect((await dav('GET', p)).text).toBe('three');
  });

  test('MKCOL, COPY, MOVE and DELETE', async () => {
    const d = `/dav/tree-${Date.now()}`;
    expect((await dav('MKCOL', d)).status).toBe(201);
    expect((await dav('MKCOL', d)).status).toBe(405);
    expect((await dav('MKCOL', `${d}/missing/child`)).status).toBe(409);
    expect((await dav('PUT', `${d}/a.txt`, { body: 'a' })).status).toBe(201);
    const host = new URL(t.url).host;
    expect((await dav('COPY', `${d}/a.txt`, { headers: { destination: `http://${host}${d}/b.txt` } })).status).toBe(201);
    expect((await dav('COPY', `${d}/a.txt`, { headers: { destination: `${d}/b.txt`, overwrite: 'F' } })).status).toBe(412);
    expect((await dav('MOVE', `${d}/b.txt`, { headers: { destination: `${d}/c.txt` } })).status).toBe(201);
    expect((await dav('GET', `${d}/b.txt`)).status).toBe(404);
    expect((await dav('GET', `${d}/c.txt`)).text).toBe('a');
    expect((await dav('MOVE', `${d}/c.txt`, { headers: { destination: `${d}/a.txt` } })).status).toBe(204);
    expect((await dav('COPY', d, { headers: { destination: `${d}-copy` } })).status).toBe(201);
    expect((await dav('GET', `${d}-copy/a.txt`)).text).toBe('a');
    expect((await dav('DELETE', d)).status).toBe(204);
    expect((await dav('PROPFIND', d, { headers: { depth: '0' } })).status).toBe(404);
    expect((await dav('DELETE', `${d}-copy`)).status).toBe(204);
  });

  test('LOCK: without its token a write is 423 (and the API is refused too); with it, it goes through; UNLOCK frees it', async () => {
    const p = `/dav/locked-${Date.now()}.txt`;
    await dav('PUT', p, { body: 'v1' });
    const lock = await dav('LOCK', p, { body: LOCKINFO(), headers: { 'content-type': 'application/xml', timeout: 'Second-600' } });
    expect(lock.status).toBe(200);
    const token = /^<(.+)>$/.exec(lock.headers.get('lock-token')!)![1]!;
    expect(token).toMatch(/^urn:uuid:/);
    expect(lock.text).toContain('<D:exclusive/>');
    expect(lock.text).toContain(token);

    expect((await dav('PUT', p, { body: 'v2' })).status).toBe(423);
    expect((await dav('LOCK', p, { body: LOCKINFO(), headers: { 'content-type': 'application/xml' } })).status).toBe(423);
    const list = await api('GET', '/drive?limit=200');
    const item = list.body.items.find((i: any) => `/dav/${i.name}` === p);
    const viaApi = await api('PUT', `/drive/${item.id}/content`, { body: 'api', headers: { 'if-match': quoted('v1') } });
    expect(viaApi.status).toBe(409);
    expect(viaApi.body.error.code).toBe('locked');

    const pf = await dav('PROPFIND', p, {
      headers: { depth: '0' },
      body: '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>',
    });
    expect(pf.text).toContain(token);
    expect((await dav('PUT', p, { body: 'v2', headers: { if: `(<${token}>)` } })).status).toBe(204);
    expect((await dav('UNLOCK', p, { headers: { 'lock-token': `<${token}>` } })).status).toBe(204);
    expect((await dav('PUT', p, { body: 'v3' })).status).toBe(204);
    // LOCK on an unmapped URL makes an empty locked file.
    const fresh = `/dav/new-${Date.now()}.txt`;
    const made = await dav('LOCK', fresh, { body: LOCKINFO(), headers: { 'content-type': 'application/xml' } });
    expect(made.status).toBe(201);
    expect((await dav('GET', fresh)).headers.get('etag')).toBe(quoted(''));
  });

  test("another account's tree is not there", async () => {
    const mine = `/dav/mine-${Date.now()}.txt`;
    await dav('PUT', mine, { body: 'mine' });
    const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
    const other = newId('acct');
    const otherKey = generateApiKey();
    await t.stack.registry
      .client('keys', keys.KeysServiceService, 'svc.keys.v1.KeysService')
      .importKey(
        { keyHash: hashSecret(otherKey), prefix: keyPrefix(otherKey), name: 'x', accountId: other, ownerKind: 'human', ownerId: other },
        { principalToken: token },
      );
    expect((await dav('GET', mine, { key: otherKey })).status).toBe(404);
    expect((await dav('DELETE', mine, { key: otherKey })).status).toBe(404);
    const root = await dav('PROPFIND', '/dav/', { key: otherKey, headers: { depth: '1' } });
    expect([...responses(root.text).keys()]).toEqual(['/dav/']);
  });

  test('the drive over S3: a PUT larger than one S3 part (16 MiB) is stored in parts and read back whole', async () => {
    const big = Buffer.alloc(20 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32BE(i, i);
    const p = `/dav/big-${Date.now()}.bin`;
    expect((await dav('PUT', p, { body: big })).status).toBe(201);
    const back = await dav('GET', p);
    expect({ status: back.status, size: back.bytes.length, sha: sha(back.bytes) }).toEqual({ status: 200, size: big.length, sha: sha(big) });
  });

  test('the drive over S3: a replaced version, once its kept version is deleted, is collected; the current one stays readable', async () => {
    const p = `/dav/s3gc-${Date.now()}.txt`;
    await dav('PUT', p, { body: 's3 version one' });
    await dav('PUT', p, { body: 's3 version two', headers: { 'if-match': quoted('s3 version one') } });
    // The replaced content is kept as a version until that version is deleted.
    const id = (await api('GET', `/drive/stat?path=${p.slice('/dav/'.length)}`)).body.item.id;
    const [kept] = (await api('GET', `/drive/${id}/versions`)).body.versions;
    expect(kept.sha256).toBe(sha('s3 version one'));
    expect((await api('DELETE', `/drive/${id}/versions/${kept.id}`)).status).toBe(200);
    const sysToken = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
    const res = await (t.stack.registry.client('drive', drive.DriveServiceService as any, 'svc.drive.v1.DriveService') as any).collectGarbage(
      { graceSeconds: 0 },
      { principalToken: sysToken },
    );
    expect(res.blobsRemoved).toBeGreaterThanOrEqual(1);
    const blobs = await t.stack.backends.blobs();
    const me = (await api('GET', '/me')).body.accountId;
    expect(await blobs.stat(`drive/${me}/${sha('s3 version one').slice(0, 2)}/${sha('s3 version one')}`)).toBeNull();
    expect((await dav('GET', p)).text).toBe('s3 version two');
  });
});

// litmus (Debian's WebDAV compliance suite, a neon client): basic, copymove, props and locks must
// all pass. Skipped with a warning where litmus is not installed; in CI its absence fails the test.
const litmus = withTools('the litmus WebDAV checks', { name: 'litmus', install: 'apt-get install -y litmus' });
litmus.test(
  'litmus: basic, copymove, props and locks pass',
  async () => {
    const output = await new Promise<string>((resolve) => {
      execFile(
        'litmus',
        [`${t.url}/dav/`, 'litmus', t.bootstrapKey],
        // About 10 s on a quiet machine; CI's second pass runs it beside other suites on two cores,
        // where it once needed more than 60 s (the locks group was cut off), so the budget is wide.
        { env: { ...process.env, TESTS: 'basic copymove props locks' }, timeout: 240_000, cwd: os.tmpdir() },
        (err, stdout, stderr) => resolve(`${stdout}${stderr}${err?.killed ? `\nlitmus killed by ${err.signal} after 240 s` : ''}`),
      );
    });
    const summaries = [...output.matchAll(/summary for `(\w+)': of (\d+) tests run: (\d+) passed, (\d+) failed/g)].map((m) => ({
      group: m[1],
      run: Number(m[2]),
      failed: Number(m[4]),
    }));
    // On a mismatch the end of litmus's own report says which check failed or where it stopped.
    expect({ groups: summaries.map((s) => s.group), tail: summaries.length === 4 ? '' : output.slice(-1500) }).toEqual({
      groups: ['basic', 'copymove', 'props', 'locks'],
      tail: '',
    });
    // A failed check is named with litmus's reason and what the stack logged.
    const failures = output.split('\n').filter((line) => /FAIL/.test(line));
    for (const s of summaries) {
      expect({ group: s.group, failed: s.failed, failures: s.failed ? [...failures, ...logs.slice(-5)] : [] }).toEqual({
        group: s.group,
        failed: 0,
        failures: [],
      });
    }
  },
  300_000,
);

// rclone (a widely used sync client): a tree copied up, listed, compared and copied back byte for
// byte, over WebDAV with the API key as the password. Skipped with a warning where rclone is not
// installed; in CI its absence fails the test.
const rclone = withTools('the rclone WebDAV checks', { name: 'rclone', install: 'apt-get install -y rclone' });
rclone.test(
  'rclone copies a tree up and back through /dav',
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-rclone-'));
    try {
      fs.mkdirSync(path.join(dir, 'up', 'sub'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'up', 'a.txt'), 'hello\n');
      fs.writeFileSync(path.join(dir, 'up', 'sub', 'name with spaces & ü.bin'), randomBytes(300_000));
      const env = {
        ...process.env,
        RCLONE_CONFIG: path.join(dir, 'none.conf'),
        RCLONE_CONFIG_SVC_TYPE: 'webdav',
        RCLONE_CONFIG_SVC_URL: `${t.url}/dav/`,
        RCLONE_CONFIG_SVC_VENDOR: 'other',
        RCLONE_CONFIG_SVC_USER: 'me',
        RCLONE_CONFIG_SVC_PASS: execFileSync('rclone', ['obscure', t.bootstrapKey]).toString().trim(),
      };
      // Asynchronously: the stack serving rclone runs in this process.
      const run = (...args: string[]) =>
        new Promise<string>((resolve, reject) =>
          execFile('rclone', args, { env, timeout: 30_000 }, (err, stdout, stderr) =>
            err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
          ),
        );
      await run('copy', path.join(dir, 'up'), 'svc:rclone-tree');
      expect((await run('lsf', '-R', 'svc:rclone-tree')).split('\n').filter(Boolean).sort()).toEqual([
        'a.txt',
        'sub/',
        'sub/name with spaces & ü.bin',
      ]);
      await run('copy', 'svc:rclone-tree', path.join(dir, 'down'));
      for (const f of ['a.txt', 'sub/name with spaces & ü.bin']) {
        expect(fs.readFileSync(path.join(dir, 'down', f)).equals(fs.readFileSync(path.join(dir, 'up', f)))).toBe(true);
      }
      // What rclone wrote is the API's file, with the API's ETag.
      const list = await api('GET', '/drive?limit=200');
      const tree = list.body.items.find((i: any) => i.name === 'rclone-tree');
      const files = await api('GET', `/drive?parentId=${tree.id}`);
      expect(files.body.items.find((i: any) => i.name === 'a.txt').etag).toBe(quoted('hello\n'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
  60_000,
);
