import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { tempDir } from '../support/backends';
import { ROOT } from '../support/process';
import { sampleProject } from '../support/project';

/**
 * Each client installed the way its users install it (README, "Clients"): `npm pack` of the
 * TypeScript SDK (the `svc` command) and of the host (`svc-host`, with the workspace packages it
 * needs bundled) by scripts/pack-clients.mjs, each tarball `npm install`ed into an empty folder,
 * then run from there, on the Node that CI names first in SVC_TEST_NODE_BINARIES (Node 22), else
 * this one. npm takes the dependencies from its cache (--prefer-offline) and the registry only for
 * what the cache lacks. The Python SDK's install is test/sdk/sdk-python.test.ts.
 */

const NODE = (process.env.SVC_TEST_NODE_BINARIES ?? '').split(':').find(Boolean) ?? process.execPath;
/** A user's shell: this Node first on PATH, none of the npm_* variables `npm run` gives the tests (they name this workspace). */
const ENV: Record<string, string> = {
  PATH: `${path.dirname(NODE)}:${process.env.PATH ?? ''}`,
  HOME: process.env.HOME ?? tempDir(),
  ...(process.env.npm_config_cache ? { npm_config_cache: process.env.npm_config_cache } : {}),
};

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}, timeout = 240_000) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(cmd, args, { cwd, env: { ...ENV, ...env }, timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
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
        `(run npm ci here once with network to fill the cache):\n${r.stderr}`,
    );
  }
  return dir;
}

let tarballs: { sdk: string; host: string };
beforeAll(async () => {
  for (const dist of ['packages/sdk-ts/dist/cli.js', 'apps/host/dist/cli.js', 'packages/quickjs/dist/index.js']) {
    if (!fs.existsSync(path.join(ROOT, dist))) throw new Error(`${dist} is missing: run npm run build first`);
  }
  const dest = tempDir();
  const packed = await run(process.execPath, [path.join(ROOT, 'scripts/pack-clients.mjs'), dest], ROOT);
  expect([packed.code, packed.stderr]).toEqual([0, expect.anything()]);
  const [sdk, host] = packed.stdout.trim().split('\n');
  tarballs = { sdk: sdk!, host: host! };
}, 240_000);

test('the SDK tarball installs into an empty folder; `npx svc --version` and `--help` run there, and the SDK imports', async () => {
  expect(path.basename(tarballs.sdk)).toBe('svc-sdk-0.1.0.tgz');
  const dir = await install(tarballs.sdk);
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
  const dir = await install(tarballs.host);
  const help = await run('npx', ['--no-install', 'svc-host', '--help'], dir);
  expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('svc-host mcp')]);

  // The relay, driven by the official MCP client without a credential: it lists its tools and reads a project.
  const home = tempDir();
  const project = sampleProject();
  const transport = new StdioClientTransport({
    command: path.join(dir, 'node_modules/.bin/svc-host'),
    args: ['mcp', '--project', project],
    env: { PATH: ENV.PATH!, HOME: home, XDG_CONFIG_HOME: home, SVC_HOST_DATA_DIR: tempDir() },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'install-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_units', 'read_journal', 'evaluate_code']));
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
