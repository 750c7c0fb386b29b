/**
 * The host's workbench (docs/host.md): panes the tools open, a view on its own loopback listener
 * with a per-launch token that shows and never acts, and platform threads read and spoken to.
 */
import { createLog, type RunningHost, startHost } from '@svc/host';

import { tempDir } from '../support/backends';
import { control, rawRequest } from '../support/host';
import { sampleProject } from '../support/project';
import { startTestStack, type TestStack } from '../support/stack';

let t: TestStack;
let ada: { id: string; key: string };
let credential: string;
let host: RunningHost;

beforeAll(async () => {
  t = await startTestStack();
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'workbench person' });
  ada = { id: res.body.account.id, key: res.body.key };
  const paired = await t.ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'workbench machine' });
  credential = paired.body.credential;
  const hostId = paired.body.host.id;
  await t.ok('POST', `/accounts/${ada.id}/standing-grants`, ada.key, {
    granteeId: hostId,
    verbs: ['workbench.view', 'threads.read', 'threads.say'],
    scope: `host:${hostId}`,
  });
  host = await startHost({
    credential,
    baseUrl: t.url,
    port: 0,
    dataDir: tempDir(),
    units: new Map(),
    log: createLog({ silent: true }),
    connect: false,
    project: sampleProject(),
  });
  await host.grants.refresh();
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await t?.stop();
});

