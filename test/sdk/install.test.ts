import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { tempDir } from '../support/backends';
import { exitCode, ROOT, waitFor } from '../support/process';
import { sampleProject } from '../support/project';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Each client installed the way its users install it (README, "Clients"): `npm pack` of the
 * TypeScript SDK (the `svc` command) and of the host (`svc-host`, with the workspace packages it
 * needs bundled) by scripts/pack-clients.mjs, each tarball `npm install`ed into an empty folder,
 * then run from there, on the Node that CI names first in SVC_TEST_NODE_BINARIES (Node 22), else
 * this one. npm takes the dependencies from its cache (--prefer-offline) and the registry only for
 * what the cache lacks. The Python SDK's install is test/sdk/sdk-python.test.ts.
 *
 * Then the installed clients on every Node of SVC_TEST_NODE_BINARIES (CI: Node 22 and this one),
 * against a stack: a user's program on the SDK, the `svc` command, and `svc-host` connected to the
 * platform with its relay. That is the clients' runtime on each Node (fetch, web streams, server-sent
 * events, EPIPE, WebSocket, child processes); the full suites (sdk.test.ts, sdk-cli.test.ts on the
 * first Node, test/host) cover the behaviour once.
 */

const NODES = (() => {
  const listed = (process.env.SVC_TEST_NODE_BINARIES ?? '').split(':').filter(Boolean);
  return listed.length ? listed : [process.execPath];
})();
const NODE = NODES[0]!;
/** A user's shell: `node` first on PATH, none of the npm_* variables `npm run` gives the tests (they name this workspace). */
const shell = (node: string): Record<string, string> => ({
  PATH: `${path.dirname(node)}:${process.env.PATH ?? ''}`,
  HOME: process.env.HOME ?? tempDir(),
  ...(process.env.npm_config_cache ? { npm_config_cache: process.env.npm_config_cache } : {}),
});

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}, timeout = 240_000, node = NODE) {
  return new Promise<{ code: number; stdout: string; stderr: string; killed?: string }>((resolve) => {
    execFile(cmd, args, { cwd, env: { ...shell(node), ...env }, timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({
        code: err ? ((err as { code?: number }).code ?? 1) : 0,
        stdout,
        stderr,
        ...(err?.killed ? { killed: `killed by ${err.signal} after ${timeout / 1000} s` } : {}),
      }),
    );
  });
}

/** `npm install <tarball>` into an empty folder; npm's own words on failure. */
async function install(tarball: string): Promise<string> {
  const dir = tempDir();
  const r = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], dir);
  if (r.code !== 0) {
    throw new Error(
      `npm install ${path.basename(tarball)} failed (exit ${r.code}); its dependencies come from the npm cache, else the registry ` +
        `(run npm ci here once with network to fill the cache)${r.killed ? `; ${r.killed}` : ''}:\n${r.stderr}\n${r.stdout.slice(-2000)}`,
    );
  }
  return dir;
}

let tarballs: { sdk: string; host: string };
let installed: { sdk: string; host: string };
let t: TestStack;
beforeAll(async () => {
  for (const dist of ['packages/sdk-ts/dist/cli.js', 'apps/host/dist/cli.js', 'packages/quickjs/dist/index.js']) {
    if (!fs.existsSync(path.join(ROOT, dist))) throw new Error(`${dist} is missing: run npm run build first`);
  }
  const dest = tempDir();
  const packed = await run(process.execPath, [path.join(ROOT, 'scripts/pack-clients.mjs'), dest], ROOT);
  expect([packed.code, packed.stderr]).toEqual([0, expect.anything()]);
  const [sdk, host] = packed.stdout.trim().split('\n');
  tarballs = { sdk: sdk!, host: host! };
  installed = { sdk: await install(tarballs.sdk), host: await install(tarballs.host) };
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_ALPACA_URL: 'off' });
}, 600_000);
afterAll(() => t?.stop());

