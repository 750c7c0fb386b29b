import { createHash } from 'node:crypto';
import http from 'node:http';

import { zipSync } from 'fflate';

import { createSystemTokenSource, PrincipalSigner } from '@svc/kit';
import { drive } from '@svc/proto';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Hosted sites through the gateway (docs/sites.md), on S3 (s3rver) and the backends the
 * environment names: sites and slugs, deploys from files and from a drive folder, the public pages
 * (types, ETags and 304, index.html, redirects, 404.html, traversal attempts, isolation headers, no
 * credentials), redeploys and rollbacks, limits that leave the site serving, other accounts, agents.
 */

const MAX_FILES = 12;
const MAX_BYTES = 512 * 1024;
const KEEP = 5;

let t: TestStack;
let alice: string;
let bob: string;
let agentKey: string;
const events: Array<{ subject: string; data: any }> = [];

beforeAll(async () => {
  t = await startTestStack({
    S3_ENDPOINT: 'start',
    SVC_DRIVE_SITE_MAX_FILES: String(MAX_FILES),
    SVC_DRIVE_SITE_MAX_BYTES: String(MAX_BYTES),
    SVC_DRIVE_SITE_KEEP_DEPLOYMENTS: String(KEEP),
    SVC_SITES_HOST: 'sites.test',
  });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
  const agentId = (await t.ok('POST', '/agents', alice, { name: 'site builder' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, alice, { name: 'k' })).body.key;
  const bus = await t.stack.backends.bus();
  await bus.subscribe('drive.site.>', async (event, meta) => void events.push({ subject: meta.subject, data: event.data }));
}, 90_000);
afterAll(() => t?.stop());

interface Page {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
}

/** A request as sent, byte for byte (fetch would normalize "..", and cannot set Host). */
function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Page> {
  const port = Number(new URL(t.url).port);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body, text: body.toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

const createSite = async (slug: string, key = alice) => (await t.ok('POST', '/sites', key, { slug, title: `The ${slug} site` })).body;
const deploy = (siteId: string, body: unknown, key = alice) => t.call('POST', `/sites/${siteId}/deployments`, { key, body });
const files = (map: Record<string, string>) => Object.entries(map).map(([path, content]) => ({ path, content }));

async function deployOk(siteId: string, body: unknown, key = alice) {
  const res = await deploy(siteId, body, key);
  if (res.status !== 201) throw new Error(`deploy -> ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function upload(name: string, content: string, parentId?: string) {
  const q = new URLSearchParams({ name, ...(parentId ? { parentId } : {}) });
  return (await t.ok('POST', `/drive/upload?${q}`, alice, content, { 'content-type': 'application/octet-stream' })).body;
}

describe('sites', () => {
  let site: any;
  let first: any;

  test('a site is created with a slug: a DNS label, unique across the platform', async () => {
    site = await createSite('alpha');
    expect(site).toMatchObject({ slug: 'alpha', title: 'The alpha site', currentDeploymentId: null, path: '/sites/alpha/', projectId: null });
    expect(site.id).toMatch(/^site_[0-9a-z]{26}$/);
    for (const slug of ['Alpha', '-alpha', 'alpha-', 'al_pha', 'al.pha', 'a'.repeat(64), '', 'xn--alpha', 'api']) {
      const res = await t.call('POST', '/sites', { key: alice, body: { slug } });
      expect([slug, res.status, res.body]).toEqual([slug, 400, ERROR_BODY]);
    }
    const taken = await t.call('POST', '/sites', { key: bob, body: { slug: 'alpha' } });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'slug_taken']);
    // Before its first deploy the site serves nothing.
    expect((await get('/sites/alpha/')).status).toBe(404);
  });

  test('a deploy of files serves them at once, with their types, strong ETags and the isolation headers', async () => {
    first = await deployOk(site.id, {
      files: [
        ...files({
          'index.html': '<h1>home v1</h1>',
          'css/site.css': 'body { color: red }',
          'docs/index.html': '<h1>docs</h1>',
          'docs/guide.md': '# guide',
          '404.html': '<h1>nothing here</h1>',
          './hello world.txt': 'hi',
          'café.txt': 'crème',
          'app.js': 'console.log(1)',
          'data.json': '{"a":1}',
          'empty.txt': '',
        }),
        { path: 'img/dot.png', content: PNG.toString('base64'), encoding: 'base64' },
      ],
    });
    expect(first).toMatchObject({ siteId: site.id, source: 'files', folderId: null, fileCount: 11, current: true });
    expect(first.id).toMatch(/^dep_[0-9a-z]{26}$/);
    expect(first.files.map((f: any) => f.path)).toEqual([
      '404.html',
      'app.js',
      'café.txt',
      'css/site.css',
      'data.json',
      'docs/guide.md',
      'docs/index.html',
      'empty.txt',
      'hello world.txt',
      'img/dot.png',
      'index.html',
    ]);
    expect(first.files.find((f: any) => f.path === 'img/dot.png')).toEqual({
      path: 'img/dot.png',
      sha256: sha(PNG),
      size: PNG.length,
      contentType: 'image/png',
    });
    expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(first.id);

    const home = await get('/sites/alpha/', { authorization: 'Bearer svc_' + '0'.repeat(64), cookie: 'session=x' });
    expect(home.status).toBe(200);
    expect(home.text).toBe('<h1>home v1</h1>');
    expect(home.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      etag: `"${sha('<h1>home v1</h1>')}"`,
      'content-length': String('<h1>home v1</h1>'.length),
      'x-content-type-options': 'nosniff',
      'cache-control': 'public, no-cache',
    });
    expect(home.headers['content-security-policy']).toMatch(/^sandbox /);
    expect(home.headers['content-security-policy']).not.toMatch(/allow-same-origin/);
    expect(home.headers['set-cookie']).toBeUndefined();
    expect(home.headers['access-control-allow-credentials']).toBeUndefined();

    const types: Array<[string, string, string | Buffer]> = [
      ['/sites/alpha/css/site.css', 'text/css; charset=utf-8', 'body { color: red }'],
      ['/sites/alpha/img/dot.png', 'image/png', PNG],
      ['/sites/alpha/app.js', 'text/javascript; charset=utf-8', 'console.log(1)'],
      ['/sites/alpha/data.json', 'application/json; charset=utf-8', '{"a":1}'],
      ['/sites/alpha/docs/guide.md', 'text/markdown; charset=utf-8', '# guide'],
      ['/sites/alpha/hello%20world.txt', 'text/plain; charset=utf-8', 'hi'],
      ['/sites/alpha/caf%C3%A9.txt', 'text/plain; charset=utf-8', 'crème'],
      ['/sites/alpha/empty.txt', 'text/plain; charset=utf-8', ''],
      ['/sites/alpha/index.html', 'text/html; charset=utf-8', '<h1>home v1</h1>'],
      ['/v1/sites/alpha/docs/', 'text/html; charset=utf-8', '<h1>docs</h1>'],
    ];
    for (const [path, type, content] of types) {
      const page = await get(path);
      expect([path, page.status, page.headers['content-type']]).toEqual([path, 200, type]);
      expect(page.body.equals(Buffer.from(content))).toBe(true);
      expect(page.headers.etag).toBe(`"${sha(content)}"`);
    }
  });

  test('a large file is streamed whole (past the gateway’s in-memory cache of small files)', async () => {
    const big = Buffer.alloc(300 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251;
    const other = await createSite('streamed');
    await deployOk(other.id, { files: [{ path: 'big.bin', content: big.toString('base64'), encoding: 'base64' }] });
    for (let i = 0; i < 2; i++) {
      const page = await get('/sites/streamed/big.bin');
      expect([page.status, page.headers['content-type'], page.headers.etag, page.body.equals(big)]).toEqual([
        200,
        'application/octet-stream',
        `"${sha(big)}"`,
        true,
      ]);
    }
    await t.ok('DELETE', `/sites/${other.id}`, alice);
  });

  test('content that does not match its hash is never served as complete', async () => {
    const s = await createSite('damaged');
    const small = 'small, cached when read';
    const large = Buffer.alloc(300 * 1024, 7);
    await deployOk(s.id, {
      files: [
        { path: 'small.txt', content: small },
        { path: 'large.bin', content: large.toString('base64'), encoding: 'base64' },
      ],
    });
    const accountId = (await t.ok('GET', '/me', alice)).body.accountId;
    const blobs = await t.stack.backends.blobs();
    const key = (h: string) => `drive/${accountId}/${h.slice(0, 2)}/${h}`;
    await blobs.put(key(sha(small)), Buffer.from('SMALL, CACHED WHEN READ'));
    const tampered = Buffer.from(large);
    tampered[1000] = 8;
    await blobs.put(key(sha(large)), tampered);
    await expect(get('/sites/damaged/small.txt')).rejects.toThrow();
    await expect(get('/sites/damaged/large.bin')).rejects.toThrow();
    await t.ok('DELETE', `/sites/${s.id}`, alice);
  });

  test('HEAD, If-None-Match (304), folder redirects and the site’s 404.html', async () => {
    const etag = `"${sha('<h1>home v1</h1>')}"`;
    const head = await get('/sites/alpha/', {}, 'HEAD');
    expect([head.status, head.headers.etag, head.headers['content-length'], head.body.length]).toEqual([200, etag, '16', 0]);
    const cached = await get('/sites/alpha/', { 'if-none-match': etag });
    expect([cached.status, cached.headers.etag, cached.body.length]).toEqual([304, etag, 0]);
    expect((await get('/sites/alpha/', { 'if-none-match': `W/${etag}, "other"` })).status).toBe(304);
    expect((await get('/sites/alpha/', { 'if-none-match': '"other"' })).status).toBe(200);

    const root = await get('/sites/alpha?x=1');
    expect([root.status, root.headers.location]).toEqual([301, '/sites/alpha/?x=1']);
    const docs = await get('/sites/alpha/docs');
    expect([docs.status, docs.headers.location]).toEqual([301, '/sites/alpha/docs/']);
    expect((await get('/v1/sites/alpha/docs')).headers.location).toBe('/v1/sites/alpha/docs/');

    const missing = await get('/sites/alpha/no/such/page.html');
    expect([missing.status, missing.headers['content-type'], missing.text]).toEqual([404, 'text/html; charset=utf-8', '<h1>nothing here</h1>']);
    expect(missing.headers['content-security-policy']).toMatch(/^sandbox /);
    expect(missing.headers.etag).toBeUndefined();
    // A folder without index.html is not listed.
    expect((await get('/sites/alpha/css/')).status).toBe(404);
    // Another method is not the site's.
    expect((await get('/sites/alpha/', {}, 'DELETE')).status).not.toBe(200);
  });

  test('traversal and malformed paths never leave the site', async () => {
    for (const path of [
      '/sites/alpha/../../drive',
      '/sites/alpha/%2e%2e/%2e%2e/etc/passwd',
      '/sites/alpha/docs/../../beta/index.html',
      '/sites/alpha/docs/%2E%2E/index.html',
      '/sites/alpha/.%2Findex.html/..',
      '/sites/alpha/index.html%00.txt',
      '/sites/alpha//index.html',
      '/sites/alpha/docs%5c..%5cindex.html',
    ]) {
      const page = await get(path);
      expect([path, page.status, page.text]).toEqual([path, 404, '<h1>nothing here</h1>']);
    }
    expect((await get('/sites/alpha/%zz')).status).toBe(400);
    // No such site: a plain 404 (no 404.html to show).
    const none = await get('/sites/no-such-site/');
    expect([none.status, none.headers['content-type']]).toEqual([404, 'text/plain; charset=utf-8']);
  });

  test('with SVC_SITES_HOST, <slug>.<host> serves the site at its root', async () => {
    const home = await get('/', { host: 'alpha.sites.test' });
    expect([home.status, home.text]).toEqual([200, '<h1>home v1</h1>']);
    expect(home.headers['content-security-policy']).toMatch(/^sandbox /);
    expect((await get('/v1/docs/', { host: 'alpha.sites.test:8080' })).status).toBe(404);
    expect((await get('/docs', { host: 'alpha.sites.test' })).headers.location).toBe('/docs/');
    expect((await get('/me', { host: 'alpha.sites.test', authorization: `Bearer ${alice}` })).text).toBe('<h1>nothing here</h1>');
    // The API answers on its own host name as before.
    expect((await get('/me', { authorization: `Bearer ${alice}` })).status).toBe(200);
  });

  test('a deploy from a drive folder is a snapshot: later drive writes and collection leave it as it was', async () => {
    const www = (await t.ok('POST', '/drive/folders', alice, { name: 'www' })).body;
    const sub = (await t.ok('POST', '/drive/folders', alice, { name: 'blog', parentId: www.id })).body;
    const index = await upload('index.html', '<h1>from the drive</h1>', www.id);
    await upload('post.html', '<p>post</p>', sub.id);
    await upload('notes.unknownext', 'plain notes', www.id);

    const byId = await deployOk(site.id, { folderId: www.id });
    expect(byId).toMatchObject({ source: 'folder', folderId: www.id, fileCount: 3, current: true });
    expect(byId.files.map((f: any) => [f.path, f.contentType])).toEqual([
      ['blog/post.html', 'text/html; charset=utf-8'],
      ['index.html', 'text/html; charset=utf-8'],
      ['notes.unknownext', 'application/octet-stream'],
    ]);
    expect((await get('/sites/alpha/')).text).toBe('<h1>from the drive</h1>');
    expect((await get('/sites/alpha/blog/post.html')).text).toBe('<p>post</p>');
    // The earlier deployment is gone from what is served (its 404.html too).
    expect((await get('/sites/alpha/css/site.css')).status).toBe(404);

    // Replacing the drive file, then collecting with no grace period: the site keeps its content.
    await t.ok('PUT', `/drive/${index.id}/content`, alice, 'replaced', { 'if-match': index.etag, 'content-type': 'application/octet-stream' });
    const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
    const client = t.stack.registry.client('drive', drive.DriveServiceService as any, 'svc.drive.v1.DriveService') as any;
    await client.collectGarbage({ graceSeconds: 0 }, { principalToken: token });
    expect((await get('/sites/alpha/')).text).toBe('<h1>from the drive</h1>');

    // By path, the same folder now holds the new content.
    const byPath = await deployOk(site.id, { folderPath: '/www/' });
    expect(byPath.folderId).toBe(www.id);
    expect((await get('/sites/alpha/')).text).toBe('replaced');
    // Same files, same digest.
    expect((await deployOk(site.id, { folderPath: 'www' })).digest).toBe(byPath.digest);
  });

  test('a zip archive deploys as its files; a bad one changes nothing', async () => {
    const s = await createSite('zipped');
    const zip = (entries: Record<string, string | Uint8Array>) =>
      Buffer.from(zipSync(Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, typeof v === 'string' ? Buffer.from(v) : v])))).toString(
        'base64',
      );
    const dep = await deployOk(s.id, {
      archive: { format: 'zip', content: zip({ 'index.html': 'zipped home', 'css/': new Uint8Array(0), 'css/a.css': 'a{}' }) },
    });
    expect([dep.source, dep.files.map((f: any) => f.path)]).toEqual(['archive', ['css/a.css', 'index.html']]);
    expect((await get('/sites/zipped/')).text).toBe('zipped home');
    expect((await get('/sites/zipped/css/a.css')).headers['content-type']).toBe('text/css; charset=utf-8');

    const refused: Array<[unknown, number, string]> = [
      [{ archive: { content: zip({ '../evil.html': 'x' }) } }, 400, 'invalid_path'],
      [{ archive: { content: Buffer.from('not a zip at all').toString('base64') } }, 400, 'invalid_archive'],
      [{ archive: { content: zip(Object.fromEntries(Array.from({ length: MAX_FILES + 1 }, (_, i) => [`f${i}.txt`, 'x']))) } }, 413, 'site_too_large'],
      [{ archive: { content: zip({ 'big.txt': new Uint8Array(MAX_BYTES + 1) }) } }, 413, 'site_too_large'],
    ];
    for (const [body, status, code] of refused) {
      const res = await deploy(s.id, body);
      expect([res.status, res.body.error?.code]).toEqual([status, code]);
    }
    expect((await t.ok('GET', `/sites/${s.id}`, alice)).body.currentDeploymentId).toBe(dep.id);
    await t.ok('DELETE', `/sites/${s.id}`, alice);
  });

  test('deployments are listed newest first; a rollback serves an earlier one at once', async () => {
    const list = (await t.ok('GET', `/sites/${site.id}/deployments`, alice)).body;
    expect(list.deployments).toHaveLength(4);
    expect(list.deployments[0].current).toBe(true);
    expect(list.deployments.filter((d: any) => d.current)).toHaveLength(1);
    expect(list.deployments[3].id).toBe(first.id);
    expect(list.deployments[0].files).toBeUndefined();
    const page = (await t.ok('GET', `/sites/${site.id}/deployments?limit=3`, alice)).body;
    expect(page.deployments.map((d: any) => d.id)).toEqual(list.deployments.slice(0, 3).map((d: any) => d.id));
    const rest = (await t.ok('GET', `/sites/${site.id}/deployments?limit=3&cursor=${page.nextCursor}`, alice)).body;
    expect([rest.deployments.map((d: any) => d.id), rest.nextCursor]).toEqual([[first.id], null]);

    const one = (await t.ok('GET', `/sites/${site.id}/deployments/${first.id}`, alice)).body;
    expect([one.current, one.files.length, one.digest]).toEqual([false, 11, first.digest]);

    const rolled = (await t.ok('POST', `/sites/${site.id}/rollback`, alice, { deploymentId: first.id })).body;
    expect(rolled.currentDeploymentId).toBe(first.id);
    expect((await get('/sites/alpha/')).text).toBe('<h1>home v1</h1>');
    expect((await get('/sites/alpha/img/dot.png')).body.equals(PNG)).toBe(true);
    // Without a deployment named: the one deployed before the current one (the first has none).
    const none = await t.call('POST', `/sites/${site.id}/rollback`, { key: alice, body: {} });
    expect([none.status, none.body.error.code]).toEqual([409, 'no_earlier_deployment']);
    await t.ok('POST', `/sites/${site.id}/rollback`, alice, { deploymentId: list.deployments[1].id });
    const back = (await t.ok('POST', `/sites/${site.id}/rollback`, alice, {})).body;
    expect(back.currentDeploymentId).toBe(list.deployments[2].id);
    expect((await get('/sites/alpha/')).text).toBe('<h1>from the drive</h1>');
    const unknown = await t.call('POST', `/sites/${site.id}/rollback`, { key: alice, body: { deploymentId: 'dep_' + '0'.repeat(26) } });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'deployment_not_found']);
  });

  test('a deploy over a limit is 413 and the site serves what it served', async () => {
    const before = (await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId;
    const tooMany = await deploy(site.id, { files: Array.from({ length: MAX_FILES + 1 }, (_, i) => ({ path: `f${i}.txt`, content: 'x' })) });
    expect([tooMany.status, tooMany.body.error.code]).toEqual([413, 'site_too_large']);
    const tooBig = await deploy(site.id, { files: [{ path: 'index.html', content: 'y'.repeat(MAX_BYTES + 1) }] });
    expect([tooBig.status, tooBig.body.error.code]).toEqual([413, 'site_too_large']);
    // A folder over the limit, too.
    const big = (await t.ok('POST', '/drive/folders', alice, { name: 'big' })).body;
    for (let i = 0; i < 3; i++) await upload(`part${i}.txt`, String(i).repeat(MAX_BYTES / 2), big.id);
    const folder = await deploy(site.id, { folderId: big.id });
    expect([folder.status, folder.body.error.code]).toEqual([413, 'site_too_large']);
    // A body past the gateway's JSON limit for deploys.
    const huge = await deploy(site.id, { files: [{ path: 'a.txt', content: 'z'.repeat(16 * 1024 * 1024) }] });
    expect(huge.status).toBe(413);

    expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(before);
    expect((await get('/sites/alpha/')).text).toBe('<h1>from the drive</h1>');
    expect((await t.ok('GET', `/sites/${site.id}/deployments`, alice)).body.deployments).toHaveLength(4);
  });

  test('bad input is refused with the contract’s errors, and leaves the site as it was', async () => {
    const bad: Array<[unknown, number, string?]> = [
      [{ files: files({ '../x.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ '/abs.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'a//b.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'dir/': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'a\\b.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'C:x.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'a\u0001.html': 'x' }) }, 400, 'invalid_path'],
      [{ files: files({ 'a\u0000.html': 'x' }) }, 400],
      [{ files: files({ 'a.html': 'x', './a.html': 'y' }) }, 400, 'duplicate_path'],
      [{ files: [{ path: 'a.bin', content: 'not base64!', encoding: 'base64' }] }, 400],
      [{ files: [] }, 400],
      [{}, 400],
      [{ folderId: 'fld_' + '0'.repeat(26), files: files({ 'a.html': 'x' }) }, 400],
      [{ folderId: 'fld_' + '0'.repeat(26) }, 404, 'folder_not_found'],
      [{ folderPath: 'no/such/folder' }, 404, 'folder_not_found'],
      [{ folderPath: '../www' }, 400, 'invalid_path'],
      [{ files: files({ 'a.html': 'x' }), extra: 1 }, 400],
    ];
    for (const [body, status, code] of bad) {
      const res = await deploy(site.id, body);
      expect([body, res.status, res.body]).toEqual([body, status, ERROR_BODY]);
      if (code) expect([body, res.body.error.code]).toEqual([body, code]);
    }
    const file = await upload('plain.txt', 'not a folder');
    const notFolder = await deploy(site.id, { folderId: file.id });
    expect(notFolder.status).toBe(400);
    expect((await get('/sites/alpha/')).text).toBe('<h1>from the drive</h1>');
    // A path segment with "_" is an id (the API's); one shaped like a slug is a public site.
    expect((await t.call('GET', '/sites/not_an_id', { key: alice })).status).toBe(400);
    expect((await t.call('GET', '/sites/not-an-id', { key: alice })).body).toBe('Not found.');
  });

  test('another account’s site is not found (its pages are public)', async () => {
    const bobsSite = await createSite('bobs', bob);
    await deployOk(bobsSite.id, { files: files({ 'index.html': 'bob' }) }, bob);
    for (const [method, path, body] of [
      ['GET', `/sites/${bobsSite.id}`],
      ['DELETE', `/sites/${bobsSite.id}`],
      ['POST', `/sites/${bobsSite.id}/deployments`, { files: files({ 'index.html': 'alice was here' }) }],
      ['GET', `/sites/${bobsSite.id}/deployments`],
      ['POST', `/sites/${bobsSite.id}/rollback`, {}],
    ] as Array<[string, string, unknown?]>) {
      const res = await t.call(method, path, { key: alice, body });
      expect([method, path, res.status, res.body?.error?.code]).toEqual([method, path, 404, 'site_not_found']);
    }
    expect((await t.ok('GET', '/sites', alice)).body.sites.map((s: any) => s.slug)).toEqual(['alpha']);
    expect((await get('/sites/bobs/')).text).toBe('bob');
  });

  test('an agent key creates and deploys sites (a site is not authority)', async () => {
    const mine = (await t.ok('POST', '/sites', agentKey, { slug: 'agent-made' })).body;
    const dep = await deployOk(mine.id, { files: files({ 'index.html': 'by an agent' }) }, agentKey);
    expect(dep.createdBy.kind).toBe('agent');
    expect((await get('/sites/agent-made/')).text).toBe('by an agent');
    // The agent acts in its owner's account: the owner sees and manages the site.
    expect((await t.ok('GET', '/sites', alice)).body.sites.map((s: any) => s.slug)).toEqual(['alpha', 'agent-made']);
    await t.ok('DELETE', `/sites/${mine.id}`, alice);
  });

  test('a project-scoped key sees and deploys its project’s sites only', async () => {
    const projectKey = (await t.ok('POST', '/api/api-keys', alice, { name: 'proj', projectId: 'web' })).body.key;
    const mine = (await t.ok('POST', '/sites', projectKey, { slug: 'proj-site' })).body;
    expect(mine.projectId).toBe('web');
    expect((await t.ok('GET', '/sites', projectKey)).body.sites.map((s: any) => s.slug)).toEqual(['proj-site']);
    expect((await t.call('GET', `/sites/${site.id}`, { key: projectKey })).status).toBe(404);
    expect((await deploy(site.id, { files: files({ 'index.html': 'from a project key' }) }, projectKey)).status).toBe(404);
    const other = await t.call('POST', '/sites', { key: projectKey, body: { slug: 'proj-other', projectId: 'elsewhere' } });
    expect([other.status, other.body.error.code]).toEqual([403, 'project_scope']);
    // A folder of the project's drive deploys by its path there; the account's own drive is not reachable.
    const folder = (await t.ok('POST', '/drive/folders', projectKey, { name: 'pub' })).body;
    await t.ok('POST', `/drive/upload?name=index.html&parentId=${folder.id}`, projectKey, 'project page', {
      'content-type': 'application/octet-stream',
    });
    await deployOk(mine.id, { folderPath: 'pub' }, projectKey);
    expect((await get('/sites/proj-site/')).text).toBe('project page');
    expect((await deploy(mine.id, { folderPath: 'www' }, projectKey)).status).toBe(404);
    // The unscoped key sees every site of the account.
    expect((await t.ok('GET', '/sites', alice)).body.sites.map((s: any) => s.slug)).toContain('proj-site');
    await t.ok('DELETE', `/sites/${mine.id}`, alice);
  });

  test('concurrent deploys: each one whole, the site serving exactly one of them', async () => {
    const s = await createSite('racing');
    const versions = Array.from({ length: 6 }, (_, i) => `v${i}`);
    const made = await Promise.all(versions.map((v) => deployOk(s.id, { files: files({ 'index.html': v, [`${v}.txt`]: v }) })));
    const current = (await t.ok('GET', `/sites/${s.id}`, alice)).body.currentDeploymentId;
    const winner = made.find((d) => d.id === current);
    expect(winner).toBeDefined();
    const v = winner.files.find((f: any) => f.path !== 'index.html').path.replace('.txt', '');
    expect((await get('/sites/racing/')).text).toBe(v);
    expect((await get(`/sites/racing/${v}.txt`)).status).toBe(200);
    // Past SVC_DRIVE_SITE_KEEP_DEPLOYMENTS the oldest go; the one served stays.
    const kept = (await t.ok('GET', `/sites/${s.id}/deployments`, alice)).body.deployments.map((d: any) => d.id);
    expect(kept).toHaveLength(KEEP);
    expect(kept).toContain(current);
    const pruned = made.map((d) => d.id).filter((id) => !kept.includes(id));
    expect(pruned).toHaveLength(versions.length - KEEP);
    expect((await t.call('GET', `/sites/${s.id}/deployments/${pruned[0]}`, { key: alice })).status).toBe(404);
    await t.ok('DELETE', `/sites/${s.id}`, alice);
  });

  test('the same content is stored once, across deployments', async () => {
    const count = async () => Number((await (await t.stack.backends.sql()).query<{ n: string }>(`SELECT count(*) AS n FROM drive.blobs`))[0]!.n);
    const s = await createSite('dedupe');
    await deployOk(s.id, { files: files({ 'index.html': 'same bytes', 'copy.html': 'same bytes' }) });
    const after = await count();
    await deployOk(s.id, { files: files({ 'other/index.html': 'same bytes' }) });
    expect(await count()).toBe(after);
  });

  test('deleting a site takes its pages down and frees its slug; events told each change', async () => {
    const s = await createSite('short-lived');
    await deployOk(s.id, { files: files({ 'index.html': 'soon gone' }) });
    expect((await get('/sites/short-lived/')).status).toBe(200);
    expect((await t.ok('DELETE', `/sites/${s.id}`, alice)).body).toEqual({ success: true });
    expect((await get('/sites/short-lived/')).status).toBe(404);
    expect((await t.call('GET', `/sites/${s.id}`, { key: alice })).status).toBe(404);
    const again = (await t.ok('POST', '/sites', bob, { slug: 'short-lived' })).body;
    expect(again.id).not.toBe(s.id);

    const deadline = Date.now() + 5000;
    while (!events.some((e) => e.subject.endsWith('drive.site.deleted') && e.data.id === s.id) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const mine = events.filter((e) => e.data.id === s.id).map((e) => e.subject.replace(/^.*drive\.site\./, ''));
    expect(mine).toEqual(['created', 'deployed', 'deleted']);
    const rolled = events.find((e) => e.subject.endsWith('drive.site.rolled_back') && e.data.id === site.id);
    expect(rolled?.data).toMatchObject({ slug: 'alpha', deploymentId: first.id });
  });
});
