import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { startTestStack, type TestStack } from '../support/stack';
import { withTools } from '../support/tools';

// Git over smart HTTP (docs/git.md), driven by the real `git` client: taste profiles as read-only
// repositories, hosted sites deployed by push. Credentials travel in the URL (Basic, the key as
// the password); GIT_TERMINAL_PROMPT=0 makes a missing or refused credential fail instead of asking.
const { test } = withTools('the Git tests', { name: 'git', install: 'apt-get install -y git' });

let t: TestStack;
let alice: string;
let bob: string;
let agentKey: string;
let aliceId: string;
let work: string;

beforeAll(async () => {
  t = await startTestStack({ S3_ENDPOINT: 'start', SVC_DRIVE_SITE_MAX_FILES: '20' });
  const a = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body;
  alice = a.key;
  aliceId = a.account.id;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
  const agentId = (await t.ok('POST', '/agents', alice, { name: 'gitter' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, alice, { name: 'k' })).body.key;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-git-test-'));
}, 90_000);
afterAll(async () => {
  await t?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs git with no user or system configuration, no prompt, and a fixed identity for commits. */
function git(args: string[], cwd = work): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd,
        env: {
          PATH: process.env.PATH,
          HOME: work,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_TERMINAL_PROMPT: '0',
          GIT_AUTHOR_NAME: 'Tester',
          GIT_AUTHOR_EMAIL: 'tester@example.com',
          GIT_COMMITTER_NAME: 'Tester',
          GIT_COMMITTER_EMAIL: 'tester@example.com',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
async function ok(args: string[], cwd = work): Promise<string> {
  const r = await git(args, cwd);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout.trim();
}

/** A repository URL with the key as the password. */
function remote(kind: 'profiles' | 'sites', name: string, key: string | null, prefix = '/git'): string {
  const u = new URL(t.url);
  return `${u.origin.replace('//', key !== null ? `//anyone:${key}@` : '//')}${prefix}/${kind}/${name}.git`;
}

let dirs = 0;
const fresh = (name: string) => path.join(work, `${name}-${++dirs}`);

/**
 * The body of a push of `dir`'s main onto `head` as git sends it (the command, then the pack), cut
 * to its first half when `half`.
 */
async function pushBody(dir: string, head: string, half: boolean): Promise<Buffer> {
  const pack = execFileSync('git', ['pack-objects', '--stdout', '--revs', '--quiet'], { cwd: dir, input: `main\n^${head}\n` });
  const command = `${head} ${await ok(['rev-parse', 'main'], dir)} refs/heads/main\0report-status side-band-64k\n`;
  const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
  return Buffer.concat([Buffer.from(`${pkt(command)}0000`), half ? pack.subarray(0, Math.floor(pack.length / 2)) : pack]);
}

/** A git-receive-pack POST of `body` announcing `length` bytes, written and left open (the caller ends or destroys it). */
function rawPush(slug: string, key: string, body: Buffer, length: number): http.ClientRequest {
  const u = new URL(t.url);
  const req = http.request({
    host: u.hostname,
    port: u.port,
    method: 'POST',
    path: `/git/sites/${slug}.git/git-receive-pack`,
    headers: {
      authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}`,
      'content-type': 'application/x-git-receive-pack-request',
      'content-length': String(length),
    },
  });
  req.on('error', () => undefined);
  req.write(body);
  return req;
}

async function profileWithHistory(key: string) {
  const id = (await t.ok('POST', '/profiles', key, { name: 'Warm light' })).body.id as string;
  const url = `/profiles/${id}`;
  const commit = async (message: string, constraints: unknown[], latentScores?: Record<string, number>) => {
    await t.ok('PATCH', url, key, {
      profileData: { workingChanges: { constraints, exemplars: [], comparisons: [], ...(latentScores ? { latentScores } : {}) } },
    });
    return (await t.ok('POST', `${url}/commits`, key, { message })).body.id as string;
  };
  const v1 = await commit('first: warm tones', [{ id: 'c1', question: 'Warm tones?', answer: 'yes' }]);
  const v2 = await commit('second: soft light', [{ id: 'c2', question: 'Soft light?', answer: 'yes' }], { warmth: 0.8 });
  await t.ok('POST', `${url}/branches`, key, { name: 'experiments/cool' });
  const branches = (await t.ok('GET', url, key)).body.profileData.branches as Array<{ id: string; name: string }>;
  const cool = branches.find((b) => b.name === 'experiments/cool')!.id;
  await t.ok('PATCH', url, key, {
    profileData: { workingChanges: { constraints: [{ id: 'c3', question: 'Cool?', answer: 'maybe' }], exemplars: [], comparisons: [] } },
  });
  const v3 = (await t.ok('POST', `${url}/commits`, key, { message: 'cool idea', branchId: cool })).body.id as string;
  return { id, url, v1, v2, v3, commit };
}

describe('taste profiles as repositories', () => {
  test('a clone has one branch per profile branch (main is HEAD) and one commit per version, with the snapshot as files', async () => {
    const p = await profileWithHistory(alice);
    const dir = fresh('clone');
    await ok(['clone', '--quiet', remote('profiles', p.id, alice), dir]);
    expect(await ok(['rev-parse', '--abbrev-ref', 'HEAD'], dir)).toBe('main');
    const branches = (await ok(['branch', '-r', '--format=%(refname:short)'], dir)).split('\n').sort();
    expect(branches).toEqual(expect.arrayContaining(['origin/main', 'origin/experiments/cool']));
    // main: two commits, newest first, with the versions' messages and authors (the person who committed).
    const log = (await ok(['log', '--format=%s|%an|%ae|%ct|%b', 'origin/main'], dir)).split('\n').filter(Boolean);
    expect(log.map((l) => l.split('|')[0])).toEqual(['second: soft light', 'first: warm tones']);
    expect(log[0]!.split('|')[1]).toBe(aliceId);
    const profile = (await t.ok('GET', p.url, alice)).body;
    const v2 = profile.profileData.versions.find((v: { id: string }) => v.id === p.v2);
    expect(Number(log[0]!.split('|')[3])).toBe(Math.floor(Date.parse(v2.createdAt) / 1000));
    expect(await ok(['log', '-1', '--format=%B', 'origin/main'], dir)).toContain(`Svc-Version: ${p.v2}`);
    // The branch grew from main's head: three commits, its parent main's head.
    expect(await ok(['rev-list', '--count', 'origin/experiments/cool'], dir)).toBe('3');
    expect(await ok(['rev-parse', 'origin/experiments/cool~1'], dir)).toBe(await ok(['rev-parse', 'origin/main'], dir));
    // The tree: the snapshot, one pretty JSON file per section.
    const files = (await ok(['ls-tree', '--name-only', 'HEAD'], dir)).split('\n');
    expect(files).toEqual(expect.arrayContaining(['comparisons.json', 'constraints.json', 'exemplars.json', 'latentScores.json']));
    const constraints = fs.readFileSync(path.join(dir, 'constraints.json'), 'utf8');
    expect(JSON.parse(constraints)).toEqual(v2.snapshot.constraints);
    expect(constraints).toContain('\n  {\n    "id": "c1"');
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'latentScores.json'), 'utf8'))).toEqual({ warmth: 0.8 });
  });

  test('protocol v0 and v2 clones give the same commits; ids are stable across clones', async () => {
    const p = await profileWithHistory(alice);
    const a = fresh('v2');
    const b = fresh('v0');
    await ok(['-c', 'protocol.version=2', 'clone', '--quiet', '--mirror', remote('profiles', p.id, alice), a]);
    await ok(['-c', 'protocol.version=0', 'clone', '--quiet', '--mirror', remote('profiles', p.id, alice, '/v1/git'), b]);
    const refs = async (d: string) => ok(['for-each-ref', '--format=%(objectname) %(refname)'], d);
    expect(await refs(a)).toBe(await refs(b));
    expect(await refs(a)).toMatch(/ refs\/heads\/main$/m);
  });

  test('a fetch after a new version brings exactly that one commit, and the same ids as before', async () => {
    const p = await profileWithHistory(alice);
    const dir = fresh('fetch');
    await ok(['clone', '--quiet', remote('profiles', p.id, alice), dir]);
    const before = await ok(['rev-parse', 'origin/main'], dir);
    const v4 = await p.commit('third: golden hour', [{ id: 'c4', question: 'Golden hour?', answer: 'yes' }]);
    await ok(['fetch', '--quiet', 'origin'], dir);
    expect(await ok(['rev-list', '--count', `${before}..origin/main`], dir)).toBe('1');
    expect(await ok(['log', '-1', '--format=%s%n%b', 'origin/main'], dir)).toBe(`third: golden hour\nSvc-Version: ${v4}`);
    expect(await ok(['rev-parse', 'origin/main~1'], dir)).toBe(before);
    // Another clone, later: the same commit ids for the same versions.
    const again = fresh('fetch-again');
    await ok(['clone', '--quiet', '--bare', remote('profiles', p.id, alice), again]);
    expect(await ok(['rev-parse', 'main'], again)).toBe(await ok(['rev-parse', 'origin/main'], dir));
  });

  test('the same history makes the same commit ids in a repository built afresh', async () => {
    const p = await profileWithHistory(alice);
    const dir = fresh('stable');
    await ok(['clone', '--quiet', '--bare', remote('profiles', p.id, alice), dir]);
    const first = await ok(['for-each-ref', '--format=%(objectname) %(refname)'], dir);
    // Rebuilt from nothing (as another gateway replica, or this one after a restart, would) over the same service.
    const { ProfileRepos } = await import('../../services/gateway/dist/fronts/git/profiles');
    const { GitCache } = await import('../../services/gateway/dist/fronts/git/cache');
    const cache = new GitCache(work);
    const { PrincipalSigner } = await import('@svc/kit');
    const { Dispatcher, profilesCalls } = await import('@svc/dispatch');
    const principal = { kind: 'human' as const, userId: aliceId, accountId: aliceId, channel: 'api' as const };
    const token = (await new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!).sign(principal)).token;
    const calls = profilesCalls(new Dispatcher({ registry: t.stack.registry }), { requestId: 'req_test', auth: { principal, token } });
    const gitdir = await new ProfileRepos({ cache }).sync(p.id, calls);
    const rebuilt = await ok(['for-each-ref', '--format=%(objectname) %(refname)'], gitdir);
    expect(rebuilt).toBe(first);
    await cache.close();
  });

  test('a merge of branches is a merge commit: its parents are both heads', async () => {
    const p = await profileWithHistory(alice);
    const branches = (await t.ok('GET', p.url, alice)).body.profileData.branches as Array<{ id: string; name: string }>;
    const cool = branches.find((b) => b.name === 'experiments/cool')!.id;
    const merged = (await t.ok('POST', `${p.url}/merge`, alice, { sourceBranchId: cool, message: 'merge cool' })).body;
    expect(merged.merged).toBe(true);
    const dir = fresh('merge');
    await ok(['clone', '--quiet', '--bare', remote('profiles', p.id, alice), dir]);
    const parents = (await ok(['log', '-1', '--format=%P', 'main'], dir)).split(' ');
    expect(parents).toHaveLength(2);
    expect(parents[1]).toBe(await ok(['rev-parse', 'experiments/cool'], dir));
    expect(JSON.parse(await ok(['show', 'main:constraints.json'], dir)).map((c: { id: string }) => c.id)).toEqual(['c1', 'c2', 'c3']);
  });

  test('a push to a profile is refused with a message saying why', async () => {
    const p = await profileWithHistory(alice);
    const dir = fresh('push-profile');
    await ok(['clone', '--quiet', remote('profiles', p.id, alice), dir]);
    fs.writeFileSync(path.join(dir, 'constraints.json'), '[]\n');
    await ok(['commit', '--quiet', '-am', 'try'], dir);
    const r = await git(['push', 'origin', 'main'], dir);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('remote: Taste profile repositories are read-only');
    expect(await ok(['ls-remote', remote('profiles', p.id, alice), 'refs/heads/main'])).toContain(await ok(['rev-parse', 'origin/main'], dir));
  });

  test('no key or a wrong key: 401 with a Basic challenge; another account’s profile: 404; an agent key reads', async () => {
    const p = await profileWithHistory(alice);
    for (const auth of [undefined, `Basic ${Buffer.from(`x:svc_${'0'.repeat(64)}`).toString('base64')}`]) {
      const res = await fetch(`${t.url}/git/profiles/${p.id}.git/info/refs?service=git-upload-pack`, {
        headers: auth ? { authorization: auth } : {},
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="svc"');
    }
    const none = await git(['ls-remote', remote('profiles', p.id, null)]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/could not read Username|Authentication failed/);
    const wrong = await git(['ls-remote', remote('profiles', p.id, `svc_${'1'.repeat(64)}`)]);
    expect(wrong.stderr).toMatch(/Authentication failed/);
    const other = await git(['ls-remote', remote('profiles', p.id, bob)]);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/not found|404/i);
    const res = await fetch(`${t.url}/git/profiles/${p.id}.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${bob}`).toString('base64')}` },
    });
    expect(res.status).toBe(404);
    expect(await ok(['ls-remote', remote('profiles', p.id, agentKey), 'refs/heads/main'])).toMatch(/^[0-9a-f]{40}\trefs\/heads\/main$/);
  });

  test('x-svc-account (http.extraHeader) reads an organization’s profile, as on the API; a non-member is refused the same way', async () => {
    const org = (await t.ok('POST', '/accounts', alice, { kind: 'organization', name: 'Alice Org' })).body.id as string;
    const headers = { 'x-svc-account': org };
    const id = (await t.ok('POST', '/profiles', alice, { name: 'Org light' }, headers)).body.id as string;
    const constraints = [{ id: 'c1', question: 'Shared?', answer: 'yes' }];
    await t.ok('PATCH', `/profiles/${id}`, alice, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } }, headers);
    await t.ok('POST', `/profiles/${id}/commits`, alice, { message: 'first' }, headers);
    const asOrg = ['-c', `http.extraHeader=x-svc-account: ${org}`];
    expect(await ok([...asOrg, 'ls-remote', remote('profiles', id, alice), 'refs/heads/main'])).toMatch(/^[0-9a-f]{40}\trefs\/heads\/main$/);
    // Without the header the key acts in Alice's own account, where the profile is not.
    const own = await git(['ls-remote', remote('profiles', id, alice)]);
    expect(own.code).not.toBe(0);
    expect(own.stderr).toMatch(/not found|404/i);
    // Bob is no member: the Git front answers what the API answers.
    const api = await t.call('GET', `/profiles/${id}`, { key: bob, headers });
    expect(api.status).toBeGreaterThanOrEqual(400);
    const res = await fetch(`${t.url}/git/profiles/${id}.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${bob}`).toString('base64')}`, ...headers },
    });
    expect(res.status).toBe(api.status);
  });
});

describe('hosted sites by push', () => {
  test('a push deploys the pushed tree and names the URL; a clone gives the files back; a refused push changes nothing', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: `git-site-${Date.now() % 100000}` })).body;
    const dir = fresh('site');
    await ok(['init', '--quiet', '-b', 'main', dir]);
    fs.mkdirSync(path.join(dir, 'docs'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<h1>Pushed</h1>\n');
    fs.writeFileSync(path.join(dir, 'docs', 'index.html'), '<p>docs</p>\n');
    await ok(['add', '.'], dir);
    await ok(['commit', '--quiet', '-m', 'first site'], dir);
    const push = await git(['push', remote('sites', site.slug, alice), 'main'], dir);
    expect(push.code).toBe(0);
    expect(push.stderr).toMatch(/remote: Deployed dep_\w+: 2 files/);
    expect(push.stderr).toContain(`remote: Site: ${t.url}/sites/${site.slug}/`);
    const page = await fetch(`${t.url}/sites/${site.slug}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>Pushed</h1>\n');
    const deployed = (await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId as string;
    expect(deployed).toMatch(/^dep_/);

    // A clone (by id this time) gives the pushed commit and its files back.
    const clone = fresh('site-clone');
    await ok(['clone', '--quiet', remote('sites', site.id, alice), clone]);
    expect(await ok(['rev-parse', 'HEAD'], clone)).toBe(await ok(['rev-parse', 'HEAD'], dir));
    expect(fs.readFileSync(path.join(clone, 'docs', 'index.html'), 'utf8')).toBe('<p>docs</p>\n');

    // A second push on top of it deploys again (a fast-forward).
    fs.writeFileSync(path.join(clone, 'index.html'), '<h1>Second</h1>\n');
    await ok(['commit', '--quiet', '-am', 'second'], clone);
    await ok(['push', '--quiet', 'origin', 'main'], clone);
    expect(await (await fetch(`${t.url}/sites/${site.slug}/`)).text()).toBe('<h1>Second</h1>\n');
    const second = (await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId as string;

    // Refused: a symbolic link is not a file of a site. The push fails and the site serves what it served.
    fs.symlinkSync('index.html', path.join(clone, 'link.html'));
    await ok(['add', 'link.html'], clone);
    await ok(['commit', '--quiet', '-m', 'a link'], clone);
    const refused = await git(['push', 'origin', 'main'], clone);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('remote: Deploy refused: link.html is a symbolic link');
    expect(refused.stderr).toContain('[remote rejected]');
    expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(second);
    expect(await (await fetch(`${t.url}/sites/${site.slug}/`)).text()).toBe('<h1>Second</h1>\n');
    // Nor did the repository move: main is still the second push.
    expect(await ok(['ls-remote', remote('sites', site.slug, alice), 'refs/heads/main'])).toContain(await ok(['rev-parse', 'HEAD~1'], clone));

    // Paths the drive refuses (a control character), or git calls unsafe (a backslash), are refused the same way.
    for (const [name, says] of [
      ['bad\u0001name.html', 'invalid_path'],
      ['bad\\name.html', 'not safe'],
    ]) {
      await ok(['reset', '--quiet', '--hard', 'origin/main'], clone);
      fs.writeFileSync(path.join(clone, name!), 'x');
      await ok(['add', '.'], clone);
      await ok(['commit', '--quiet', '-m', 'bad name'], clone);
      const invalid = await git(['push', 'origin', 'main'], clone);
      expect(invalid.code).not.toBe(0);
      expect(invalid.stderr).toContain(says);
      expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(second);
    }
  });

  test('a push over the site limits is refused; a client that goes away mid-push deploys nothing', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: `limits-${Date.now() % 100000}` })).body;
    const dir = fresh('limits');
    await ok(['init', '--quiet', '-b', 'main', dir]);
    fs.writeFileSync(path.join(dir, 'index.html'), 'one');
    await ok(['add', '.'], dir);
    await ok(['commit', '--quiet', '-m', 'one'], dir);
    await ok(['push', '--quiet', remote('sites', site.slug, alice), 'main'], dir);
    const first = (await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId as string;
    // 21 files: over SVC_DRIVE_SITE_MAX_FILES (20 in this stack).
    for (let i = 0; i < 21; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), String(i));
    await ok(['add', '.'], dir);
    await ok(['commit', '--quiet', '-m', 'many'], dir);
    const refused = await git(['push', remote('sites', site.slug, alice), 'main'], dir);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('site_too_large');
    expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(first);

    // A push whose body stops halfway (the client gone): nothing deployed, the repository unchanged.
    const head = (await ok(['ls-remote', remote('sites', site.slug, alice), 'refs/heads/main'])).split('\t')[0]!;
    const body = await pushBody(dir, head, true);
    const cut = rawPush(site.slug, alice, body, body.length * 2);
    await new Promise((r) => setTimeout(r, 300));
    cut.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect((await t.ok('GET', `/sites/${site.id}`, alice)).body.currentDeploymentId).toBe(first);
    expect((await t.ok('GET', `/sites/${site.id}/deployments`, alice)).body.deployments).toHaveLength(1);
    expect(await ok(['ls-remote', remote('sites', site.slug, alice), 'refs/heads/main'])).toContain(head);
    // And the repository still takes a good push.
    await ok(['reset', '--quiet', '--hard', 'HEAD~1'], dir);
    fs.writeFileSync(path.join(dir, 'index.html'), 'two');
    await ok(['commit', '--quiet', '-am', 'two'], dir);
    await ok(['push', '--quiet', '--force', remote('sites', site.slug, alice), 'main'], dir);
    expect(await (await fetch(`${t.url}/sites/${site.slug}/`)).text()).toBe('two');
  });

  test('a push whose client goes away while it waits for the site is dropped, and the site takes the next push', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: `gone-${Date.now() % 100000}` })).body;
    const dir = fresh('gone');
    await ok(['init', '--quiet', '-b', 'main', dir]);
    fs.writeFileSync(path.join(dir, 'index.html'), 'one');
    await ok(['add', '.'], dir);
    await ok(['commit', '--quiet', '-m', 'one'], dir);
    await ok(['push', '--quiet', remote('sites', site.slug, alice), 'main'], dir);
    const head = await ok(['rev-parse', 'main'], dir);
    fs.writeFileSync(path.join(dir, 'index.html'), 'two');
    await ok(['commit', '--quiet', '-am', 'two'], dir);
    // The first push sends half its body and stays: it holds the site while git waits for the rest.
    const half = await pushBody(dir, head, true);
    const holding = rawPush(site.slug, alice, half, half.length * 2);
    await new Promise((r) => setTimeout(r, 1500));
    // The second sends all of its body while it waits for the site, and goes away before its turn.
    const whole = await pushBody(dir, head, false);
    const waiting = rawPush(site.slug, alice, whole, whole.length);
    await new Promise((r) => setTimeout(r, 500));
    waiting.destroy();
    await new Promise((r) => setTimeout(r, 300));
    // The first goes away too: the site passes to the second, whose client is gone (before the fix,
    // its git waited for good for a body nobody could read, keeping the site and a Git slot).
    holding.destroy();
    // Both are let go as soon as the gateway sees them gone; until then (a moment on a loaded
    // machine) they count against the account's two Git requests, and a push is refused 429.
    // Before the fix the second never was: the push was refused until this loop gave up.
    const until = Date.now() + 30_000;
    for (;;) {
      const push = await git(['push', '--quiet', remote('sites', site.slug, alice), 'main'], dir);
      if (push.code === 0) break;
      if (!push.stderr.includes('limit git_builds') || Date.now() > until) throw new Error(`git push failed (${push.code}):\n${push.stderr}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(await (await fetch(`${t.url}/sites/${site.slug}/`)).text()).toBe('two');
    expect((await t.ok('GET', `/sites/${site.id}/deployments`, alice)).body.deployments).toHaveLength(2);
  }, 60_000);

  test('a site deployed through the API clones as one commit of its files, the same id every time; an agent key pushes', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: `api-site-${Date.now() % 100000}` })).body;
    await t.ok('POST', `/sites/${site.id}/deployments`, alice, {
      files: [
        { path: 'index.html', content: '<h1>API</h1>' },
        { path: 'a/b/c.txt', content: 'deep' },
      ],
    });
    const a = fresh('api-site');
    await ok(['clone', '--quiet', remote('sites', site.slug, alice), a]);
    expect(fs.readFileSync(path.join(a, 'index.html'), 'utf8')).toBe('<h1>API</h1>');
    expect(fs.readFileSync(path.join(a, 'a', 'b', 'c.txt'), 'utf8')).toBe('deep');
    expect(await ok(['rev-list', '--count', 'HEAD'], a)).toBe('1');
    const b = fresh('api-site');
    await ok(['clone', '--quiet', remote('sites', site.id, agentKey), b]);
    expect(await ok(['rev-parse', 'HEAD'], b)).toBe(await ok(['rev-parse', 'HEAD'], a));
    // An agent may deploy through the API, so it may push: on top of the clone, a fast-forward.
    fs.writeFileSync(path.join(b, 'index.html'), '<h1>By the agent</h1>');
    await ok(['commit', '--quiet', '-am', 'agent edit'], b);
    await ok(['push', '--quiet', 'origin', 'main'], b);
    expect(await (await fetch(`${t.url}/sites/${site.slug}/`)).text()).toBe('<h1>By the agent</h1>');
    const deployments = (await t.ok('GET', `/sites/${site.id}/deployments`, alice)).body.deployments;
    expect(deployments[0].createdBy.kind).toBe('agent');
  });

  test('another account’s site is 404, to read and to push', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: `private-${Date.now() % 100000}` })).body;
    const r = await git(['ls-remote', remote('sites', site.slug, bob)]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not found|404/i);
    const res = await fetch(`${t.url}/git/sites/${site.slug}.git/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${bob}`).toString('base64')}` },
    });
    expect(res.status).toBe(404);
  });
});

