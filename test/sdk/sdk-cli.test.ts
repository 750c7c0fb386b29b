import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startTestStack, type TestStack } from '../support/stack';

/** The `svc` command (docs/sdk.md) against the running platform: a drive round trip, a thread, keys, exit codes. */

const CLI = path.resolve(__dirname, '../../packages/sdk-ts/dist/cli.js');
/** The command's Node: the first of SVC_TEST_NODE_BINARIES (CI puts Node 22, the SDK's target, first), else this one. */
const NODE = (process.env.SVC_TEST_NODE_BINARIES ?? '').split(':').find(Boolean) ?? process.execPath;
let t: TestStack;
let key: string;
let dir: string;
beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_ALPACA_URL: 'off' });
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'cli person' });
  key = res.body.key;
  const agent = await t.ok('POST', '/agents', key, { name: 'cli helper' });
  await t.ok('PUT', '/default-agents', key, { agentIds: [agent.body.id] });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'));
}, 60_000);
afterAll(async () => {
  fs.rmSync(dir, { recursive: true, force: true });
  await t?.stop();
});

function svc(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      NODE,
      [CLI, ...args],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', SVC_API_KEY: key, SVC_BASE_URL: t.url, ...env }, timeout: 30_000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the svc command', () => {
  test('drive: put (with progress) / ls / get / mv / rm, and the exit code of a missing file', async () => {
    const local = path.join(dir, 'big.bin');
    const data = crypto.randomBytes(3 * 1024 * 1024 + 17);
    fs.writeFileSync(local, data);
    const put = await svc(['drive', 'put', local, '--json']);
    expect(put.code).toBe(0);
    const item = JSON.parse(put.stdout);
    expect(item).toMatchObject({ name: 'big.bin', size: data.length, sha256: crypto.createHash('sha256').update(data).digest('hex') });
    expect(put.stderr).toMatch(/put big\.bin: 3\.0 MiB \/ 3\.0 MiB \(100%\)/);
    // The name is taken: If-None-Match: * makes it a 412, exit code 5 (test/drive/refused-upload.test.ts has large refused uploads).
    fs.writeFileSync(path.join(dir, 'small.bin'), 'x');
    const again = await svc(['drive', 'put', path.join(dir, 'small.bin'), '--name', 'big.bin']);
    expect([again.code, again.stderr]).toEqual([5, expect.stringMatching(/^svc: .*\(request /m)]);

    const ls = await svc(['drive', 'ls']);
    expect(ls.code).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^ID\s+KIND\s+SIZE\s+UPDATEDAT\s+NAME$/);
    expect(ls.stdout).toMatch(new RegExp(`${item.id}\\s+file\\s+3\\.0 MiB\\s+\\S+\\s+big\\.bin`));

    const got = await svc(['drive', 'get', item.id, 'copy.bin']);
    expect(got.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'copy.bin')).equals(data)).toBe(true);
    expect(got.stderr).toContain('Wrote copy.bin');
    expect((await svc(['drive', 'get', item.id, 'copy.bin'])).code).toBe(2);

    const mv = await svc(['drive', 'mv', item.id, 'renamed.bin', '--json']);
    expect([mv.code, JSON.parse(mv.stdout).name]).toEqual([0, 'renamed.bin']);
    expect((await svc(['drive', 'rm', item.id])).code).toBe(0);
    const gone = await svc(['drive', 'get', item.id, 'x.bin']);
    expect([gone.code, gone.stderr]).toEqual([4, expect.stringContaining('svc: ')]);
  }, 60_000);

  test('threads: new --wait prints the development model’s answer; say --wait continues; tail replays', async () => {
    const created = await svc(['threads', 'new', 'hello', 'from', 'the', 'command', '--wait']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^user: hello from the command$/m);
    expect(created.stdout).toMatch(/^assistant: .*hello from the command/m);
    expect(created.stdout).toMatch(/^\[\d+\] run\.completed$/m);
    const id = created.stderr.match(/Thread (thr_\w+)/)![1]!;
    const said = await svc(['threads', 'say', id, 'once', 'more', '--wait']);
    expect(said.code).toBe(0);
    expect(said.stdout).toMatch(/^assistant: .*once more/m);
    expect(said.stdout).not.toContain('hello from the command');
    const tail = await svc(['threads', 'tail', id, '--until-idle', '--json']);
    expect(tail.code).toBe(0);
    const events = tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ seq: 1, type: 'thread.created' });
    expect(events[events.length - 1].type).toBe('run.completed');
    // Editing the first message: a new thread from just before it and a run on the new text.
    const first = (await t.ok('GET', `/threads/${id}/messages?role=user&limit=1`, key)).body.messages[0];
    const edited = await svc(['threads', 'edit', id, first.id, 'hello', 'again', '--wait']);
    expect(edited.code).toBe(0);
    expect(edited.stdout).toMatch(/^assistant: .*hello again/m);
    expect(edited.stdout).not.toContain('hello from the command');
    expect((await svc(['threads', 'edit', id, first.id])).code).toBe(2);
    const bad = await svc(['threads', 'say', id, 'x', '--mode', 'undo']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--mode must be boundary, interrupt, enqueue, reject or rollback')]);
    // On an idle thread every mode starts a run: nothing to roll back.
    const rolled = await svc(['threads', 'say', id, 'fresh', 'start', '--mode', 'rollback', '--json']);
    expect([rolled.code, JSON.parse(rolled.stdout)]).toEqual([0, expect.objectContaining({ status: 'started', rolledBackRunId: null })]);
  }, 60_000);

  test('threads approve / reject / fork: a paused run approved with edited arguments, another rejected, a fork', async () => {
    const agent = (await t.ok('POST', '/agents', key, { name: 'cli careful' })).body;
    await t.ok('PUT', `/agents/${agent.id}/approval-policy`, key, { tools: ['write_drive_file'] });
    const pausedThread = async (name: string) => {
      const th = (await t.ok('POST', '/threads', key, { agentId: agent.id, message: `/tool write_drive_file {"name":"${name}","content":"model"}` }))
        .body;
      for (let i = 0; i < 300; i++) {
        if ((await t.ok('GET', `/threads/${th.id}/approvals?status=pending`, key)).body.approvals.length) return th.id as string;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('no approval request');
    };
    const a = await pausedThread('cli-approved.txt');
    const listed = await svc(['threads', 'approvals', a]);
    expect(listed.stdout).toMatch(/write_drive_file/);
    const ok = await svc(['threads', 'approve', a, '--args', '{"name":"cli-approved.txt","content":"person"}']);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringMatching(/^Approved apr_\w+ \(write_drive_file, edited arguments\)$/m)]);
    const tail = await svc(['threads', 'tail', a, '--until-idle']);
    expect(tail.stdout).toMatch(/^\[\d+\] approval\.approved$/m);
    expect(tail.stdout).toMatch(/^\[\d+\] run\.completed$/m);
    const b = await pausedThread('cli-rejected.txt');
    const no = await svc(['threads', 'reject', b, '--reason', 'not today', '--json']);
    expect([no.code, JSON.parse(no.stdout)]).toEqual([0, expect.objectContaining({ status: 'rejected', reason: 'not today' })]);
    // Nothing left to decide: a usage error.
    expect((await svc(['threads', 'approve', b])).code).toBe(2);
    const forked = await svc(['threads', 'fork', a, '--at', '2', '--json']);
    expect([forked.code, JSON.parse(forked.stdout).forkedFrom]).toEqual([0, { threadId: a, seq: 2 }]);
    expect((await svc(['threads', 'fork', a, '--at', 'x'])).code).toBe(2);
  }, 60_000);

  test('keys, models, trading, profiles; --json; exit codes for usage and a missing key', async () => {
    const created = await svc(['keys', 'create', '--name', 'cli key', '--json']);
    const k = JSON.parse(created.stdout);
    expect(k.key).toMatch(/^svc_[0-9a-f]{64}$/);
    expect((await svc(['keys', 'list'])).stdout).toContain(k.id);
    expect((await svc(['keys', 'revoke', k.id])).code).toBe(0);
    expect((await svc(['models', 'ls'])).stdout).toMatch(/^svc\/dev\s/m);
    expect((await svc(['trading', 'venues'])).stdout).toMatch(/^paper\s/m);
    const book = (await t.ok('GET', '/trading/book?symbol=BTC%2FUSD&depth=5', key)).body;
    const price = book.bids[book.bids.length - 1].price;
    const order = await svc(['trading', 'order', '--symbol', 'BTC/USD', '--side', 'buy', '--qty', '0.01', '--price', price, '--json']);
    const placed = JSON.parse(order.stdout);
    expect([order.code, placed.type, placed.status]).toEqual([0, 'limit', expect.stringMatching(/^(new|open)$/)]);
    const cancelled = await svc(['trading', 'cancel', placed.id]);
    expect(cancelled.stdout).toMatch(new RegExp(`^${placed.id}\\s+cancelled\\s+BTC/USD$`, 'm'));
    expect((await svc(['trading', 'order', '--symbol', 'BTC/USD', '--qty', '1'])).code).toBe(2);
    // A notional order, and the account's order updates (the last one its fill).
    const bought = await svc(['trading', 'order', '--symbol', 'ETH/USD', '--side', 'buy', '--notional', '20', '--json']);
    const n = JSON.parse(bought.stdout);
    expect([bought.code, n.notional, n.status]).toEqual([0, '20', 'filled']);
    const updates = await svc(['trading', 'events']);
    expect(updates.stdout.trim().split('\n').at(-1)).toMatch(new RegExp(`^\\[\\d+\\] filled buy ${n.filledQty}/${n.qty} ETH/USD filled$`));
    expect((await svc(['trading', 'events', '--after', 'x'])).code).toBe(2);
    const profile = await t.ok('POST', '/profiles', key, { name: 'taste' });
    const c1 = await t.ok('POST', `/profiles/${profile.body.id}/commits`, key, { message: 'first' });
    const c2 = await t.ok('POST', `/profiles/${profile.body.id}/commits`, key, { message: 'second' });
    const log = await svc(['profiles', 'log', profile.body.id]);
    expect(log.stdout).toMatch(new RegExp(`^${c2.body.id}\\s+${c1.body.id}\\s+\\S+\\s+second$`, 'm'));
    const diff = await svc(['profiles', 'diff', profile.body.id, c1.body.id, c2.body.id]);
    expect([diff.code, diff.stdout.split('\n')[0]]).toEqual([0, `${c1.body.id} -> ${c2.body.id}`]);

    expect((await svc(['nope'])).code).toBe(2);
    expect((await svc(['drive', 'ls', '--bogus'])).code).toBe(2);
    const keyless = await svc(['drive', 'ls'], { SVC_API_KEY: '' });
    expect([keyless.code, keyless.stderr]).toEqual([3, expect.stringContaining('SVC_API_KEY')]);
    const denied = await svc(['drive', 'ls'], { SVC_API_KEY: 'svc_' + '0'.repeat(64) });
    expect(denied.code).toBe(6);
  }, 60_000);

  test('--version; a group’s --help shows that group', async () => {
    expect(await svc(['--version'])).toEqual({ code: 0, stdout: '@svc/sdk 0.1.0\n', stderr: '' });
    const help = await svc(['threads', '--help']);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: svc threads <command>/)]);
    expect(help.stdout).toContain('tail <id> [--after N] [--until-idle]');
    expect(help.stdout).not.toMatch(/^\s+drive\s/m);
    expect((await svc(['--help'])).stdout).toMatch(/^\s+drive\s/m);
    expect((await svc(['nope', '--help'])).code).toBe(2);
  });

  test('a host credential file others may read is refused, as svc-host refuses it', async () => {
    const file = path.join(dir, 'host-credential');
    fs.writeFileSync(file, `svch_${'ab'.repeat(32)}\n`, { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const loose = await svc(['models', 'ls'], { SVC_API_KEY: '', SVC_HOST_CREDENTIAL_FILE: file });
    expect([loose.code, loose.stderr]).toEqual([
      3,
      `svc: The credential file ${file} is open to other users (mode 644); it must be readable by you only: chmod 600 ${file}\n`,
    ]);
  });

  test('a reader that closes the pipe early (`svc threads tail … | head -1`) ends the command quietly', async () => {
    const created = await svc(['threads', 'new', 'a', 'short', 'thread', '--wait']);
    const id = created.stderr.match(/Thread (thr_\w+)/)![1]!;
    const child = spawn(NODE, [CLI, 'threads', 'tail', id, '--until-idle'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', SVC_API_KEY: key, SVC_BASE_URL: t.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reading end is closed before the command writes a line: its first write meets EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect([code, stderr]).toEqual([0, '']);
  }, 30_000);
});