test('the SDK tarball installs into an empty folder; `npx svc --version` and `--help` run there, and the SDK imports', async () => {
  expect(path.basename(tarballs.sdk)).toBe('svc-sdk-0.1.0.tgz');
  const dir = installed.sdk;
  const version = await run('npx', ['--no-install', 'svc', '--version'], dir);
  expect(version).toMatchObject({ code: 0, stdout: '@svc/sdk 0.1.0\n' });
  const help = await run('npx', ['--no-install', 'svc', 'drive', '--help'], dir);
  expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: svc drive <command>/)]);
  // The library: imported by its package name from a user's own module, the client built from the environment.
  fs.writeFileSync(path.join(dir, 'use.mjs'), "import { Svc } from '@svc/sdk';\nconsole.log(new Svc({ apiKey: 'svc_x' }).config.baseUrl);\n");
  expect(await run(NODE, ['use.mjs'], dir, { SVC_BASE_URL: 'http://127.0.0.1:9' })).toMatchObject({ code: 0, stdout: 'http://127.0.0.1:9\n' });
}, 240_000);

test('the host tarball installs into an empty folder with its workspace packages bundled; svc-host, its relay and its sandbox run', async () => {
  expect(path.basename(tarballs.host)).toBe('svc-host-0.1.0.tgz');
  const dir = installed.host;
  const help = await run('npx', ['--no-install', 'svc-host', '--help'], dir);
  expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('svc-host mcp')]);

  // The relay, driven by the official MCP client without a credential: it lists its tools and reads a project.
  const home = tempDir();
  const project = sampleProject();
  const transport = new StdioClientTransport({
    command: path.join(dir, 'node_modules/.bin/svc-host'),
    args: ['mcp', '--project', project],
    env: { PATH: shell(NODE).PATH!, HOME: home, XDG_CONFIG_HOME: home, SVC_HOST_DATA_DIR: tempDir() },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'install-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['list_units', 'read_journal', 'evaluate_code']));
    const got = await client.callTool({ name: 'get_project', arguments: {} });
    expect(got.structuredContent).toMatchObject({ name: 'Lab bench', worlds: 2 });
  } finally {
    await client.close();
  }

  // The bundled @svc/quickjs, where the installed host finds it, runs code in its own child process.
  const script = `
    const path = require('node:path');
    const host = path.dirname(require.resolve('@svc/host/package.json'));
    const { Sandbox } = require(require.resolve('@svc/quickjs', { paths: [host] }));
    const s = new Sandbox({ poolSize: 1 });
    s.start().then(() => s.run({ code: '6 * 7' })).then(async (r) => { console.log(r.resultJson); await s.close(); });`;
  const ran = await run(NODE, ['-e', script], dir, {}, 60_000);
  expect([ran.code, ran.stderr, ran.stdout.trim()]).toEqual([0, '', '42']);
}, 300_000);

let seq = 0;
async function person() {
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `installed clients ${++seq}` });
  const key = res.body.key as string;
  const agent = await t.ok('POST', '/agents', key, { name: 'helper' });
  await t.ok('PUT', '/default-agents', key, { agentIds: [agent.body.id] });
  return { id: res.body.account.id as string, key };
}

