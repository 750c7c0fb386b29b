import fs from 'node:fs';
import os from 'node:os';

import { startTestStack, type TestStack } from '../support/stack';

// Callers' patterns (docs/drive.md, "Patterns"): grep's regular expressions run by RE2 on a worker
// thread under a deadline, globs as SQL LIKE; a hostile pattern from one account answers promptly
// and never holds up another account's requests.
let t: TestStack;
let ada: string;
let bob: string;
const TIMEOUT_MS = 3000;

beforeAll(async () => {
  // Several greps of one account at once: above the per-account cap on scans (docs/reliability.md, "Fair shares"), which is not what this suite tests.
  t = await startTestStack({ SVC_DRIVE_GREP_TIMEOUT_MS: String(TIMEOUT_MS), SVC_DRIVE_SCANS_PER_ACCOUNT: '8' });
  const person = async (name: string) => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key as string;
  [ada, bob] = await Promise.all([person('Ada'), person('Bob')]);
}, 60_000);
afterAll(() => t?.stop());

const write = async (key: string, path: string, content: string) => (await t.ok('PUT', '/drive/text', key, { path, content })).body;
const folderOf = async (key: string, path: string) => (await t.ok('GET', `/drive/stat?path=${path}`, key)).body.item.id as string;
const grep = (key: string, q: Record<string, string>) => t.call('GET', `/drive/grep?${new URLSearchParams(q)}`, { key });
/** Bob's identity and his drive's listing, asked while Ada's search runs. */
const bobMeanwhile = () => Promise.all([t.call('GET', '/me', { key: bob }), t.call('GET', '/drive', { key: bob })]);

/** The nice value of each thread of this process named `name` (the stack runs in it), from /proc (Linux). */
const threadNices = (name: string) =>
  fs
    .readdirSync('/proc/self/task')
    .filter((tid) => fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === name)
    .map((tid) => Number(fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]));

test('grep’s worker threads run nicer than the service’s own thread (SVC_HEAVY_WORK_NICE, default 10)', async () => {
  if (process.platform !== 'linux') return;
  await write(ada, 'nice/a.txt', 'aaa\n');
  const own = os.getPriority();
  const r = await grep(ada, { pattern: 'a+', regex: 'true', folderId: await folderOf(ada, 'nice') });
  expect([r.status, r.body.filesSearched]).toEqual([200, 1]);
  // The search's worker is kept warm after it, named svc-grep; every grep worker of this process
  // runs at the nicer value, and the service's own thread does not.
  const nices = threadNices('svc-grep');
  expect(nices.length).toBeGreaterThan(0);
  expect(nices).toEqual(nices.map(() => Math.max(10, own)));
  expect(Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[16])).toBe(own);
});

describe('grep with a catastrophic pattern', () => {
  test('^(a+)+$ over "aaa…!" (30 characters, 10 KB): 200, no match, while another account is served', async () => {
    await write(ada, 'evil/short.txt', `${'a'.repeat(30)}!\n`);
    await write(ada, 'evil/long.txt', `${'a'.repeat(10_240)}!\n`);
    await write(ada, 'evil/match.txt', 'b\naaaa\n');
    await write(bob, 'mine.txt', 'bob’s\n');
    const folderId = await folderOf(ada, 'evil');
    const [short, long, both, [me, list]] = await Promise.all([
      grep(ada, { pattern: '^(a+)+$', regex: 'true', folderId, nameGlob: 'short.txt' }),
      grep(ada, { pattern: '^(a+)+$', regex: 'true', folderId, nameGlob: 'long.txt' }),
      grep(ada, { pattern: '^(a+)+$', regex: 'true', folderId }),
      bobMeanwhile(),
    ]);
    expect(short.status).toBe(200);
    expect(short.body).toEqual({ matches: [], filesSearched: 1, filesSkipped: 0, truncated: false });
    expect(long.body).toEqual({ matches: [], filesSearched: 1, filesSkipped: 0, truncated: false });
    expect(both.body.matches.map((m: any) => [m.path, m.line, m.column])).toEqual([['evil/match.txt', 2, 1]]);
    expect(me.status).toBe(200);
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: any) => i.name)).toEqual(['mine.txt']);
  });

  test('a pattern too costly even in linear time stops at the deadline: 422 grep_timeout; the other account is answered first', async () => {
    // About 2,000 RE2 instructions per character over 2 MB of text in one line: minutes of matching.
    // Pseudo-random (a periodic text would let RE2's DFA cache every state it needs).
    let text = '';
    for (let x = 1; text.length < 2_000_000;) {
      x = (x * 48271) % 2147483647;
      text += 'abcdefgh '[x % 9];
    }
    await write(ada, 'slow/big.txt', text);
    const folderId = await folderOf(ada, 'slow');
    let adaDone = false;
    const slow = grep(ada, { pattern: '(.{1,50}a){12}[hz]{7}', regex: 'true', folderId }).then((r) => {
      adaDone = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 200));
    const [me, list] = await bobMeanwhile();
    const bobFirst = !adaDone;
    const r = await slow;
    expect([me.status, list.status]).toEqual([200, 200]);
    expect(bobFirst).toBe(true);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'grep_timeout', message: expect.stringContaining(`${TIMEOUT_MS} ms`) });
    // The service goes on: the next search works.
    const next = await grep(ada, { pattern: 'h{7}', regex: 'true', folderId });
    expect(next.status).toBe(200);
  });

  test('what the linear-time engine cannot run is a 400 naming the pattern', async () => {
    const cases: Array<[string, RegExp]> = [
      ['(a)\\1', /^pattern: backreferences \(\\1\) are not supported \(linear-time engine\)$/],
      ['(?<n>a)\\k<n>', /^pattern: backreferences/],
      ['a(?=b)', /^pattern: lookahead/],
      ['(?<!a)b', /^pattern: lookbehind/],
      ['a{1001}', /^pattern: invalid repeat count/],
      ['\\w{1000}\\w{1000}\\w{1000}', /^pattern: too large for the linear-time engine/],
      ['(', /^pattern: /],
    ];
    for (const [pattern, message] of cases) {
      const r = await grep(ada, { pattern, regex: 'true' });
      expect([pattern, r.status, r.body.error.code]).toEqual([pattern, 400, 'invalid_pattern']);
      expect(r.body.error.message).toMatch(message);
    }
    const long = await grep(ada, { pattern: 'x'.repeat(1001), regex: 'true' });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/pattern/);
    // The same characters as a literal are fine.
    expect((await grep(ada, { pattern: '(a)\\1' })).status).toBe(200);
  });
});

