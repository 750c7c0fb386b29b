import http from 'node:http';

import { startTestStack, type TestStack } from '../support/stack';

// Managing a site through the gateway (docs/sites.md, "Managing a site"): settings (slug, SPA
// fallback), deleting and comparing deployments, reading deployed files, link checks, redirects
// served by the public front, and another account's site.

let t: TestStack;
let alice: string;
let bob: string;

beforeAll(async () => {
  t = await startTestStack();
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
}, 90_000);
afterAll(() => t?.stop());

function get(path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const port = Number(new URL(t.url).port);
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      })
      .on('error', reject);
  });
}

const call = (method: string, path: string, body?: unknown, key = alice) =>
  t.call(method as 'GET', path, { key, ...(body !== undefined ? { body } : {}) });
const files = (map: Record<string, string>) => Object.entries(map).map(([path, content]) => ({ path, content }));
async function site(slug: string, map: Record<string, string>) {
  const s = (await t.ok('POST', '/sites', alice, { slug })).body;
  const d = (await t.ok('POST', `/sites/${s.id}/deployments`, alice, { files: files(map) })).body;
  return { id: s.id as string, dep: d.id as string };
}

test('update: a new slug moves the public URL; a taken one is 409; spaFallback serves index.html for app routes', async () => {
  const s = await site('mg-one', { 'index.html': '<h1>app</h1>', 'a.css': 'x' });
  await t.ok('POST', '/sites', alice, { slug: 'mg-taken' });
  const moved = await call('PATCH', `/sites/${s.id}`, { slug: 'mg-moved', title: 'Moved' });
  expect(moved.status).toBe(200);
  expect(moved.body).toMatchObject({ slug: 'mg-moved', title: 'Moved', path: '/sites/mg-moved/', spaFallback: false });
  expect((await get('/sites/mg-one/')).status).toBe(404);
  expect((await get('/sites/mg-moved/')).text).toBe('<h1>app</h1>');
  const taken = await call('PATCH', `/sites/${s.id}`, { slug: 'mg-taken' });
  expect(taken.status).toBe(409);
  expect(taken.body.error.code).toBe('slug_taken');
  expect((await call('PATCH', `/sites/${s.id}`, {})).status).toBe(400);
  expect((await call('PATCH', `/sites/${s.id}`, { slug: 'Bad Slug' })).status).toBe(400);

  expect((await get('/sites/mg-moved/app/route')).status).toBe(404);
  expect((await call('PATCH', `/sites/${s.id}`, { spaFallback: true })).body.spaFallback).toBe(true);
  const route = await get('/sites/mg-moved/app/route');
  expect([route.status, route.text]).toEqual([200, '<h1>app</h1>']);
  expect((await get('/sites/mg-moved/missing.png')).status).toBe(404);
  expect((await call('GET', `/sites/${s.id}`)).body.slug).toBe('mg-moved');
});

test('deployments: diff two, read a file of either, delete one not served (the one served is 409)', async () => {
  const s = await site('mg-deps', { 'index.html': 'v1', 'old.txt': 'old', 'same.txt': 'same' });
  const d2 = (await t.ok('POST', `/sites/${s.id}/deployments`, alice, { files: files({ 'index.html': 'v2', 'new.txt': 'new', 'same.txt': 'same' }) }))
    .body.id;
  const diff = await call('GET', `/sites/${s.id}/diff?from=${s.dep}`);
  expect(diff.status).toBe(200);
  expect(diff.body).toMatchObject({ fromId: s.dep, toId: d2, unchanged: 1 });
  expect(diff.body.added.map((f: any) => f.path)).toEqual(['new.txt']);
  expect(diff.body.removed.map((f: any) => f.path)).toEqual(['old.txt']);
  expect(diff.body.changed.map((f: any) => f.path)).toEqual(['index.html']);

  expect((await call('GET', `/sites/${s.id}/files?path=index.html`)).body).toMatchObject({ content: 'v2', encoding: 'utf8', deploymentId: d2 });
  expect((await call('GET', `/sites/${s.id}/files?path=/old.txt&deploymentId=${s.dep}`)).body.content).toBe('old');
  const none = await call('GET', `/sites/${s.id}/files?path=old.txt`);
  expect(none.status).toBe(404);
  expect(none.body.error.code).toBe('file_not_found');
  expect((await call('GET', `/sites/${s.id}/files?path=../etc/passwd`)).status).toBe(400);

  const live = await call('DELETE', `/sites/${s.id}/deployments/${d2}`);
  expect(live.status).toBe(409);
  expect(live.body.error.code).toBe('deployment_live');
  expect((await call('DELETE', `/sites/${s.id}/deployments/${s.dep}`)).status).toBe(200);
  expect((await call('DELETE', `/sites/${s.id}/deployments/${s.dep}`)).status).toBe(200);
  expect((await call('GET', `/sites/${s.id}/deployments`)).body.deployments.map((d: any) => d.id)).toEqual([d2]);
  expect((await call('GET', `/sites/${s.id}/diff?from=${s.dep}`)).status).toBe(404);
});