const ok = async (tool: string, args: object = {}) => {
  const r = await control(host.endpoint.port, credential, tool, args);
  if (r.status !== 200) throw new Error(`${tool}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
};

test('tools open panes; the view shows them behind its token, answers GET only, and opens nothing on the control endpoint', async () => {
  const file = await ok('open_file', { path: 'docs/setup.md' });
  expect(file.pane).toMatchObject({ kind: 'file', title: 'docs/setup.md', target: 'docs/setup.md' });
  const world = await ok('show_world', { world: 'bench' });
  expect(world.pane).toMatchObject({ kind: 'world', title: 'Bench', target: 'bench' });
  expect((await control(host.endpoint.port, credential, 'open_file', { path: '../etc/passwd' })).body.error.code).toBe('path_outside_project');
  expect((await control(host.endpoint.port, credential, 'show_world', { world: 'nope' })).status).toBe(404);

  const listed = await ok('list_panes');
  expect(listed.panes.map((p: any) => p.kind)).toEqual(['file', 'world']);
  const url = new URL(listed.url);
  expect(url.hostname).toBe('127.0.0.1');
  expect(Number(url.port)).not.toBe(host.endpoint.port);
  const token = url.searchParams.get('t')!;
  expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
  // Through the platform the URL (and its token) is never given.
  const remote = (await host.control.call('list_panes', {}, { via: 'platform', callId: 'c1' })) as any;
  expect(remote.url).toBeUndefined();
  expect(remote.panes).toHaveLength(2);

  const port = Number(url.port);
  const view = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
    rawRequest(port, { method, path, headers: { host: `127.0.0.1:${port}`, ...headers } });
  const page = await view(`/?t=${token}`);
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toMatch(/text\/html/);
  expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
  expect(page.headers['referrer-policy']).toBe('no-referrer');
  expect(page.headers['x-frame-options']).toBe('DENY');
  expect((await view(`/app.js?t=${token}`)).body).toMatch(/textContent/);
  const panes = (await view(`/panes?t=${token}`)).body.panes;
  expect(panes.map((p: any) => p.target)).toEqual(['docs/setup.md', 'bench']);
  expect((await view(`/panes/${panes[0].id}?t=${token}`)).body.content).toMatch(/^# Setup/);
  expect((await view(`/panes/${panes[1].id}?t=${token}`)).body.content.world.name).toBe('Bench');
  // The page's own origin may fetch; same-origin fetches from a page work on localhost too.
  expect((await view(`/panes?t=${token}`, { origin: `http://127.0.0.1:${port}` })).status).toBe(200);

  // Refusals: no or wrong token (the host credential is not it), another origin or Host, anything but GET.
  const refusals: Array<[string, Record<string, string>, string, number, string]> = [
    ['/panes', {}, 'GET', 401, 'unauthenticated'],
    [`/panes?t=${token.slice(1)}x`, {}, 'GET', 401, 'unauthenticated'],
    [`/panes?t=${credential}`, {}, 'GET', 401, 'unauthenticated'],
    [`/panes?t=${token}`, { origin: 'https://evil.example' }, 'GET', 403, 'origin_refused'],
    [`/panes?t=${token}`, { origin: 'null' }, 'GET', 403, 'origin_refused'],
    [`/panes?t=${token}`, { host: `evil.example:${port}` }, 'GET', 403, 'host_refused'],
    [`/panes?t=${token}`, {}, 'POST', 405, 'method_not_allowed'],
    [`/panes?t=${token}`, {}, 'PUT', 405, 'method_not_allowed'],
    [`/control/open_file?t=${token}`, {}, 'POST', 405, 'method_not_allowed'],
  ];
  for (const [path, headers, method, status, code] of refusals) {
    const r = await view(path, headers, method);
    expect([path, method, r.status, r.body?.error?.code]).toEqual([path, method, status, code]);
  }
  expect((await view(`/control/open_file?t=${token}`)).status).toBe(404);
  // The view's token opens nothing on the control endpoint, and the endpoint's rules are unchanged.
  const withToken = await rawRequest(host.endpoint.port, {
    path: '/control/list_panes',
    headers: { host: `127.0.0.1:${host.endpoint.port}`, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(withToken.status).toBe(401);
  const fromPage = await rawRequest(host.endpoint.port, {
    path: '/control/list_panes',
    headers: {
      host: `127.0.0.1:${host.endpoint.port}`,
      origin: `http://127.0.0.1:${port}`,
      authorization: `Bearer ${credential}`,
      'content-type': 'application/json',
    },
    body: '{}',
  });
  expect([fromPage.status, fromPage.body.error.code]).toEqual([403, 'origin_refused']);
});

test('threads: refused with the host credential; with a key the owner gave the host, read and spoken to (journaled)', async () => {
  const agentId = (await t.ok('POST', '/agents', ada.key, { name: 'bench agent' })).body.id;
  const thread = (await t.ok('POST', '/threads', ada.key, { agentId, title: 'bench notes' })).body;
  const refused = await control(host.endpoint.port, credential, 'thread_read', { thread: thread.id });
  expect([refused.status, refused.body.error.code]).toEqual([403, 'principal_not_allowed']);

  const owner = await startHost({
    credential,
    baseUrl: t.url,
    port: 0,
    dataDir: tempDir(),
    units: new Map(),
    log: createLog({ silent: true }),
    connect: false,
    platformKey: ada.key,
  });
  try {
    await owner.grants.refresh();
    const local = { via: 'local' as const };
    const said = (await owner.control.call('thread_say', { thread: thread.id, text: 'stage calibrated', clientMessageId: 'm1' }, local)) as any;
    expect(said).toMatchObject({ messageId: expect.any(String), status: expect.stringMatching(/started|pending|queued/) });
    const read = (await owner.control.call('thread_read', { thread: thread.id }, local)) as any;
    expect(JSON.stringify(read.events)).toContain('stage calibrated');
    expect(read.pane).toMatch(/^pane_/);
    expect(((await owner.control.call('list_panes', {}, local)) as any).panes).toEqual([
      expect.objectContaining({ kind: 'thread', target: thread.id }),
    ]);
    const journal = ((await owner.journal.read({})) as any).entries;
    expect(journal.filter((e: any) => e.tool === 'thread_say').map((e: any) => [e.kind, e.target])).toEqual([
      ['action', `thread:${thread.id}`],
      ['result', `thread:${thread.id}`],
    ]);
    await expect(owner.control.call('thread_read', { thread: 'thr_nope' }, local)).rejects.toMatchObject({ code: expect.any(String) });
  } finally {
    await owner.stop();
  }
});