describe('globs', () => {
  test('hostile globs in find and grep answer (SQL LIKE does not backtrack exponentially), while another account is served', async () => {
    const name = `${'a'.repeat(200)}.txt`;
    await write(ada, `globs/${name}`, 'aaa\n');
    const hostile = `${'*a'.repeat(40)}*b`;
    const [found, grepped, [me, list]] = await Promise.all([
      t.call('GET', `/drive/find?name=${encodeURIComponent(hostile)}`, { key: ada }),
      grep(ada, { pattern: 'a', nameGlob: hostile }),
      bobMeanwhile(),
    ]);
    expect(found.status).toBe(200);
    expect(found.body.items).toEqual([]);
    expect(grepped.body.matches).toEqual([]);
    expect([me.status, list.status]).toEqual([200, 200]);
    const match = `${'*a'.repeat(40)}*.txt`;
    const hit = await t.call('GET', `/drive/find?name=${encodeURIComponent(match)}`, { key: ada });
    expect(hit.body.items.map((i: any) => i.path)).toEqual([`globs/${name}`]);
  });
});

describe('other work whose size the caller chooses', () => {
  test('edit with a 1 MiB `find` in 4 MiB of text answers (V8’s own search is quadratic there), while another account is served', async () => {
    const file = await write(ada, 'big/a.txt', 'a'.repeat(4 * 1024 * 1024));
    const find = `${'a'.repeat(512 * 1024)}b${'a'.repeat(512 * 1024 - 1)}`;
    const [edit, [me, list]] = await Promise.all([
      t.call('POST', `/drive/${file.id}/edit`, { key: ada, body: { find, replace: '' } }),
      bobMeanwhile(),
    ]);
    expect(edit.status).toBe(422);
    expect(edit.body.error.code).toBe('text_not_found');
    expect([me.status, list.status]).toEqual([200, 200]);
    const found = await t.call('POST', `/drive/${file.id}/edit`, { key: ada, body: { find: 'a'.repeat(300_000), replace: 'b', replaceAll: true } });
    expect(found.status).toBe(200);
    expect(found.body.replacements).toBe(13);
  });

  test('a JSON file nested deeper than 512 levels is a 422 naming the limit (5,000 levels was a 500), one at 512 is read', async () => {
    const deep = await write(ada, 'json/deep.json', `${'['.repeat(5000)}${']'.repeat(5000)}`);
    const over = await write(ada, 'json/over.json', `${'['.repeat(513)}${']'.repeat(513)}`);
    for (const [method, path, body] of [
      ['GET', `/drive/${deep.id}/json`, undefined],
      ['PATCH', `/drive/${deep.id}/json`, { patch: { a: 1 } }],
      ['GET', `/drive/${over.id}/json`, undefined],
    ] as const) {
      const r = await t.call(method, path, { key: ada, body });
      expect([method, r.status, r.body.error.code]).toEqual([method, 422, 'json_too_deep']);
      expect(r.body.error.message).toMatch(/512 levels/);
    }
    const ok = await write(ada, 'json/ok.json', `${'['.repeat(512)}${']'.repeat(512)}`);
    const read = await t.call('GET', `/drive/${ok.id}/json?pointer=/0/0`, { key: ada });
    expect(read.status).toBe(200);
  });
});
