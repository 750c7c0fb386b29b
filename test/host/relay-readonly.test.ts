/**
 * The stdio relay without a host credential (docs/host.md): driven by the official MCP client, it
 * reads and shows from this machine (the project, worlds, devices, files, the graph and search,
 * workbench panes), and every tool that acts refuses with a message that says how to give the
 * credential. No host runs and no platform answers: nothing here needs either.
 */
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { TOOLS } from '@svc/host';

import { tempDir } from '../support/backends';
import { BENCH_WORLD, sampleProject } from '../support/project';

const CLI = path.join(__dirname, '..', '..', 'apps', 'host', 'dist', 'cli.js');

let project: string;
let client: Client;
beforeAll(async () => {
  project = sampleProject();
  const home = tempDir();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--project', project],
    env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: home, SVC_HOST_DATA_DIR: tempDir(), SVC_BASE_URL: 'http://127.0.0.1:1' },
    stderr: 'pipe',
  });
  client = new Client({ name: 'relay-readonly-test', version: '1.0.0' });
  await client.connect(transport);
}, 30_000);
afterAll(() => client?.close());

const use = async (name: string, args: object = {}) => {
  const r = await client.callTool({ name, arguments: args as Record<string, unknown> });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
  return r.structuredContent as any;
};

test('reads the project, its worlds, devices and files, the graph and search', async () => {
  expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
  expect(await use('get_project')).toMatchObject({ name: 'Lab bench', worlds: 2, devices: 2 });
  expect((await use('project_status')).devices).toEqual({ valid: true, count: 2 });
  expect((await use('list_worlds')).worlds.map((w: any) => w.id)).toEqual(['bench', 'empty']);
  expect((await use('get_world', { world: 'bench' })).world).toEqual(BENCH_WORLD);
  expect((await use('list_devices')).devices.map((d: any) => d.id)).toEqual(['stage-1', 'camera-1']);
  expect(await use('get_device', { device: 'stage-1' })).toMatchObject({ device: { kind: 'stage' }, worlds: ['bench'] });
  expect(await use('read_file', { path: 'src/config.json' })).toMatchObject({ content: '{"distance": 80}\n' });
  expect((await use('graph_query', { path: 'src/index.ts' })).links.map((l: any) => l.to)).toEqual(['src/lib/motion.ts', 'src/config.json']);
  expect((await use('graph_search', { query: 'calibrat' })).results.map((r: any) => r.path)).toContain('docs/setup.md');
  // The project's own rules still hold.
  const outside = await client.callTool({ name: 'read_file', arguments: { path: '../etc/passwd' } });
  expect([outside.isError, (outside.structuredContent as any).error.code]).toEqual([true, 'path_outside_project']);
});

test('shows a file and a world in workbench panes', async () => {
  const file = await use('open_file', { path: 'docs/setup.md' });
  const world = await use('show_world', { world: 'bench' });
  expect([file.pane.kind, world.pane.kind]).toEqual(['file', 'world']);
  const listed = await use('list_panes');
  expect(listed.panes.map((p: any) => [p.kind, p.target])).toEqual(
    expect.arrayContaining([
      ['file', 'docs/setup.md'],
      ['world', 'bench'],
    ]),
  );
});

test('everything that acts refuses, saying what it does and how to give the credential; nothing is written', async () => {
  const before = fs.readFileSync(path.join(project, 'worlds/bench.json'), 'utf8');
  for (const [name, args, what] of [
    ['write_file', { path: 'x.md', content: 'x' }, /writes to the project folder/],
    ['save_world', { world: 'bench', document: BENCH_WORLD }, /writes to the project folder/],
    ['arm', { unit: 'stage' }, /acts on a unit/],
    ['evaluate_code', { code: '1' }, /runs code/],
    ['market_order', { symbol: 'BTC/USD', side: 'buy', qty: '1' }, /markets/],
    ['host_call', { host: 'h', tool: 'list_units' }, /other hosts/],
    ['outreach_send', { contact: 'c' }, /outreach/],
    ['thread_say', { thread: 'thr_x', message: 'hi' }, /thread/],
  ] as const) {
    const r = await client.callTool({ name, arguments: args as Record<string, unknown> });
    const text = (r.content as any)[0].text as string;
    expect([name, r.isError, (r.structuredContent as any).error.code]).toEqual([
      name,
      true,
      expect.stringMatching(/^(read_only|credential_required)$/),
    ]);
    expect([name, text]).toEqual([name, expect.stringMatching(what)]);
    expect(text).toMatch(/SVC_HOST_CREDENTIAL_FILE/);
  }
  expect(fs.existsSync(path.join(project, 'x.md'))).toBe(false);
  expect(fs.readFileSync(path.join(project, 'worlds/bench.json'), 'utf8')).toBe(before);
});