/** A user's program on the installed SDK: streamed upload and download, a typed 412 and 404, pagination, a thread's live events. */
const PROGRAM = `
import crypto from 'node:crypto';
import fs from 'node:fs';
import { responseOf, Svc, SvcNotFoundError, SvcPreconditionFailedError } from '@svc/sdk';

const svc = new Svc(); // SVC_API_KEY, SVC_BASE_URL
const out = { node: process.version };
const me = await svc.me.get();
out.requestId = typeof responseOf(me)?.requestId;
const folder = await svc.drive.createFolder({ name: 'from ' + process.version });
const file = await svc.drive.upload({ name: 'big.bin', parentId: folder.id, content: fs.createReadStream(process.argv[2]), ifNoneMatch: '*' });
out.uploaded = [file.size, file.sha256];
const taken = await svc.drive.upload({ name: 'big.bin', parentId: folder.id, content: 'again', ifNoneMatch: '*' }).catch((e) => e);
out.taken = [taken instanceof SvcPreconditionFailedError, taken.etag === file.etag];
const res = await svc.drive.read({ id: file.id });
const hash = crypto.createHash('sha256');
for await (const chunk of res.body) hash.update(chunk);
out.downloaded = hash.digest('hex');
for (const name of ['a.txt', 'b.txt']) await svc.drive.upload({ name, parentId: folder.id, content: name });
out.names = [];
for await (const item of svc.drive.list.all({ parentId: folder.id, limit: 1 })) out.names.push(item.name);
const thread = await svc.threads.create({ message: 'hello from ' + process.version });
out.events = [];
for await (const e of svc.threads.events.stream({ id: thread.id })) {
  if (e.id !== undefined) out.events.push(e.data.type);
  if (e.event === 'run.completed' || e.event === 'run.failed') break;
}
await svc.drive.delete({ id: file.id });
const gone = await svc.drive.get({ id: file.id }).catch((e) => e);
out.gone = [gone instanceof SvcNotFoundError, gone.status];
console.log(JSON.stringify(out));
`;

