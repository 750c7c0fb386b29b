#!/usr/bin/env node
'use strict';
// The rate limiter's cost on the cheapest authenticated request (GET /me): two stacks of this
// checkout at once, A without limits (SVC_RATE_LIMITS=off) and B with limits too high to refuse
// (every request takes its tokens: from the local lease, and from Redis once per 50 requests),
// each pinned to core 1 and the load to core 0; rounds alternate, the verdict is the median ratio.
// Usage: node scripts/bench/rate-limit.js [rounds=3] [seconds=2]    (about 40 s, half of it starting the stacks)
const { execSync } = require('node:child_process');

const { load, measure, startTarget } = require('./lib.js');

async function main() {
  const [rounds = '3', seconds = '2'] = process.argv.slice(2);
  const pin = (cpu, pid) => {
    try {
      execSync(`taskset -acp ${cpu} ${pid}`, { stdio: 'ignore' });
    } catch {
      console.warn('taskset failed: the targets are not pinned');
    }
  };
  pin(0, process.pid);
  const before = new Set(execSync('pgrep -f scripts/bench/target.js || true').toString().split('\n').filter(Boolean));
  const a = await startTarget('stack', { SVC_RATE_LIMITS: 'off', SVC_RATE_LIMITS_ACCOUNT: 'off' });
  const b = await startTarget('stack').catch(async (err) => {
    await a.stop();
    throw err;
  });
  for (const pid of execSync('pgrep -f scripts/bench/target.js || true').toString().split('\n').filter(Boolean)) {
    if (!before.has(pid)) pin(1, pid);
  }
  // Stopped from outside (a timeout): the targets go too.
  process.once('SIGTERM', () => Promise.all([a.stop(), b.stop()]).then(() => process.exit(143)));
  const ha = { authorization: `Bearer ${a.key}` };
  const hb = { authorization: `Bearer ${b.key}` };
  const rows = { A: [], B: [] };
  try {
    await load({ port: a.port, path: '/me', headers: ha, seconds: 2 });
    await load({ port: b.port, path: '/me', headers: hb, seconds: 2 });
    for (let i = 0; i < Number(rounds); i++) {
      rows.A.push(await measure(a, '/me', ha, Number(seconds)));
      rows.B.push(await measure(b, '/me', hb, Number(seconds)));
    }
  } finally {
    await a.stop();
    await b.stop();
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  for (const k of ['A', 'B']) console.log(k, rows[k].map((r) => `${r.rps.toFixed(0)} req/s ${r.cpuPerRequestUs.toFixed(1)} µs`).join(' | '));
  const rps = rows.B.map((r, i) => r.rps / rows.A[i].rps);
  const cpu = rows.B.map((r, i) => r.cpuPerRequestUs / rows.A[i].cpuPerRequestUs);
  console.log(
    `GET /me, limits on / off: requests per second ${pct(median(rps))} (rounds ${rps.map(pct).join(' ')}), CPU per request ${pct(median(cpu))}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