test('links: broken links of the pages, relative and absolute; external links are not checked', async () => {
  const s = await site('mg-links', {
    'index.html':
      '<a href="about/">About</a> <a href="/missing.html">x</a> <img src="img/logo.png"> <a href="https://example.com/">e</a> <a href="#top">t</a>',
    'about/index.html': '<a href="../index.html">home</a> <a href="team.html?x=1#y">team</a>',
  });
  const r = await call('GET', `/sites/${s.id}/links`);
  expect(r.body).toMatchObject({ deploymentId: s.dep, pagesChecked: 2, linksChecked: 5 });
  expect(r.body.broken).toEqual([
    { page: 'about/index.html', link: 'team.html?x=1#y', target: 'about/team.html' },
    { page: 'index.html', link: '/missing.html', target: 'missing.html' },
    { page: 'index.html', link: 'img/logo.png', target: 'img/logo.png' },
  ]);
});

test('redirects: add, replace, list, delete; the public front answers 301 to the target', async () => {
  const s = await site('mg-redir', { 'index.html': 'home', 'new.html': 'new' });
  const added = await call('POST', `/sites/${s.id}/redirects`, { from: '/old.html', to: '/new.html' });
  expect(added.body.redirects).toEqual([{ from: '/old.html', to: '/new.html', createdAt: expect.any(String) }]);
  const r = await get('/sites/mg-redir/old.html?q=1');
  expect([r.status, r.headers.location]).toEqual([301, '/sites/mg-redir/new.html?q=1']);
  const bad = await call('POST', `/sites/${s.id}/redirects`, { from: '/a', to: '/a' });
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('invalid_redirect');
  expect((await call('POST', `/sites/${s.id}/redirects`, { from: 'no-slash', to: '/a' })).status).toBe(400);
  const replaced = await call('PUT', `/sites/${s.id}/redirects`, { redirects: [{ from: '/blog', to: '/new.html' }] });
  expect(replaced.body.redirects.map((x: any) => x.from)).toEqual(['/blog']);
  expect((await get('/sites/mg-redir/old.html')).status).toBe(404);
  expect((await get('/sites/mg-redir/blog')).status).toBe(301);
  expect((await call('GET', `/sites/${s.id}/redirects`)).body.redirects).toHaveLength(1);
  expect((await call('DELETE', `/sites/${s.id}/redirects?from=/blog`)).body.redirects).toEqual([]);
  expect((await call('DELETE', `/sites/${s.id}/redirects?from=/blog`)).status).toBe(200);
});

test("another account's site is 404 to every management call", async () => {
  const s = await site('mg-private', { 'index.html': 'mine' });
  for (const [m, p, b] of [
    ['PATCH', `/sites/${s.id}`, { title: 'stolen' }],
    ['DELETE', `/sites/${s.id}/deployments/${s.dep}`],
    ['GET', `/sites/${s.id}/diff?from=${s.dep}`],
    ['GET', `/sites/${s.id}/files?path=index.html`],
    ['GET', `/sites/${s.id}/links`],
    ['GET', `/sites/${s.id}/redirects`],
    ['POST', `/sites/${s.id}/redirects`, { from: '/a', to: '/b' }],
    ['PUT', `/sites/${s.id}/redirects`, { redirects: [] }],
    ['DELETE', `/sites/${s.id}/redirects?from=/a`],
  ] as const) {
    const r = await call(m, p, b, bob);
    expect([p, r.status]).toEqual([p, 404]);
  }
  expect((await get('/sites/mg-private/')).text).toBe('mine');
});
