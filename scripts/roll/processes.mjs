// A rolling restart of every service under load, with plain processes instead of pods: the same
// measurement as `scripts/image/kube.sh --roll` (docs/deploy.md#rolling-restarts) without an
// image or podman, on the code of this checkout (npm run build first).
//   node scripts/roll/processes.mjs [--replicas 2] [--prestop 5] [--grace 30] [--only gateway,keys]
// Environment: DATABASE_URL (an admin URL of PostgreSQL: a database svc_roll_<id> is made and
// dropped), REDIS_URL, NATS_URL. Drive content goes to a folder all processes share.
//
// Each service runs as `replicas` processes (apps/stack, SVC_SERVICE=<name>), behind a TCP proxy
// standing in for its Kubernetes Service: new connections go round-robin to the replicas whose
// readiness passes (gRPC health SERVING; GET /ready 200 for the gateway and the runtime), never to
// a stopping one. A restart, per replica: a new one is started and must be ready (maxSurge 1,
// maxUnavailable 0), then the old one leaves the proxy, waits `prestop` seconds (the chart's
// preStop sleep), gets SIGTERM, and SIGKILL at `grace` seconds after the preStop began. The load is
// scripts/image/kube/load.mjs's (6 clients, a mix of reads and writes, retried only as the
// contract allows); every acknowledged write is read back at the end.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { adminSql, dropStreams } from '../image/kube/admin.mjs';
import { grpcServing } from '../image/kube/cluster.mjs';
import { client, failed, percentile, startLoad, summarize, verifyWrites } from '../image/kube/load.mjs';

