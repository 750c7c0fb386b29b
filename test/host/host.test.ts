/**
 * The local host against the platform: its grants (read with the host credential), the control
 * tools under them, and the journal written before every action reaches a unit.
 */
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import WebSocket from 'ws';

import { gatewaySettingsSchema, type RunningGateway, startGateway } from '@svc/gateway';
import { createLog, type RunningHost, SimulatedDriver, startHost, TOOLS } from '@svc/host';

import { tempDir } from '../support/backends';
import { control } from '../support/host';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

let seq = 0;
async function person() {
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `host person ${++seq}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
async function pair(owner: { id: string; key: string }) {
  const res = await t.ok('POST', `/accounts/${owner.id}/hosts`, owner.key, { name: `machine ${++seq}` });
  return { hostId: res.body.host.id as string, credential: res.body.credential as string };
}
const grant = (owner: { id: string; key: string }, granteeId: string, verbs: string[], scope?: string) =>
  t.ok('POST', `/accounts/${owner.id}/standing-grants`, owner.key, { granteeId, verbs, ...(scope ? { scope } : {}) });

const readJournal = (dir: string) =>
  fs
    .readFileSync(path.join(dir, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('the local host under its grants', () => {
  test('each control tool needs its verb, refusals name it, and every action is journaled before the unit receives it', async () => {
    const ada = await person();
    const { hostId, credential } = await pair(ada);
    const dataDir = tempDir();
    // The device checks the journal the moment a command reaches it.
    const received: Array<{ line: string; journaled: boolean }> = [];
    const driver = new SimulatedDriver({
      msPerUnit: 1,
      onReceive: (line) => {
        const last = readJournal(dataDir).at(-1);
        received.push({ line, journaled: last?.kind === 'action' && last.line === line && last.unit === 'sim-1' });
      },
    });
    const host: RunningHost = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir,
      units: new Map([
        ['sim-1', driver],
        ['sim-2', new SimulatedDriver()],
      ]),
      log: createLog({ silent: true }),
      connect: false,
    });
    const call = (tool: string, args: object = {}) => control(host.endpoint.port, credential, tool, args);
    try {
      await host.grants.refresh();
      expect((await call('list_grants')).body.result).toEqual({ grants: [], loaded: true, credentialRejected: false });

      // No grant at all: nothing, not even stop.
      const none = await call('arm', { unit: 'sim-1' });
      expect(none.status).toBe(403);
      expect(none.body.error.code).toBe('grant_required');
      expect(none.body.error.message).toMatch(/arm needs the verb units\.arm/);
      expect((await call('stop', { unit: 'sim-1' })).body.error.message).toMatch(/stop needs a standing grant \(any verb\)/);
      expect((await call('list_units')).body.error.message).toMatch(/units\.list/);

      // A grant on one unit of this host, with two verbs.
      await grant(ada, hostId, ['units.open', 'units.command', 'units.list'], `host:${hostId}/sim-1`);
      // A tool that names no unit needs a grant on the whole host (or account).
      expect((await call('list_units')).status).toBe(403);
      await host.grants.refresh();
      expect((await call('list_grants')).body.result.grants).toEqual([expect.objectContaining({ granteeId: hostId, scope: `host:${hostId}/sim-1` })]);
      expect((await call('open_channel', { unit: 'sim-1' })).body.result).toMatchObject({ unit: 'sim-1', reused: false });
      expect((await call('send_command', { unit: 'sim-1', command: 'PING' })).body.result).toEqual({ unit: 'sim-1', ok: true, reply: 'OK PONG' });
      const arm = await call('arm', { unit: 'sim-1' });
      expect(arm.status).toBe(403);
      expect(arm.body.error.message).toMatch(/units\.arm/);
      // The grant is on sim-1 only.
      expect((await call('open_channel', { unit: 'sim-2' })).status).toBe(403);
      // Stop needs any grant: this one reaches sim-1 (a channel is open), not sim-2.
      expect((await call('stop', { unit: 'sim-1' })).body.result).toMatchObject({ ok: true, reply: expect.stringMatching(/^OK STOPPED/) });
      expect((await call('stop', { unit: 'sim-2' })).status).toBe(403);

      // Every unit verb (units.*) on the whole host: arm, run a program, follow it on the channel.
      await grant(ada, hostId, ['units.*'], `host:${hostId}`);
      await host.grants.refresh();
      expect((await call('list_units')).body.result.units.map((u: any) => [u.name, u.driver, !!u.channel])).toEqual([
        ['sim-1', 'simulated', true],
        ['sim-2', 'simulated', false],
      ]);
      expect((await call('run_program', { unit: 'sim-1', program: 'MOVE 5' })).body.result).toMatchObject({
        ok: false,
        reply: 'ERR not armed (state=idle)',
      });
      expect((await call('arm', { unit: 'sim-1' })).body.result).toEqual({ unit: 'sim-1', ok: true, reply: 'OK ARMED' });
      expect((await call('run_program', { unit: 'sim-1', program: 'MOVE 5; WAIT 5; MOVE -2' })).body.result).toMatchObject({
        ok: true,
        reply: 'OK RUNNING 3 steps',
      });
      let lines: any[] = [];
      for (let i = 0; i < 100 && !lines.some((l) => l.text.startsWith('EVENT done')); i++) {
        await new Promise((r) => setTimeout(r, 20));
        lines = (await call('read_channel', { unit: 'sim-1' })).body.result.lines;
      }
      expect(lines.filter((l) => l.dir === 'in' && l.text.startsWith('EVENT')).map((l) => l.text)).toEqual([
        'EVENT step 1/3 MOVE pos=5',
        'EVENT step 2/3 WAIT pos=5',
        'EVENT step 3/3 MOVE pos=3',
        'EVENT done pos=3',
      ]);
      const after = lines.at(-1).seq;
      expect((await call('read_channel', { unit: 'sim-1', after })).body.result.lines).toEqual([]);
      expect((await call('send_command', { unit: 'sim-1', command: 'FLY' })).body.result).toMatchObject({
        ok: false,
        reply: 'ERR unknown command FLY',
      });
      expect((await call('send_command', { unit: 'sim-1', command: 'PING\nARM' })).status).toBe(400);
      expect((await call('close_channel', { unit: 'sim-1' })).body.result).toEqual({ unit: 'sim-1', closed: true });
      expect((await call('send_command', { unit: 'sim-1', command: 'PING' })).body.error.code).toBe('channel_closed');
      // Stop without an open channel opens one for the command and closes it again.
      expect((await call('stop', { unit: 'sim-2' })).body.result).toMatchObject({ ok: true });
      expect(host.units.isOpen('sim-2')).toBe(false);

      // The journal: every action before the unit saw it, its result after, refusals too.
      expect(received.length).toBeGreaterThan(0);
      expect(received.filter((r) => !r.journaled)).toEqual([]);
      const journal = (await call('read_journal', { limit: 1000 })).body.result.entries;
      const actions = journal.filter((e: any) => e.kind === 'action');
      expect(actions.map((e: any) => [e.tool, e.unit, e.line])).toEqual([
        ['open_channel', 'sim-1', 'open'],
        ['send_command', 'sim-1', 'PING'],
        ['stop', 'sim-1', 'STOP'],
        ['run_program', 'sim-1', 'RUN MOVE 5'],
        ['arm', 'sim-1', 'ARM'],
        ['run_program', 'sim-1', 'RUN MOVE 5; WAIT 5; MOVE -2'],
        ['send_command', 'sim-1', 'FLY'],
        ['close_channel', 'sim-1', 'close'],
        ['stop', 'sim-2', 'STOP'],
      ]);
      for (const a of actions) {
        const result = journal.find((e: any) => e.kind === 'result' && e.ref === a.seq);
        expect(result.seq).toBeGreaterThan(a.seq);
      }
      expect(journal.filter((e: any) => e.kind === 'refused').map((e: any) => e.tool)).toEqual(
        expect.arrayContaining(['arm', 'stop', 'list_units', 'open_channel']),
      );
      expect(journal.every((e: any) => e.caller.via === 'local')).toBe(true);
      // The journal reads back from where one left off.
      const tail = (await call('read_journal', { after: journal.at(-2).seq })).body.result;
      expect(tail.entries.map((e: any) => e.seq)).toEqual([journal.at(-1).seq]);
    } finally {
      await host.stop();
    }
  });
});

/** Tries a WebSocket upgrade of /hosts/connect; resolves with the HTTP status of a refusal, or 101. */
function upgrade(url: string, secret: string | undefined, path = '/v1/hosts/connect'): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + path, { headers: secret ? { authorization: `Bearer ${secret}` } : {} });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.close();
    });
    ws.on('error', () => {});
  });
}

describe('the connection out: platform calls reach a running host with no inbound port', () => {
  let second: RunningGateway;
  beforeAll(async () => {
    // A second gateway replica on the same backends: the host connects to it, calls arrive at the first.
    second = await startGateway({
      config: t.stack.config,
      log: t.stack.log,
      backends: t.stack.backends,
      registry: t.stack.registry,
      host: '127.0.0.1',
      port: 0,
      version: 'test',
      settings: gatewaySettingsSchema.parse({}),
    });
  });
  afterAll(async () => {
    await second?.stop(500);
  });

  test('pair, connect, call through another replica, reconnect, unpair', async () => {
    const ada = await person();
    const bob = await person();
    const { hostId, credential } = await pair(ada);
    const hostCall = (key: string, tool: string, args: object = {}) =>
      t.call('POST', `/hosts/${hostId}/call`, { key, body: { tool, arguments: args } });

    // Not connected: 503 host_offline.
    const offline = await hostCall(ada.key, 'list_units');
    expect(offline.status).toBe(503);
    expect(offline.body).toEqual(ERROR_BODY);
    expect(offline.body.error.code).toBe('host_offline');

    // Only a host credential opens the connection.
    const secondUrl = `http://127.0.0.1:${second.port}`;
    expect(await upgrade(secondUrl, undefined)).toBe(401);
    expect(await upgrade(secondUrl, ada.key)).toBe(401);
    expect(await upgrade(secondUrl, `svch_${'0'.repeat(64)}`)).toBe(401);
    expect((await t.call('GET', '/hosts/connect', { key: credential })).status).toBe(426);

    const dataDir = tempDir();
    const host = await startHost({
      credential,
      baseUrl: secondUrl,
      port: 0,
      dataDir,
      units: new Map([['sim-1', new SimulatedDriver({ msPerUnit: 1 })]]),
      log: createLog({ silent: true }),
      backoff: { minMs: 50, maxMs: 200 },
    });
    try {
      await host.connection!.when((c) => c.state === 'open' && c.hostId === hostId);
      await host.grants.refresh();

      // Connected, but no grant: the host answers with a tool error naming the verb.
      const refused = await t.ok('POST', `/hosts/${hostId}/call`, ada.key, { tool: 'list_units' });
      expect(refused.body.result).toMatchObject({ isError: true, structuredContent: { error: { code: 'grant_required' } } });
      expect(refused.body.result.content[0].text).toMatch(/units\.list/);

      // A grant given now is pushed down the connection: the host reads its grants again at once
      // (its own poll is a minute away).
      await grant(ada, hostId, ['units.*'], `host:${hostId}`);
      let listed: any;
      for (let i = 0; i < 100; i++) {
        listed = (await hostCall(ada.key, 'list_units')).body;
        if (!listed.result?.isError) break;
        await new Promise((r) => setTimeout(r, 30));
      }
      expect(listed).toMatchObject({
        hostId,
        tool: 'list_units',
        result: { structuredContent: { units: [{ name: 'sim-1', driver: 'simulated' }] } },
      });

      const opened = await hostCall(ada.key, 'open_channel', { unit: 'sim-1' });
      expect(opened.status).toBe(200);
      const armed = await hostCall(ada.key, 'arm', { unit: 'sim-1' });
      expect(armed.body.result.structuredContent).toEqual({ unit: 'sim-1', ok: true, reply: 'OK ARMED' });
      // Bob, with hosts.call on this host from Ada, reaches it too.
      await grant(ada, bob.id, ['hosts.call'], `host:${hostId}`);
      expect((await hostCall(bob.key, 'stop', { unit: 'sim-1' })).body.result.structuredContent).toMatchObject({ ok: true });

      // The journal names the platform call and who made it.
      const entries = (await control(host.endpoint.port, credential, 'read_journal')).body.result.entries;
      const arm = entries.find((e: any) => e.kind === 'action' && e.tool === 'arm');
      expect(arm.caller).toEqual({ via: 'platform', callId: armed.body.callId, principal: { kind: 'human', id: ada.id } });
      expect(entries.find((e: any) => e.kind === 'action' && e.tool === 'stop').caller.principal).toEqual({ kind: 'human', id: bob.id });

      // The connection drops: the host connects again by itself.
      (host.connection as any).ws.terminate();
      await host.connection!.when((c) => c.state !== 'open');
      await host.connection!.when((c) => c.state === 'open');
      let again: any;
      for (let i = 0; i < 50; i++) {
        again = await hostCall(ada.key, 'read_channel', { unit: 'sim-1' });
        if (again.status === 200) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(again.body.result.structuredContent.lines.map((l: any) => l.text)).toEqual(expect.arrayContaining(['ARM', 'OK ARMED', 'STOP']));

      // Unpairing cuts the connection, and the host stops trying.
      expect((await t.call('DELETE', `/hosts/${hostId}`, { key: ada.key })).status).toBe(200);
      await host.connection!.when((c) => c.state === 'rejected');
      expect(await upgrade(secondUrl, credential)).toBe(401);
      expect((await hostCall(ada.key, 'list_units')).status).toBe(404);
      expect((await t.call('GET', '/standing-grants/held', { key: credential })).status).toBe(401);
    } finally {
      await host.stop();
    }
  });

  test('a host credential reads what a host may read, and nothing else', async () => {
    const ada = await person();
    const { hostId, credential } = await pair(ada);
    expect((await t.ok('GET', '/standing-grants/held', credential)).body).toEqual({ grants: [], nextCursor: null });
    expect((await t.ok('GET', '/me', credential)).body).toMatchObject({ kind: 'host', accountId: ada.id, keyId: hostId });
    for (const [method, p] of [
      ['GET', `/accounts/${ada.id}/hosts`],
      ['POST', `/hosts/${hostId}/call`],
      ['GET', '/agents'],
    ]) {
      const r = await t.call(method, p, { key: credential, body: method === 'POST' ? { tool: 'x' } : undefined });
      expect([p, r.status, r.body.error.code]).toEqual([p, 401, 'invalid_api_key']);
    }
  });
});