describe('the repository cache', () => {
  test('imports are packed into one pack once they leave too many loose objects or packs; ids do not change', async () => {
    const { compact, importCommits, Repo } = await import('../../services/gateway/dist/fronts/git/objects');
    const gitdir = path.join(work, 'compact.git');
    const repo = await Repo.open(gitdir);
    let parent: string | undefined;
    for (let i = 0; i < 26; i++) {
      const [oid] = await importCommits(gitdir, work, [
        {
          files: new Map([[`f${i}.json`, Buffer.from(`{"i":${i}}\n`)]]),
          parents: parent ? [parent] : [],
          who: { name: 'a', email: 'a@b', timestamp: 1_700_000_000 + i },
          message: `c${i}`,
        },
      ]);
      parent = oid!;
    }
    await repo.setRef('refs/heads/main', parent!);
    const packs = () => fs.readdirSync(path.join(gitdir, 'objects', 'pack')).filter((n) => n.endsWith('.pack')).length;
    const loose = () =>
      fs.readdirSync(path.join(gitdir, 'objects')).filter((d) => /^[0-9a-f]{2}$/.test(d) && fs.readdirSync(path.join(gitdir, 'objects', d)).length)
        .length;
    // Small imports leave loose objects (26 commits, 26 trees, 26 blobs): under the limit, nothing happens.
    expect(loose()).toBeGreaterThan(0);
    expect(await compact(gitdir, work)).toBe(false);
    expect(await compact(gitdir, work, { packs: 24, loose: 50 })).toBe(true);
    expect(packs()).toBe(1);
    expect(loose()).toBe(0);
    expect(await ok(['rev-list', '--count', 'main'], gitdir)).toBe('26');
    expect(await ok(['rev-parse', 'main'], gitdir)).toBe(parent);
    expect(await ok(['show', 'main:f25.json'], gitdir)).toBe('{"i":25}');
  });
});