describe.each(NODES)('the installed clients on %s', (node) => {
  const version = () => new Promise<string>((resolve) => execFile(node, ['-v'], (_e, out) => resolve(String(out).trim())));

  test('a program on the SDK, and the `svc` command, against the stack', async () => {
    const ada = await person();
    const env = { SVC_API_KEY: ada.key, SVC_BASE_URL: t.url };
    const work = tempDir();
    const data = crypto.randomBytes((1 << 20) + 4097);
    const local = path.join(work, 'big.bin');
    fs.writeFileSync(local, data);
    const sha = crypto.createHash('sha256').update(data).digest('hex');

    fs.writeFileSync(path.join(installed.sdk, 'program.mjs'), PROGRAM);
    const program = await run(node, ['program.mjs', local], installed.sdk, env, 60_000, node);
    expect([program.code, program.stderr]).toEqual([0, '']);
    expect(JSON.parse(program.stdout)).toEqual({
      node: await version(),
      requestId: 'string',
      uploaded: [data.length, sha],
      taken: [true, true],
      downloaded: sha,
      names: ['a.txt', 'b.txt', 'big.bin'],
      events: expect.arrayContaining(['thread.created', 'message.created', 'run.completed']),
      gone: [true, 404],
    });

    // The command, run by this Node from where npm installed it.
    const cli = fs.realpathSync(path.join(installed.sdk, 'node_modules/.bin/svc'));
    const svc = (args: string[]) => run(node, [cli, ...args], work, env, 60_000, node);
    expect(await svc(['--version'])).toEqual({ code: 0, stdout: '@svc/sdk 0.1.0\n', stderr: '' });
    const put = await svc(['drive', 'put', local, '--json']);
    expect([put.code, put.stderr]).toEqual([0, expect.stringMatching(/put big\.bin: 1\.0 MiB \/ 1\.0 MiB \(100%\)/)]);
    const item = JSON.parse(put.stdout);
    expect((await svc(['drive', 'ls'])).stdout).toMatch(new RegExp(`^${item.id}\\s+file\\s`, 'm'));
    expect((await svc(['drive', 'get', item.id, 'copy.bin'])).code).toBe(0);
    expect(fs.readFileSync(path.join(work, 'copy.bin')).equals(data)).toBe(true);
    const said = await svc(['threads', 'new', 'hello', 'on', 'this', 'node', '--wait']);
    expect([said.code, said.stdout]).toEqual([0, expect.stringMatching(/^assistant: .*hello on this node/m)]);
    expect((await svc(['drive', 'rm', item.id])).code).toBe(0);
    expect((await svc(['drive', 'get', item.id, 'gone.bin'])).code).toBe(4);

    // A reader that goes away (`| head -1`): the command ends quietly.
    const id = said.stderr.match(/Thread (thr_\w+)/)![1]!;
    const tail = spawn(node, [cli, 'threads', 'tail', id, '--until-idle'], {
      cwd: work,
      env: { ...shell(node), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    tail.stdout.destroy();
    let stderr = '';
    tail.stderr.on('data', (d) => (stderr += d));
    expect([await exitCode(tail, 30_000), stderr]).toEqual([0, '']);
  }, 180_000);

  test('`svc-host` connects to the platform and serves its calls; its relay acts with the credential; it stops cleanly', async () => {
    const ada = await person();
    const paired = await t.ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: `machine on ${node}` });
    const { credential } = paired.body as { credential: string };
    const hostId = paired.body.host.id as string;
    await t.ok('POST', `/accounts/${ada.id}/standing-grants`, ada.key, {
      granteeId: hostId,
      verbs: ['units.list', 'project.read'],
      scope: `host:${hostId}`,
    });
    const secrets = tempDir();
    const credentialFile = path.join(secrets, 'host-credential');
    fs.writeFileSync(credentialFile, `${credential}\n`, { mode: 0o600 });
    const home = tempDir();
    const env = {
      ...shell(node),
      HOME: home,
      XDG_CONFIG_HOME: home,
      SVC_BASE_URL: t.url,
      SVC_HOST_PORT: '0',
      SVC_HOST_DATA_DIR: tempDir(),
      SVC_HOST_CREDENTIAL_FILE: credentialFile,
    };
    const bin = fs.realpathSync(path.join(installed.host, 'node_modules/.bin/svc-host'));
    const project = sampleProject();
    const host = spawn(node, [bin, 'serve', '--project', project], { cwd: installed.host, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    host.stderr.on('data', (d) => (log += d));
    try {
      // The platform reaches it over the connection it opened: a call answered by the host.
      const listed = await waitFor(
        async () => {
          const r = await t.call('POST', `/hosts/${hostId}/call`, { key: ada.key, body: { tool: 'list_units', arguments: {} } });
          return r.status === 200 && !r.body.result?.isError ? r.body : undefined;
        },
        60_000,
        `svc-host on ${node} connected to the platform`,
      );
      expect(listed.result.structuredContent).toMatchObject({ units: [{ name: 'sim-1', driver: 'simulated' }] });
      const project1 = await t.ok('POST', `/hosts/${hostId}/call`, ada.key, { tool: 'get_project', arguments: {} });
      expect(project1.body.result.structuredContent).toMatchObject({ name: 'Lab bench', worlds: 2 });

      // The relay, on the same Node, finds the running host by its endpoint file and acts with the credential.
      const { SVC_HOST_PORT: _any, ...relayEnv } = env; // port 0 is the host's "any free port"; the relay reads which one
      const transport = new StdioClientTransport({ command: node, args: [bin, 'mcp'], env: relayEnv, stderr: 'pipe' });
      const client = new Client({ name: 'install-test', version: '1.0.0' });
      await client.connect(transport);
      try {
        const units = await client.callTool({ name: 'list_units', arguments: {} });
        expect(units.structuredContent).toMatchObject({ units: [{ name: 'sim-1', state: 'idle' }] }); // the running host's (the relay alone says live: false)
        const grants = await client.callTool({ name: 'list_grants', arguments: {} });
        expect((grants.structuredContent as any).grants).toEqual([expect.objectContaining({ granteeId: hostId })]);
      } finally {
        await client.close();
      }
    } finally {
      host.kill('SIGTERM');
      expect(await exitCode(host, 30_000)).toBe(0);
    }
    expect(log).not.toContain(credential.slice(5));
  }, 180_000);
});
