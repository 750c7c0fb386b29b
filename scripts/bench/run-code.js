#!/usr/bin/env node
// run_code benchmark (docs/run-code.md): time to first result of a trivial script, and sustained
// calls per second, through the @svc/quickjs package and through POST /code/run on an embedded
// stack, each beside a baseline measured in the same run:
// - package latency against a bare IPC round trip to a forked Node process (the floor of any
//   child-process sandbox);
// - route latency and rate against GET /me (the thinnest authenticated route: key check, no
//   service call), same client, same connections.
//
//   npm run build && node scripts/bench/run-code.js
//
// Two cores: the sandbox pool has two processes (SVC_MCP_RUN_CODE_POOL_SIZE=2) and, when the
// machine has more than two CPUs and `taskset` exists, the whole run (this process, the stack, the
// sandbox processes it forks) is pinned to CPUs 0 and 1 by re-running itself under `taskset -c 0,1`.
// Options (environment): BENCH_SAMPLES (400), BENCH_SECONDS (5), BENCH_CONCURRENCY (4).
'use strict';
const { execFileSync, fork, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 400);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const TRIVIAL = '1 + 1';

function pinToTwoCores() {
  if (process.env.BENCH_PINNED || os.cpus().length <= 2) return false;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    console.log('(more than two CPUs and no taskset: the run is not pinned)');
    return false;
  }
  const r = spawnSync('taskset', ['-c', '0,1', process.execPath, __filename], { stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' } });
  process.exit(r.status ?? 1);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (x) => x.toFixed(2);
const stats = (xs) => ({ median: pct(xs, 50), p99: pct(xs, 99) });

/** Sequential calls; the latency of each, in ms. */
async function sequential(n, call) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    out.push(performance.now() - t);
  }
  return out;
}

/** `concurrency` callers in a loop for `seconds`; calls per second. */
async function sustained(seconds, concurrency, call) {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await call();
        done++;
      }
    }),
  );
  return done / seconds;
}

/** A forked Node process that echoes IPC messages: the floor of a child-process round trip. */
function echoChild() {
  const child = fork(__filename, ['--echo'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  let waiting = null;
  child.on('message', (m) => waiting?.(m));
  return {
    call: () =>
      new Promise((resolve) => {
        waiting = resolve;
        child.send({ type: 'run', id: 1, code: TRIVIAL });
      }),
    stop: () => child.kill('SIGKILL'),
  };
}

function httpClient(port, key) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
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
          headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 200)}`));
            resolve(JSON.parse(text));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { request, close: () => agent.destroy() };
}

async function main() {
  if (pinToTwoCores()) return;
  const { Sandbox } = require('@svc/quickjs');
  const { startStack } = require('@svc/stack');
  const { UNREACHED_LIMITS } = require('./lib.js');
  console.log(
    `run_code bench: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), samples ${SAMPLES}, ${SECONDS} s sustained with ${CONCURRENCY} callers`,
  );

  // 1. The package: a pool of two processes, sequential trivial runs, against a bare IPC echo.
  const sb = new Sandbox({ poolSize: 2 });
  await sb.start();
  while (sb.stats().idle < 2) await new Promise((r) => setTimeout(r, 20));
  const echo = echoChild();
  await sequential(50, echo.call);
  await sequential(50, () => sb.run({ code: TRIVIAL }));
  const pkg = [];
  const ipc = [];
  for (let round = 0; round < 4; round++) {
    ipc.push(...(await sequential(SAMPLES / 4, echo.call)));
    pkg.push(...(await sequential(SAMPLES / 4, () => sb.run({ code: TRIVIAL }))));
  }
  const inChild = [];
  for (let i = 0; i < 50; i++) inChild.push((await sb.run({ code: TRIVIAL })).durationMs);
  const pkgRate = await sustained(SECONDS, CONCURRENCY, () => sb.run({ code: TRIVIAL }));
  echo.stop();
  await sb.close();
  const p = stats(pkg);
  const e = stats(ipc);
  console.log(`\npackage (Sandbox.run, pool of 2):`);
  console.log(
    `  time to first result, trivial script: median ${fmt(p.median)} ms, p99 ${fmt(p.p99)} ms (inside the child: median ${fmt(pct(inChild, 50))} ms)`,
  );
  console.log(`  baseline, IPC echo to a forked process: median ${fmt(e.median)} ms, p99 ${fmt(e.p99)} ms`);
  console.log(`  sustained: ${pkgRate.toFixed(0)} runs/s with ${CONCURRENCY} callers`);

  // 2. The route: an embedded stack, POST /code/run against GET /me on the same client.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-code-'));
  const stack = await startStack({
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
    SVC_MCP_RUN_CODE_POOL_SIZE: '2',
    SVC_MCP_RUN_CODE_MAX_QUEUE: '256',
    // Limits it never reaches: the benchmark measures the route, not the limiter's refusals.
    SVC_RATE_LIMITS: UNREACHED_LIMITS,
    SVC_RATE_LIMITS_ACCOUNT: UNREACHED_LIMITS,
  });
  const key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  const client = httpClient(stack.port, key);
  try {
    const runCode = () => client.request('POST', '/code/run', { code: TRIVIAL });
    const me = () => client.request('GET', '/me');
    const first = await runCode();
    if (first.result !== 2) throw new Error(`unexpected answer ${JSON.stringify(first)}`);
    await sequential(50, runCode);
    await sequential(50, me);
    const route = [];
    const base = [];
    for (let round = 0; round < 4; round++) {
      base.push(...(await sequential(SAMPLES / 4, me)));
      route.push(...(await sequential(SAMPLES / 4, runCode)));
    }
    const meRate = await sustained(SECONDS, CONCURRENCY, me);
    const routeRate = await sustained(SECONDS, CONCURRENCY, runCode);
    const r = stats(route);
    const b = stats(base);
    console.log(`\nroute (POST /code/run, embedded stack, pool of 2):`);
    console.log(`  time to first result, trivial script: median ${fmt(r.median)} ms, p99 ${fmt(r.p99)} ms`);
    console.log(`  baseline GET /me: median ${fmt(b.median)} ms, p99 ${fmt(b.p99)} ms; run_code ÷ /me median ${fmt(r.median / b.median)}×`);
    console.log(
      `  sustained: ${routeRate.toFixed(0)} calls/s with ${CONCURRENCY} callers; GET /me ${meRate.toFixed(0)} req/s (${((100 * routeRate) / meRate).toFixed(1)}%)`,
    );
  } finally {
    client.close();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--echo') {
  process.on('message', (m) => process.send(m));
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
