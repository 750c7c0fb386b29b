/**
 * The host's project tools (docs/host.md): project, worlds and devices; files and the project
 * graph; code and simulation; markets and other hosts. Through the relay with a real MCP client,
 * through the local endpoint, and in process, on a sample project, under real grants.
 */
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { createLog, type RunningHost, SimulatedDriver, startHost } from '@svc/host';

import { tempDir } from '../support/backends';
import { control } from '../support/host';
import { BENCH_WORLD, sampleProject } from '../support/project';
import { startTestStack, type TestStack } from '../support/stack';

const CLI = path.join(__dirname, '..', '..', 'apps', 'host', 'dist', 'cli.js');

let t: TestStack;
let ada: { id: string; key: string };
let hostId: string;
let credential: string;
let project: string;
let outside: string;
let dataDir: string;
let host: RunningHost;

const call = (tool: string, args: object = {}) => control(host.endpoint.port, credential, tool, args);
const ok = async (tool: string, args: object = {}) => {
  const r = await call(tool, args);
  if (r.status !== 200) throw new Error(`${tool}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
};
const journal = () =>
  fs
    .readFileSync(path.join(dataDir, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  t = await startTestStack();
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'project person' });
  ada = { id: res.body.account.id, key: res.body.key };
  const paired = await t.ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'bench machine' });
  hostId = paired.body.host.id;
  credential = paired.body.credential;
  await t.ok('POST', `/accounts/${ada.id}/standing-grants`, ada.key, {
    granteeId: hostId,
    verbs: ['project.*', 'files.*', 'code.run', 'sim.run', 'market.*', 'peers.*', 'outreach.*'],
    scope: `host:${hostId}`,
  });
  project = sampleProject();
  // Outside the project: a secret, and links to it from inside.
  outside = tempDir('svc-outside-');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside secret');
  fs.symlinkSync(outside, path.join(project, 'link-out'));
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(project, 'secret-link.txt'));
  fs.symlinkSync(path.join(outside, 'not-yet.txt'), path.join(project, 'dangling.txt'));
  fs.symlinkSync('docs/setup.md', path.join(project, 'setup-link.md'));
  dataDir = tempDir();
  host = await startHost({
    credential,
    baseUrl: t.url,
    port: 0,
    dataDir,
    units: new Map([['sim-1', new SimulatedDriver()]]),
    log: createLog({ silent: true }),
    connect: false,
    project,
  });
  await host.grants.refresh();
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await t?.stop();
});

const NEW_TOOLS = (
  'get_project project_status list_worlds get_world save_world list_devices get_device read_file write_file graph_query graph_search ' +
  'evaluate_code sim_trials market_venues market_account market_order market_cancel list_hosts host_call'
).split(' ');

describe('through the stdio relay, with a real MCP client', () => {
  test('every project tool is listed with its schema and works on the sample project', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: tempDir(), XDG_CONFIG_HOME: tempDir(), SVC_HOST_DATA_DIR: dataDir, SVC_HOST_CREDENTIAL: credential },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'host-tools-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      for (const name of NEW_TOOLS) {
        const tool = tools.find((x) => x.name === name);
        expect([name, tool?.inputSchema.type, tool?.inputSchema.additionalProperties]).toEqual([name, 'object', false]);
      }
      expect(tools.find((x) => x.name === 'save_world')!.inputSchema.required).toEqual(['world', 'document']);
      expect(tools.find((x) => x.name === 'save_world')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      expect(tools.find((x) => x.name === 'graph_search')!.annotations).toMatchObject({ readOnlyHint: true });
      const use = async (name: string, args: object = {}) => {
        const r = await client.callTool({ name, arguments: args as Record<string, unknown> });
        if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
        return r.structuredContent as any;
      };

      expect(await use('get_project')).toEqual({
        name: 'Lab bench',
        description: 'A stage and a camera on a bench.',
        folder: path.basename(fs.realpathSync(project)),
        worlds: 2,
        devices: 2,
        files: 11,
      });
      const status = await use('project_status');
      expect(status.devices).toEqual({ valid: true, count: 2 });
      expect(status.worlds.map((w: any) => [w.id, w.valid])).toEqual([
        ['bench', true],
        ['empty', true],
      ]);
      expect((await use('list_worlds')).worlds.map((w: any) => [w.id, w.name, w.devices, w.parameters])).toEqual([
        ['bench', 'Bench', 1, 3],
        ['empty', 'Empty', 0, 0],
      ]);
      const bench = await use('get_world', { world: 'bench' });
      expect(bench.world).toEqual(BENCH_WORLD);
      expect(bench.version).toMatch(/^v_[0-9a-f]{20}$/);
      const saved = await use('save_world', { world: 'bench', version: bench.version, document: { ...BENCH_WORLD, name: 'Bench (relay)' } });
      expect(saved).toMatchObject({ world: 'bench', previous: bench.version, created: false });
      expect((await use('get_world', { world: 'bench' })).version).toBe(saved.version);
      expect((await use('list_devices')).devices.map((d: any) => d.id)).toEqual(['stage-1', 'camera-1']);
      expect(await use('get_device', { device: 'stage-1' })).toMatchObject({ device: { kind: 'stage', unit: 'sim-1' }, worlds: ['bench'] });
      expect(await use('read_file', { path: 'src/config.json' })).toMatchObject({ path: 'src/config.json', content: '{"distance": 80}\n' });
      expect(await use('write_file', { path: 'notes/relay.md', content: 'written through the relay' })).toMatchObject({
        path: 'notes/relay.md',
        created: true,
      });
      expect(fs.readFileSync(path.join(project, 'notes/relay.md'), 'utf8')).toBe('written through the relay');
      expect((await use('graph_query', { path: 'src/index.ts' })).links.map((l: any) => l.to)).toEqual(['src/lib/motion.ts', 'src/config.json']);
      expect((await use('graph_search', { query: 'relay' })).results.map((r: any) => r.path)).toContain('notes/relay.md');
      expect(await use('evaluate_code', { code: 'input.xs.reduce((a, b) => a + b, 0)', input: { xs: [1, 2, 3] } })).toMatchObject({
        ok: true,
        result: 6,
      });
      expect(await use('sim_trials', { world: 'bench', trials: 100, seed: 7 })).toMatchObject({
        world: 'bench',
        trials: 100,
        seed: 7,
        prng: 'mulberry32',
      });

      // The platform tools answer, through the relay, why a host credential cannot trade or call hosts.
      for (const name of ['market_venues', 'market_account', 'list_hosts']) {
        const r = await client.callTool({ name, arguments: {} });
        expect([name, r.isError, (r.structuredContent as any).error.code]).toEqual([name, true, 'principal_not_allowed']);
        expect((r.content as any)[0].text).toMatch(/SVC_HOST_PLATFORM_KEY/);
      }

      // A bad argument is a tool error naming it.
      const bad = await client.callTool({ name: 'sim_trials', arguments: { world: 'bench', trials: 0, seed: 1 } });
      expect(bad).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_arguments' } } });
    } finally {
      await client.close();
    }
    // Writes were journaled before they were done, and each has its result.
    const entries = journal();
    const actions = entries.filter((e) => e.kind === 'action');
    expect(actions.map((e) => [e.tool, e.target])).toEqual([
      ['save_world', 'worlds/bench.json'],
      ['write_file', 'notes/relay.md'],
    ]);
    for (const a of actions)
      expect(entries.find((e) => e.kind === 'result' && e.ref === a.seq)).toMatchObject({ ok: true, caller: { via: 'local' } });
    fs.writeFileSync(path.join(project, 'worlds/bench.json'), JSON.stringify(BENCH_WORLD, null, 2));
  });
});

describe('paths stay inside the project folder', () => {
  test('"..", absolute paths and symlinks that lead out are refused, for reading and writing', async () => {
    const refusedPaths = [
      '../secret.txt',
      'src/../../secret.txt',
      '/etc/passwd',
      path.join(outside, 'secret.txt'),
      'C:\\Windows\\win.ini',
      '..',
      'link-out/secret.txt',
      'secret-link.txt',
    ];
    for (const p of refusedPaths) {
      const r = await call('read_file', { path: p });
      expect([p, r.status, r.body.error.code]).toEqual([p, 403, 'path_outside_project']);
      expect(JSON.stringify(r.body)).not.toContain('outside secret');
    }
    for (const p of [...refusedPaths, 'link-out/new.txt', 'dangling.txt', 'link-out/deeper/new.txt']) {
      const w = await call('write_file', { path: p, content: 'pwned' });
      expect([p, w.status, w.body.error.code]).toEqual([p, 403, 'path_outside_project']);
    }
    // Nothing was written outside, and the secret is unchanged.
    expect(fs.readdirSync(outside).sort()).toEqual(['secret.txt']);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside secret');
    // The host's own data folder in the project is not for write_file; NUL and empty paths are bad arguments.
    expect((await call('write_file', { path: '.svc/outreach.json', content: '{}' })).body.error.code).toBe('path_reserved');
    expect((await call('read_file', { path: 'a\0b' })).status).toBe(400);
    expect((await call('read_file', { path: './' })).status).toBe(400);
    // A symlink that stays inside is followed; a missing file is 404; a folder is not a file.
    expect((await ok('read_file', { path: 'setup-link.md' })).content).toMatch(/^# Setup/);
    expect((await call('read_file', { path: 'docs/nothing.md' })).status).toBe(404);
    expect((await call('read_file', { path: 'docs' })).body.error.code).toBe('not_a_file');
    // The index does not follow links out either.
    expect(JSON.stringify(await ok('graph_search', { query: 'outside secret' }))).not.toContain('secret.txt');
    // Refusals are journaled.
    expect(journal().filter((e) => e.kind === 'refused' && e.error.code === 'path_outside_project').length).toBeGreaterThanOrEqual(
      refusedPaths.length,
    );
  });
});

describe('worlds', () => {
  test('concurrent saves from one version: one wins, the other is a conflict; the file is always a whole, valid world', async () => {
    const worldFile = path.join(project, 'worlds/bench.json');
    const { version } = await ok('get_world', { world: 'bench' });
    const [a, b] = await Promise.all([
      call('save_world', { world: 'bench', version, document: { ...BENCH_WORLD, name: 'A' } }),
      call('save_world', { world: 'bench', version, document: { ...BENCH_WORLD, name: 'B' } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const [won, lost] = a.status === 200 ? [a, b] : [b, a];
    expect(lost.body.error.code).toBe('version_conflict');
    expect(lost.body.error.message).toContain(won.body.result.version);
    const onDisk = JSON.parse(fs.readFileSync(worldFile, 'utf8'));
    expect(onDisk.name).toBe(a.status === 200 ? 'A' : 'B');

    // Many writers and a reader at once: every read of the file parses, and is one of the documents written.
    let reads = 0;
    let stop = false;
    const reader = (async () => {
      while (!stop) {
        const doc = JSON.parse(fs.readFileSync(worldFile, 'utf8'));
        expect(doc.schema).toBe('svc.world/1');
        reads++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    let current = (await ok('get_world', { world: 'bench' })).version;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call('save_world', { world: 'bench', version: current, document: { ...BENCH_WORLD, name: `W${i}`, description: 'x'.repeat(300 * i) } }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(11);
    // Chained saves, each from the version the last returned, all succeed.
    current = results.find((r) => r.status === 200)!.body.result.version;
    for (let i = 0; i < 10; i++)
      current = (await ok('save_world', { world: 'bench', version: current, document: { ...BENCH_WORLD, name: `chain ${i}` } })).version;
    stop = true;
    await reader;
    expect(reads).toBeGreaterThan(0);
    expect(fs.readdirSync(path.join(project, 'worlds')).filter((n) => n.endsWith('.tmp'))).toEqual([]);

    // A stale version, a create over an existing world, a version for a missing one: conflicts.
    expect((await call('save_world', { world: 'bench', version, document: BENCH_WORLD })).body.error.code).toBe('version_conflict');
    expect((await call('save_world', { world: 'bench', document: BENCH_WORLD })).body.error.message).toMatch(/exists .*pass its version/);
    expect((await call('save_world', { world: 'nothere', version, document: BENCH_WORLD })).body.error.message).toMatch(/does not exist/);

    // Invalid documents are refused with what is wrong, and the file is untouched.
    const before = fs.readFileSync(worldFile, 'utf8');
    for (const [doc, want] of [
      [{ ...BENCH_WORLD, units: { length: 'furlong', time: 's' } }, /units\.length/],
      [{ ...BENCH_WORLD, devices: [{ id: 'x', device: 'laser-9' }] }, /no device laser-9/],
      [{ ...BENCH_WORLD, devices: [BENCH_WORLD.devices[0], BENCH_WORLD.devices[0]] }, /used twice/],
      [{ ...BENCH_WORLD, extra: 1 }, /extra/],
      [{ ...BENCH_WORLD, parameters: { p: { value: 1, min: 3, max: 2 } } }, /min is above max/],
    ] as const) {
      const r = await call('save_world', { world: 'bench', version: current, document: doc });
      expect([r.status, r.body.error.code]).toEqual([422, 'invalid_world']);
      expect(r.body.error.message).toMatch(want);
    }
    expect(fs.readFileSync(worldFile, 'utf8')).toBe(before);

    // A new world is created without a version; an invalid file on disk shows in project_status.
    expect(await ok('save_world', { world: 'second', document: { ...BENCH_WORLD, name: 'Second' } })).toMatchObject({
      created: true,
      previous: null,
    });
    fs.writeFileSync(path.join(project, 'worlds/broken.json'), '{"schema": "svc.world/1", "name": ');
    const status = await ok('project_status');
    expect(status.worlds.find((w: any) => w.id === 'broken')).toMatchObject({ valid: false, problems: [expect.stringMatching(/JSON/)] });
    expect((await call('get_world', { world: 'broken' })).body.error.code).toBe('invalid_world');
    fs.rmSync(path.join(project, 'worlds/broken.json'));
    fs.rmSync(path.join(project, 'worlds/second.json'));
    fs.writeFileSync(worldFile, JSON.stringify(BENCH_WORLD, null, 2));
  });

  test('write_file with a version is refused once the file changed', async () => {
    const first = await ok('write_file', { path: 'data/run.csv', content: 'a,b\n1,2\n' });
    const second = await ok('write_file', { path: 'data/run.csv', content: 'a,b\n3,4\n', version: first.version });
    expect(second.previous).toBe(first.version);
    const stale = await call('write_file', { path: 'data/run.csv', content: 'x', version: first.version });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'version_conflict']);
    expect(fs.readFileSync(path.join(project, 'data/run.csv'), 'utf8')).toBe('a,b\n3,4\n');
    const bin = await ok('write_file', { path: 'data/blob.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' });
    expect(bin.size).toBe(4);
    expect((await ok('read_file', { path: 'data/blob.bin', encoding: 'base64' })).content).toBe('AAEC/w==');
  });
});

describe('the project graph', () => {
  test('answers about the sample project: imports, links, references, devices, full text; and follows changes', async () => {
    const index = await ok('graph_query', { path: 'src/index.ts', depth: 2 });
    expect(index.links).toEqual([
      { to: 'src/lib/motion.ts', kind: 'import', line: 1, exists: true },
      { to: 'src/config.json', kind: 'import', line: 2, exists: true },
    ]);
    expect(index.backlinks).toEqual([{ from: 'docs/README.md', kind: 'link', line: 3 }]);
    // motion.ts imports './util.js', which is util.ts: two steps from index.ts.
    expect(index.reachable).toEqual([
      { path: 'src/lib/motion.ts', depth: 1 },
      { path: 'src/config.json', depth: 1 },
      { path: 'src/lib/util.ts', depth: 2 },
    ]);
    const world = await ok('graph_query', { path: 'worlds/bench.json' });
    expect(world.links).toEqual([{ to: 'device:stage-1', kind: 'device', line: 0, exists: true }]);
    expect(world.backlinks).toEqual([{ from: 'notes.txt', kind: 'reference', line: 1 }]);
    expect((await ok('graph_query', { path: 'device:stage-1' })).backlinks).toEqual([{ from: 'worlds/bench.json', kind: 'device', line: 0 }]);
    const all = await ok('graph_query', {});
    expect(all.brokenLinks).toEqual([{ from: 'docs/setup.md', to: 'docs/old.md', line: 3 }]);
    expect(all.files.find((f: any) => f.path === 'src/lib/util.ts')).toMatchObject({ kind: 'code', linksIn: 1, linksOut: 0 });
    expect((await ok('graph_query', { kind: 'world' })).files.map((f: any) => f.path)).toEqual(['worlds/bench.json', 'worlds/empty.json']);
    expect((await call('graph_query', { path: 'nope.md' })).status).toBe(404);

    // Full text: every word must match; a word matches longer words it begins.
    const calib = await ok('graph_search', { query: 'calibrat stage' });
    expect(calib.results.map((r: any) => r.path).sort()).toEqual(['docs/setup.md', 'src/lib/motion.ts']);
    expect(calib.results.find((r: any) => r.path === 'docs/setup.md').matches).toEqual([
      { line: 3, text: 'Calibrate the stage before each run. Missing: [old notes](old.md).' },
    ]);
    expect((await ok('graph_search', { query: 'zebra' })).results).toEqual([]);

    // Kept current: a file written (by the tool or anyone), changed, removed.
    fs.writeFileSync(path.join(project, 'docs/old.md'), '# Old notes\n\nThe zebra stage, retired. See [setup](setup.md).\n');
    expect((await ok('graph_search', { query: 'zebra' })).results.map((r: any) => r.path)).toEqual(['docs/old.md']);
    expect((await ok('graph_query', {})).brokenLinks).toEqual([]);
    expect((await ok('graph_query', { path: 'docs/setup.md' })).backlinks).toEqual(
      expect.arrayContaining([
        { from: 'docs/README.md', kind: 'link', line: 3 },
        { from: 'docs/old.md', kind: 'link', line: 3 },
      ]),
    );
    await ok('write_file', { path: 'src/lib/util.ts', content: "import { travel } from './motion';\nexport const zebraClamp = 1;\n" });
    expect((await ok('graph_query', { path: 'src/lib/motion.ts' })).backlinks.map((b: any) => b.from).sort()).toEqual([
      'src/index.ts',
      'src/lib/util.ts',
    ]);
    expect((await ok('graph_search', { query: 'zebra' })).results.map((r: any) => r.path).sort()).toEqual(['docs/old.md', 'src/lib/util.ts']);
    fs.rmSync(path.join(project, 'docs/old.md'));
    // A link with a malformed escape is kept as written (a broken link), not a failed index.
    fs.writeFileSync(path.join(project, 'docs/odd.md'), 'See [this](%E0%A4%A.md).\n');
    expect((await ok('graph_query', {})).brokenLinks).toEqual([
      { from: 'docs/odd.md', to: 'docs/%E0%A4%A.md', line: 1 },
      { from: 'docs/setup.md', to: 'docs/old.md', line: 3 },
    ]);
    fs.rmSync(path.join(project, 'docs/odd.md'));
    expect((await ok('graph_search', { query: 'zebra' })).results.map((r: any) => r.path)).toEqual(['src/lib/util.ts']);
  });
});

describe('code and simulation', () => {
  test('sim_trials: the same seed gives identical results, another seed others; statistics fit the model', async () => {
    const run = (seed: number, extra: object = {}) => ok('sim_trials', { world: 'bench', trials: 20_000, seed, ...extra });
    const [a, b, c] = [await run(42), await run(42), await run(43)];
    const strip = ({ durationMs: _d, ...rest }: any) => rest;
    expect(strip(a)).toEqual(strip(b));
    expect(a.outputs.travelTime.mean).not.toBe(c.outputs.travelTime.mean);
    const tt = a.outputs.travelTime;
    // travel 120 mm at ~20 mm/s (sd 2) times a load uniform in [0.5, 1.5], plus 0.25 s.
    expect(tt.mean).toBeGreaterThan(6);
    expect(tt.mean).toBeLessThan(6.8);
    expect(tt.min).toBeGreaterThan(0.25);
    expect(tt.percentiles.p5).toBeLessThan(tt.percentiles.p50);
    expect(tt.percentiles.p50).toBeLessThan(tt.percentiles.p95);
    expect(tt.nonFinite).toBe(0);
    // energy = load * sqrt(120): a uniform load gives mean sqrt(120) and sd sqrt(120)/sqrt(12).
    expect(a.outputs.energy.mean).toBeCloseTo(Math.sqrt(120), 1);
    expect(a.outputs.energy.stddev).toBeCloseTo(Math.sqrt(120) / Math.sqrt(12), 1);
    // Fixing the load leaves the speed's noise only; chosen outputs and percentiles.
    const fixed = await run(42, { overrides: { load: 1 }, outputs: ['travelTime'], percentiles: [50] });
    expect(Object.keys(fixed.outputs)).toEqual(['travelTime']);
    expect(Object.keys(fixed.outputs.travelTime.percentiles)).toEqual(['p50']);
    expect(fixed.outputs.travelTime.percentiles.p50).toBeCloseTo(120 / 20 + 0.25, 1);
    expect((await call('sim_trials', { world: 'empty', trials: 10, seed: 1 })).body.error.code).toBe('no_simulation');
    expect((await call('sim_trials', { world: 'bench', trials: 10, seed: 1, overrides: { nope: 1 } })).body.error.code).toBe('unknown_parameter');
    expect((await call('sim_trials', { world: 'bench', trials: 10, seed: 1, outputs: ['nope'] })).body.error.code).toBe('unknown_output');
    expect(
      (
        await call('sim_trials', {
          world: 'bench',
          trials: 1_000_000,
          seed: 1,
          outputs: ['travelTime', 'energy', 'energy', 'energy', 'energy', 'energy'],
        })
      ).body.error.code,
    ).toBe('too_many_trials');
  });

  test('evaluate_code runs in the sandbox: a result, logs and input; no require, no network, and a time limit', async () => {
    expect(await ok('evaluate_code', { code: 'console.log("hi", input.n); ({ doubled: input.n * 2 })', input: { n: 21 } })).toMatchObject({
      ok: true,
      result: { doubled: 42 },
      logs: [{ level: 'log', message: 'hi 21' }],
    });
    const req = await ok('evaluate_code', { code: 'require("fs").readFileSync("/etc/passwd", "utf8")' });
    expect(req).toMatchObject({ ok: false, error: { code: 'script_error' } });
    expect(await ok('evaluate_code', { code: '[typeof fetch, typeof process, typeof XMLHttpRequest]' })).toMatchObject({
      result: ['undefined', 'undefined', 'undefined'],
    });
    const loop = await ok('evaluate_code', { code: 'while (true) {}', timeoutMs: 200 });
    expect(loop).toMatchObject({ ok: false, error: { code: 'timeout' } });
    const thrown = await ok('evaluate_code', { code: '1;\nthrow new TypeError("bad")', input: {} });
    expect(thrown.error).toMatchObject({ code: 'script_error', name: 'TypeError', line: 2 });
  });
});

describe('markets and other hosts, through the platform', () => {
  test('with the host credential: a clear refusal; with a key the owner gave the host: paper trading and host calls', async () => {
    const refused = await call('market_order', { symbol: 'BTC/USD', side: 'buy', type: 'market', qty: '1' });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'principal_not_allowed']);
    expect(refused.body.error.message).toMatch(/POST \/trading\/order.*SVC_HOST_PLATFORM_KEY/s);
    // Journaled as an action that failed: the order was about to be sent.
    const last = journal().filter((e) => e.tool === 'market_order');
    expect(last.map((e) => [e.kind, e.ok ?? null])).toEqual([
      ['action', null],
      ['result', false],
    ]);

    // The owner makes an agent for the host and gives the host its key.
    const agentId = (await t.ok('POST', '/agents', ada.key, { name: 'bench trader' })).body.id;
    const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, ada.key, { name: 'host key' })).body.key;
    const acting = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir: tempDir(),
      units: new Map(),
      log: createLog({ silent: true }),
      connect: false,
      platformKey: agentKey,
    });
    try {
      await acting.grants.refresh();
      const local = { via: 'local' as const };
      const venues = (await acting.control.call('market_venues', {}, local)) as any;
      expect(venues.venues.map((v: any) => [v.id, v.mode])).toContainEqual(['paper', 'paper']);
      const order = (await acting.control.call(
        'market_order',
        { symbol: 'BTC/USD', side: 'buy', type: 'limit', qty: '0.01', price: '1', timeInForce: 'gtc', clientOrderId: 'host-1' },
        local,
      )) as any;
      expect(order).toMatchObject({ symbol: 'BTC/USD', side: 'buy', status: expect.stringMatching(/open|new|accepted/) });
      const account = (await acting.control.call('market_account', {}, local)) as any;
      expect(account.openOrders ?? account.orders).toEqual(expect.arrayContaining([expect.objectContaining({ id: order.id })]));
      const cancelled = (await acting.control.call('market_cancel', { orderId: order.id }, local)) as any;
      expect(cancelled.orders.map((o: any) => [o.id, o.status])).toEqual([[order.id, 'cancelled']]);
      // No project here: the project tools say so.
      await expect(acting.control.call('get_project', {}, local)).rejects.toMatchObject({ code: 'no_project' });
    } finally {
      await acting.stop();
    }

    // The owner's own key: the host lists the account's hosts and calls one (offline here).
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
      const hosts = (await owner.control.call('list_hosts', {}, { via: 'local' })) as any;
      expect(hosts.hosts.map((h: any) => h.id)).toContain(hostId);
      await expect(owner.control.call('host_call', { hostId, tool: 'list_units' }, { via: 'local' })).rejects.toMatchObject({ code: 'host_offline' });
    } finally {
      await owner.stop();
    }
  });
});

describe('through the platform (POST /hosts/:hostId/call)', () => {
  test('project tools answer platform calls, journaled with the caller; a result too large for the connection is refused, not fatal', async () => {
    const connectedData = tempDir();
    const connected = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir: connectedData,
      units: new Map(),
      log: createLog({ silent: true }),
      project,
      backoff: { minMs: 50, maxMs: 200 },
    });
    const hostCall = (tool: string, args: object = {}) => t.ok('POST', `/hosts/${hostId}/call`, ada.key, { tool, arguments: args });
    try {
      await connected.connection!.when((c) => c.state === 'open');
      await connected.grants.refresh();
      const world = (await hostCall('get_world', { world: 'bench' })).body.result;
      expect(world.isError).toBeFalsy();
      expect(world.structuredContent.world.name).toBe('Bench');
      const saved = await hostCall('save_world', {
        world: 'bench',
        version: world.structuredContent.version,
        document: { ...BENCH_WORLD, name: 'From the platform' },
      });
      expect(saved.body.result.structuredContent).toMatchObject({ world: 'bench', created: false });
      const theirs = fs
        .readFileSync(path.join(connectedData, 'journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(theirs.find((e) => e.kind === 'action' && e.tool === 'save_world')).toMatchObject({
        target: 'worlds/bench.json',
        caller: { via: 'platform', callId: saved.body.callId, principal: { kind: 'human', id: ada.id } },
      });
      const stale = (await hostCall('save_world', { world: 'bench', version: world.structuredContent.version, document: BENCH_WORLD })).body.result;
      expect(stale).toMatchObject({ isError: true, structuredContent: { error: { code: 'version_conflict' } } });
      expect((await hostCall('graph_search', { query: 'calibrat' })).body.result.structuredContent.total).toBeGreaterThan(0);

      // 500 KB of text is fine locally, too large for one frame to the platform.
      fs.writeFileSync(path.join(project, 'big.txt'), 'y'.repeat(500 * 1024));
      expect((await ok('read_file', { path: 'big.txt' })).size).toBe(500 * 1024);
      const big = (await hostCall('read_file', { path: 'big.txt' })).body.result;
      expect(big).toMatchObject({ isError: true, structuredContent: { error: { code: 'result_too_large' } } });
      expect(connected.connection!.state).toBe('open');
      expect((await hostCall('get_project')).body.result.structuredContent.name).toBe('Lab bench');
      fs.rmSync(path.join(project, 'big.txt'));
      fs.writeFileSync(path.join(project, 'worlds/bench.json'), JSON.stringify(BENCH_WORLD, null, 2));
    } finally {
      await connected.stop();
    }
  });
});
