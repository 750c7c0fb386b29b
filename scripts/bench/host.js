#!/usr/bin/env node
// Local host benchmark (docs/host.md): one control tool call three ways, each beside the others in
// the same run, sequential calls, latency p50/p99:
// - direct: POST /control/<tool> on the host's loopback endpoint (keep-alive HTTP, the credential);
// - relay: the same tool through `svc-host mcp` (a real MCP client over stdio, official SDK), which
//   relays to that endpoint: relay − direct is what the relay adds (target ≤ 5 ms);
// - platform: POST /hosts/:id/call on an embedded stack's gateway, which reaches the host through
//   the accounts service, the bus and the host's WebSocket connection out.
// Tools: list_units (no journal write) and send_command PING (journaled and fsync'd before it is
// sent, so the disk's fsync time is in it). The host runs as its own process (`svc-host serve`).
//
//   npm run build && node scripts/bench/host.js
//
// Options (environment): BENCH_SAMPLES (300 per tool and path).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const CLI = path.join(__dirname, '..', '..', 'packages', 'host', 'dist', 'cli.js');

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (x) => x.toFixed(2);

async function sequential(n, call) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    out.push(performance.now() - t);
  }
  return out;
}

function client(port, auth, hostHeader = `127.0.0.1:${port}`) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const request = (method, p, body) =>
    new Promise((resolve, reject) => {
      const payload = body ? Buffer.from(JSON.stringify(body)) : undefined;
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: p,
          agent,
          setHost: false,
          headers: {
            host: hostHeader,
            authorization: `Bearer ${auth}`,
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { request, close: () => agent.destroy() };
}

async function main() {
  const { startStack } = require('@svc/stack');
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
  console.log(
    `host bench: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${SAMPLES} sequential calls per tool and path`,
  );

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-host-'));
  const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-hostdata-'));
  const stack = await startStack({
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
  });
  const baseUrl = `http://127.0.0.1:${stack.port}`;
  const operator = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  const api = client(stack.port, operator);
  let hostProc;
  let mcp;
  try {
    const user = (await api.request('POST', '/accounts', { kind: 'user', name: 'bench' })).body;
    const me = client(stack.port, user.key);
    const paired = (await me.request('POST', `/accounts/${user.account.id}/hosts`, { name: 'bench machine' })).body;
    const hostId = paired.host.id;
    await me.request('POST', `/accounts/${user.account.id}/standing-grants`, { granteeId: hostId, verbs: ['units.*'], scope: `host:${hostId}` });
    const env = { PATH: process.env.PATH, HOME: hostDir, SVC_BASE_URL: baseUrl, SVC_HOST_DATA_DIR: hostDir, SVC_HOST_CREDENTIAL: paired.credential };
    hostProc = spawn(process.execPath, [CLI, 'serve'], { env: { ...env, SVC_HOST_PORT: '0' }, stdio: ['ignore', 'ignore', 'ignore'] });
    const endpointFile = path.join(hostDir, 'endpoint.json');
    for (let i = 0; i < 200 && !fs.existsSync(endpointFile); i++) await new Promise((r) => setTimeout(r, 25));
    const { port } = JSON.parse(fs.readFileSync(endpointFile, 'utf8'));
    const local = client(port, paired.credential);
    const platformCall = (tool, args) => me.request('POST', `/hosts/${hostId}/call`, { tool, arguments: args });
    // Connected and holding its grant.
    for (let i = 0; ; i++) {
      const r = await platformCall('list_units', {});
      if (r.status === 200 && !r.body.result.isError) break;
      if (i > 200) throw new Error(`host not ready: ${JSON.stringify(r.body)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    await local.request('POST', '/control/open_channel', { unit: 'sim-1' });

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: { ...env, SVC_HOST_PORT: String(port) },
      stderr: 'ignore',
    });
    mcp = new Client({ name: 'bench', version: '1' });
    await mcp.connect(transport);

    const cases = [
      ['list_units', {}],
      ['send_command', { unit: 'sim-1', command: 'PING' }],
    ];
    for (const [tool, args] of cases) {
      const paths = {
        direct: async () => {
          const r = await local.request('POST', `/control/${tool}`, args);
          if (r.status !== 200) throw new Error(JSON.stringify(r.body));
        },
        relay: async () => {
          const r = await mcp.callTool({ name: tool, arguments: args });
          if (r.isError) throw new Error(JSON.stringify(r.content));
        },
        platform: async () => {
          const r = await platformCall(tool, args);
          if (r.status !== 200 || r.body.result.isError) throw new Error(JSON.stringify(r.body));
        },
      };
      const out = { direct: [], relay: [], platform: [] };
      for (const call of Object.values(paths)) await sequential(30, call); // warm up
      for (let round = 0; round < 4; round++) {
        for (const [name, call] of Object.entries(paths)) out[name].push(...(await sequential(SAMPLES / 4, call)));
      }
      const d = { p50: pct(out.direct, 50), p99: pct(out.direct, 99) };
      console.log(`\n${tool}:`);
      for (const name of ['direct', 'relay', 'platform']) {
        const p50 = pct(out[name], 50);
        const p99 = pct(out[name], 99);
        const added = name === 'direct' ? '' : ` — adds p50 ${fmt(p50 - d.p50)} ms, p99 ${fmt(p99 - d.p99)} ms over direct`;
        console.log(`  ${name.padEnd(8)} p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms${added}`);
      }
    }
    local.close();
    me.close();
  } finally {
    await mcp?.close().catch(() => {});
    hostProc?.kill('SIGTERM');
    api.close();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(hostDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