const require = createRequire(import.meta.url);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { GRPC_SERVICE_NAMES, SERVICE_NAMES } = require(join(ROOT, 'packages/kit/dist/catalogue.js'));
const { freePort } = require(join(ROOT, 'scripts/faults/backends.js'));

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const replicas = Number(opt('replicas', 2));
const preStopMs = Number(opt('prestop', 5)) * 1000;
const graceMs = Number(opt('grace', 30)) * 1000;
const only = opt('only', '').split(',').filter(Boolean);
const t0 = Date.now();
const log = (m) => process.stderr.write(`roll: +${((Date.now() - t0) / 1000).toFixed(0)} s ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const runId = randomBytes(3).toString('hex');
const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `svc_roll_${runId}`;
const dbUrl = Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString();
const dataDir = mkdtempSync(join(tmpdir(), 'svc-roll-'));
const bootstrapKey = `svc_${randomBytes(32).toString('hex')}`;

const sql = (statement) => adminSql(adminUrl, statement);

/** A Service: a TCP proxy to the ready replicas of one service (a stopping one is no endpoint). */
async function serviceProxy(pods, name) {
  const port = await freePort();
  let next = 0;
  const server = createServer((socket) => {
    const ready = pods.filter((p) => p.name === name && p.ready && !p.terminating);
    if (!ready.length) return socket.destroy();
    const pod = ready[next++ % ready.length];
    const upstream = createConnection({ host: '127.0.0.1', port: pod.port });
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { port, server };
}

async function main() {
  await sql(`CREATE DATABASE "${database}"`);
  const pods = [];
  const proxies = {};
  for (const name of SERVICE_NAMES) proxies[name] = await serviceProxy(pods, name);
  const common = {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    GRPC_HOST: '127.0.0.1',
    DATABASE_URL: dbUrl,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `rp${runId}`,
    SVC_BOOTSTRAP_KEY: bootstrapKey,
    SVC_INTERNAL_SECRET: randomBytes(32).toString('hex'),
    SVC_MODELS_KEK: `k1:${randomBytes(32).toString('base64')}`,
    SVC_TRADING_KEK: `k1:${randomBytes(32).toString('base64')}`,
    SVC_TRADING_ALPACA_URL: 'off',
    ...Object.fromEntries(GRPC_SERVICE_NAMES.map((n) => [`SVC_${n.toUpperCase()}_ADDR`, `127.0.0.1:${proxies[n].port}`])),
  };
  let serial = 0;
  const startPod = async (name) => {
    const port = await freePort();
    const grpc = GRPC_SERVICE_NAMES.includes(name);
    const child = spawn(process.execPath, ['--require', './packages/kit/dist/tracing/register.js', './apps/stack/dist/main.js'], {
      cwd: ROOT,
      env: { ...common, SVC_SERVICE: name, ...(grpc ? { GRPC_PORT: String(port) } : { PORT: String(port) }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pod = { name, id: `${name}-${++serial}`, port, grpc, child, ready: false, terminating: false, out: '' };
    const keep = (d) => (pod.out = (pod.out + d).slice(-8000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('exit', (code, signal) => {
      pod.exit = code ?? signal;
      pod.ready = false;
      if (!pod.terminating) log(`${pod.id} exited ${pod.exit} unasked:\n${pod.out.slice(-2000)}`);
    });
    pods.push(pod);
    return pod;
  };
  // Readiness every 2 s (the chart's is 5 s; 2 failures): a probe that fails takes the replica out.
  const probe = async (pod) => {
    try {
      if (pod.grpc) return await grpcServing('127.0.0.1', pod.port, '', 3000);
      const res = await fetch(`http://127.0.0.1:${pod.port}/ready`, { signal: AbortSignal.timeout(3000) });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  };
  let probing = true;
  const prober = (async () => {
    while (probing) {
      await Promise.all(pods.filter((p) => p.exit === undefined && !p.terminating).map(async (p) => (p.ready = await probe(p))));
      await sleep(2000);
    }
  })();
  const waitReady = async (pod, ms) => {
    const end = Date.now() + ms;
    while (!pod.ready) {
      if (pod.exit !== undefined || Date.now() > end) throw new Error(`${pod.id} not ready (exit ${pod.exit}):\n${pod.out.slice(-3000)}`);
      await sleep(250);
    }
  };
  const stopPod = async (pod) => {
    pod.terminating = true;
    pod.ready = false;
    const from = Date.now();
    await sleep(preStopMs);
    const sent = Date.now();
    const exited = new Promise((r) => (pod.exit !== undefined ? r() : pod.child.once('exit', () => r())));
    pod.child.kill('SIGTERM');
    const killer = setTimeout(() => pod.child.kill('SIGKILL'), Math.max(0, graceMs - (sent - from)));
    await exited;
    clearTimeout(killer);
    return { pod: pod.id, exit: pod.exit, stopMs: Date.now() - sent };
  };

  try {
    const names = SERVICE_NAMES;
    for (const name of names) for (let i = 0; i < replicas; i++) await startPod(name);
    await Promise.all(pods.map((p) => waitReady(p, 300_000)));
    log(`${pods.length} processes ready`);
    const base = `http://127.0.0.1:${proxies.gateway.port}`;
    const operator = client(base, bootstrapKey);
    const person = await operator('POST', '/v1/accounts', { json: { kind: 'user', name: 'roll' } });
    if (person.status !== 201 && person.status !== 200) throw new Error(`POST /v1/accounts: ${person.status} ${JSON.stringify(person.body)}`);
    const call = client(base, person.body.key);
    const agent = await call('POST', '/v1/agents', { json: { name: 'roll' } });
    if (agent.status >= 300) throw new Error(`POST /v1/agents: ${agent.status} ${JSON.stringify(agent.body)}`);

    const load = startLoad({ call, agentId: agent.body.id });
    await sleep(10_000);
    const phases = [];
    for (const name of only.length ? only : names) {
      const from = Date.now();
      const stops = [];
      for (const old of pods.filter((p) => p.name === name && !p.terminating && p.exit === undefined)) {
        await waitReady(await startPod(name), 300_000);
        stops.push(await stopPod(old));
      }
      const to = Date.now();
      const phase = { service: name, ...summarize(load.requests, from, to), stops };
      phases.push(phase);
      log(
        `${name}: ${phase.seconds} s, ${phase.requests} requests, ${phase.failed.length} failed, ${phase.retried} retried after 429/503/409, ` +
          `${phase.closed} after a closed connection, p99 ${phase.p99} ms; ${stops.map((s) => `${s.pod} exit ${s.exit} ${s.stopMs} ms after SIGTERM`).join(', ')}`,
      );
      for (const f of phase.failed) log(`  failed: ${f.op} ${f.status} ${f.code ?? f.error ?? ''}`);
    }
    await sleep(5000);
    const { requests, writes } = await load.stop();
    const lost = await verifyWrites(call, writes);
    const line = (cells) => `| ${cells.join(' | ')} |`;
    const out = [
      line([
        'service restarted',
        'restart (s)',
        'requests',
        'failed',
        'retried: 429/503/409',
        'retried: connection closed',
        'p99 (ms)',
        'exit codes',
      ]),
      line(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---']),
      ...phases.map((p) =>
        line([p.service, p.seconds, p.requests, p.failed.length, p.retried, p.closed, p.p99, p.stops.map((s) => s.exit).join(', ')]),
      ),
      '',
      `${requests.length} requests in all, ${requests.filter(failed).length} failed, p99 ${Math.round(
        percentile(
          requests.map((r) => r.ms),
          99,
        ),
      )} ms; ` + `${writes.length} acknowledged writes read back, ${lost.length} lost.`,
      ...lost.slice(0, 20).map((l) => `lost: ${JSON.stringify(l)}`),
    ];
    process.stdout.write(`${out.join('\n')}\n`);
    const bad = requests.filter(failed).length || lost.length || phases.some((p) => p.stops.some((s) => s.exit !== 0));
    process.exitCode = bad ? 1 : 0;
  } finally {
    probing = false;
    await prober;
    for (const p of pods.filter((x) => x.exit === undefined)) {
      p.terminating = true;
      p.child.kill('SIGKILL');
    }
    for (const p of Object.values(proxies)) p.server.close();
    await sleep(500);
    await sql(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch((err) => log(`drop database: ${err.message}`));
    await dropStreams(common.NATS_URL, common.SVC_NAMESPACE).catch((err) => log(`drop streams: ${err.message}`));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  log(`failed: ${err.stack ?? err}`);
  process.exit(1);
});
