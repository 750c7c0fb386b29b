/**
 * The local host on its own (no platform): the credential rules, the command line, and every
 * refusal of the loopback endpoint.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { createLog, loadCredential, type RunningHost, SimulatedDriver, startHost } from '@svc/host';

import { tempDir } from '../support/backends';
import { control, rawRequest } from '../support/host';

const CLI = path.join(__dirname, '..', '..', 'apps', 'host', 'dist', 'cli.js');
const credential = () => `svch_${randomBytes(32).toString('hex')}`;

function runCli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: tempDir(), SVC_BASE_URL: 'http://127.0.0.1:1', SVC_HOST_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('the host credential', () => {
  test('a credential on the command line: the host refuses to start, says why, and never echoes it', () => {
    const secret = credential();
    for (const args of [
      ['serve', secret],
      ['serve', `--credential=${secret}`],
      ['--token', 'x'],
      ['mcp', secret],
    ]) {
      const r = runCli(args, { SVC_HOST_DATA_DIR: tempDir() });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/command line is refused.*SVC_HOST_CREDENTIAL/s);
      expect(r.stderr + r.stdout).not.toContain(secret.slice(5));
    }
  });

  test('from SVC_HOST_CREDENTIAL, or from a file only its owner can read', () => {
    const secret = credential();
    expect(loadCredential({ SVC_HOST_CREDENTIAL: secret })).toEqual({ credential: secret, source: 'SVC_HOST_CREDENTIAL' });
    expect(() => loadCredential({ SVC_HOST_CREDENTIAL: 'svc_' + 'a'.repeat(64) })).toThrow(/not a host credential/);
    const dir = tempDir();
    const file = path.join(dir, 'cred');
    fs.writeFileSync(file, secret + '\n', { mode: 0o600 });
    fs.chmodSync(file, 0o600);
    expect(loadCredential({ SVC_HOST_CREDENTIAL_FILE: file })).toEqual({ credential: secret, source: file });
    for (const mode of [0o640, 0o604, 0o660, 0o644]) {
      fs.chmodSync(file, mode);
      expect(() => loadCredential({ SVC_HOST_CREDENTIAL_FILE: file })).toThrow(
        new RegExp(`open to other users \\(mode ${mode.toString(8)}\\).*chmod 600`),
      );
    }
    // The default file lives in the user's config folder; none there means no credential.
    const xdg = tempDir();
    expect(loadCredential({ XDG_CONFIG_HOME: xdg })).toBeUndefined();
    fs.mkdirSync(path.join(xdg, 'svc'));
    fs.writeFileSync(path.join(xdg, 'svc', 'host-credential'), secret, { mode: 0o600 });
    expect(loadCredential({ XDG_CONFIG_HOME: xdg })?.credential).toBe(secret);
    // A named file that is missing is an error, not "no credential".
    expect(() => loadCredential({ SVC_HOST_CREDENTIAL_FILE: path.join(dir, 'missing') })).toThrow(/cannot be read/);
  });

  test('a loose credential file stops the host from starting, with the fix in the message', () => {
    const file = path.join(tempDir(), 'cred');
    const secret = credential();
    fs.writeFileSync(file, secret, { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const r = runCli(['serve'], { SVC_HOST_CREDENTIAL_FILE: file, SVC_HOST_DATA_DIR: tempDir() });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`chmod 600 ${file}`);
    expect(r.stderr).not.toContain(secret.slice(5));
    const none = runCli(['serve'], { SVC_HOST_DATA_DIR: tempDir() });
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/No host credential/);
  });
});

describe('the command line', () => {
  test('--help is the usage on stdout, exit code 0', () => {
    const r = runCli(['--help'], { SVC_HOST_DATA_DIR: tempDir() });
    expect([r.status, r.stdout]).toEqual([0, expect.stringContaining('svc-host mcp')]);
  });

  test('a port already taken: one line saying so and what to do, exit code 2, no stack trace', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const r = runCli(['serve'], { SVC_HOST_CREDENTIAL: credential(), SVC_HOST_DATA_DIR: tempDir(), SVC_HOST_PORT: String(port) });
      expect(r.status).toBe(2);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stderr.trim().split('\n').pop()).toBe(
        `svc-host: The port ${port} on 127.0.0.1 is in use (another svc-host?): stop what holds it, or set SVC_HOST_PORT to a free port.`,
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the local endpoint', () => {
  const secret = credential();
  let host: RunningHost;
  let dataDir: string;
  const logged: string[] = [];

  beforeAll(async () => {
    dataDir = tempDir();
    host = await startHost({
      credential: secret,
      // Nobody listens there: the host cannot read its grants.
      baseUrl: 'http://127.0.0.1:1',
      port: 0,
      dataDir,
      units: new Map([['sim-1', new SimulatedDriver()]]),
      log: createLog({ write: (l) => logged.push(l) }),
    });
  });
  afterAll(async () => {
    await host?.stop();
  });

  test('listens on loopback only: 127.0.0.1 and ::1, nothing else', async () => {
    const ok = (address: string, hostHeader: string) =>
      rawRequest(host.endpoint.port, {
        address,
        headers: { host: hostHeader, authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: '{}',
        path: '/control/list_grants',
      });
    expect((await ok('127.0.0.1', `127.0.0.1:${host.endpoint.port}`)).status).toBe(200);
    expect(host.endpoint.addresses[0]).toBe('127.0.0.1');
    if (host.endpoint.addresses.includes('::1')) expect((await ok('::1', `[::1]:${host.endpoint.port}`)).status).toBe(200);
    // Any other address of this machine is not listened on.
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && !i.internal && i.family === 'IPv4');
    if (external) await expect(ok(external.address, `localhost:${host.endpoint.port}`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  test('refuses any Origin (even null), a foreign Host, OPTIONS, and a missing or wrong credential; never answers CORS', async () => {
    const port = host.endpoint.port;
    const base = { host: `127.0.0.1:${port}`, authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const cases: Array<[Record<string, string>, string | undefined, number, string]> = [
      [{ ...base, origin: 'https://evil.example' }, 'POST', 403, 'origin_refused'],
      [{ ...base, origin: 'null' }, 'POST', 403, 'origin_refused'],
      [{ ...base, origin: `http://127.0.0.1:${port}` }, 'POST', 403, 'origin_refused'],
      [{ ...base, host: `evil.example:${port}` }, 'POST', 403, 'host_refused'],
      [{ ...base, host: `127.0.0.2:${port}` }, 'POST', 403, 'host_refused'],
      [{ ...base, host: `localhost.evil.example` }, 'POST', 403, 'host_refused'],
      [{ ...base, 'access-control-request-method': 'POST' }, 'OPTIONS', 403, 'method_refused'],
      [{ host: base.host, 'content-type': 'application/json' }, 'POST', 401, 'unauthenticated'],
      [{ ...base, authorization: `Bearer ${credential()}` }, 'POST', 401, 'unauthenticated'],
      [{ ...base, authorization: `Basic ${Buffer.from(`x:${secret}`).toString('base64')}` }, 'POST', 401, 'unauthenticated'],
    ];
    for (const [headers, method, status, code] of cases) {
      const r = await rawRequest(port, { method, headers, path: '/control/list_grants', body: method === 'POST' ? '{}' : undefined });
      expect([headers, r.status, r.body?.error?.code]).toEqual([headers, status, code]);
      expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
    // No Host header at all is refused too (node answers 400 for HTTP/1.1 without one).
    const noHost = await rawRequest(port, { headers: { authorization: base.authorization, 'content-type': 'application/json' }, body: '{}' });
    expect([400, 403]).toContain(noHost.status);
    // Localhost names with their port pass.
    for (const h of [`localhost:${port}`, 'localhost', `LOCALHOST:${port}`, `[::1]:${port}`]) {
      expect((await rawRequest(port, { headers: { ...base, host: h }, path: '/control/list_grants', body: '{}' })).status).toBe(200);
    }
    expect(logged.join('')).not.toContain(secret.slice(5));
  });

  test('without its grants the host acts on nothing, and says so; the refusal is journaled', async () => {
    const r = await control(host.endpoint.port, secret, 'arm', { unit: 'sim-1' });
    expect(r.status).toBe(503);
    expect(r.body.error).toEqual({ code: 'grants_unknown', message: expect.stringMatching(/arm needs a standing grant/) });
    const grants = await control(host.endpoint.port, secret, 'list_grants');
    expect(grants.body.result).toEqual({ grants: [], loaded: false, credentialRejected: false });
    const bad = await control(host.endpoint.port, secret, 'arm', { unit: 'sim-1', extra: 1 });
    expect(bad.status).toBe(400);
    expect((await control(host.endpoint.port, secret, 'nope')).status).toBe(404);
    const journal = fs
      .readFileSync(path.join(dataDir, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(journal.map((e) => [e.kind, e.tool, e.error?.code])).toEqual([
      ['refused', 'arm', 'grants_unknown'],
      ['refused', 'arm', 'invalid_arguments'],
    ]);
    expect(fs.statSync(path.join(dataDir, 'journal.jsonl')).mode & 0o777).toBe(0o600);
  });
});