const CLI = path.join(__dirname, '..', '..', 'apps', 'host', 'dist', 'cli.js');

/** A real MCP client speaking to `svc-host mcp` over stdio, the way an editor or agent runs it. */
async function relayClient(env: Record<string, string>) {
  const stderr: string[] = [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    env: { PATH: process.env.PATH ?? '', HOME: tempDir(), XDG_CONFIG_HOME: tempDir(), ...env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (c: Buffer) => stderr.push(c.toString()));
  const client = new Client({ name: 'host-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr, close: () => client.close() };
}

describe('the stdio MCP relay', () => {
  test('a real MCP client acts through the relay; without a credential it reads but does not act', async () => {
    const ada = await person();
    const { hostId, credential } = await pair(ada);
    await grant(ada, hostId, ['units.list', 'units.open', 'units.arm', 'units.read', 'units.journal'], `host:${hostId}`);
    const dataDir = tempDir();
    const unitsFile = path.join(tempDir(), 'units.json');
    fs.writeFileSync(unitsFile, JSON.stringify({ units: [{ name: 'stage', driver: 'simulated' }] }));
    const host = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir,
      units: new Map([['stage', new SimulatedDriver()]]),
      log: createLog({ silent: true }),
      connect: false,
    });
    await host.grants.refresh();
    const env = { SVC_BASE_URL: t.url, SVC_HOST_DATA_DIR: dataDir, SVC_HOST_UNITS_FILE: unitsFile };
    const full = await relayClient({ ...env, SVC_HOST_CREDENTIAL: credential });
    try {
      const { tools } = await full.client.listTools();
      // The unit tools (the project tools are tested in host-tools.test.ts).
      expect(tools.map((x) => x.name)).toEqual(
        expect.arrayContaining([
          'arm',
          'close_channel',
          'list_grants',
          'list_units',
          'open_channel',
          'read_channel',
          'read_journal',
          'run_program',
          'send_command',
          'stop',
        ]),
      );
      expect(tools).toHaveLength(TOOLS.length);
      expect(tools.find((x) => x.name === 'read_channel')!.annotations).toMatchObject({ readOnlyHint: true });
      expect(tools.find((x) => x.name === 'arm')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });

      const units = await full.client.callTool({ name: 'list_units', arguments: {} });
      expect(units.structuredContent).toMatchObject({ units: [{ name: 'stage', driver: 'simulated', state: 'idle' }] });
      expect((await full.client.callTool({ name: 'open_channel', arguments: { unit: 'stage' } })).isError).toBeFalsy();
      const armed = await full.client.callTool({ name: 'arm', arguments: { unit: 'stage' } });
      expect(armed.structuredContent).toEqual({ unit: 'stage', ok: true, reply: 'OK ARMED' });
      // A verb the host does not hold: a tool error naming it.
      const run = await full.client.callTool({ name: 'run_program', arguments: { unit: 'stage', program: 'MOVE 1' } });
      expect(run.isError).toBe(true);
      expect((run.content as any)[0].text).toMatch(/units\.run/);

      // No credential: the journal and the units file read; acting says why it cannot.
      const ro = await relayClient(env);
      try {
        expect((await ro.client.listTools()).tools).toHaveLength(TOOLS.length);
        const journal = await ro.client.callTool({ name: 'read_journal', arguments: {} });
        expect((journal.structuredContent as any).entries.filter((e: any) => e.kind === 'action').map((e: any) => e.tool)).toEqual([
          'open_channel',
          'arm',
        ]);
        const listed = await ro.client.callTool({ name: 'list_units', arguments: {} });
        expect(listed.structuredContent).toMatchObject({ units: [{ name: 'stage', driver: 'simulated', live: false }] });
        for (const [name, args] of [
          ['arm', { unit: 'stage' }],
          ['stop', { unit: 'stage' }],
          ['send_command', { unit: 'stage', command: 'PING' }],
        ] as const) {
          const r = await ro.client.callTool({ name, arguments: args });
          expect([name, r.isError, (r.structuredContent as any).error.code]).toEqual([name, true, 'read_only']);
          expect((r.content as any)[0].text).toMatch(/no host credential, so it is read-only/);
        }
        expect((await ro.client.callTool({ name: 'list_grants', arguments: {} })).structuredContent).toMatchObject({
          error: { code: 'credential_required' },
        });
        // Nothing reached the unit: the journal holds the same two actions.
        expect(((await host.control.call('read_journal', {}, { via: 'local' })) as any).entries.filter((e: any) => e.kind === 'action')).toHaveLength(
          2,
        );
        expect(ro.stderr.join('')).toMatch(/relay: serving MCP on stdio/);
      } finally {
        await ro.close();
      }
      expect(full.stderr.join('')).not.toContain(credential.slice(5));
    } finally {
      await full.close();
      await host.stop();
    }
    // The host gone: the relay says so instead of failing.
    const orphan = await relayClient({ ...env, SVC_HOST_CREDENTIAL: credential });
    try {
      const r = await orphan.client.callTool({ name: 'list_units', arguments: {} });
      expect(r.structuredContent).toMatchObject({ error: { code: 'host_not_running' } });
    } finally {
      await orphan.close();
    }
  });
});
