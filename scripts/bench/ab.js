#!/usr/bin/env node
'use strict';
// An interleaved A/B of one request path between two checkouts of svc (e.g. main and the commit a
// change started from, as a `git worktree`), each built. Both stacks run at once, each pinned to
// core 1 and the load generator to core 0 (taskset), so that the two compete the same way; rounds
// alternate A and B, and the verdict is the median of the per-round ratios.
// Usage: node scripts/bench/ab.js <checkout A> <checkout B> [path=/me] [rounds=6] [seconds=3]
// Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
const { execSync } = require('node:child_process');
const path = require('node:path');

async function main() {
  const [dirA, dirB, route = '/me', rounds = '6', seconds = '3'] = process.argv.slice(2);
  if (!dirA || !dirB) throw new Error('usage: node scripts/bench/ab.js <checkout A> <checkout B> [path] [rounds] [seconds]');
  const A = require(path.resolve(dirA, 'scripts/bench/lib.js'));
  const B = require(path.resolve(dirB, 'scripts/bench/lib.js'));
  const pin = (cpu, pid) => {
    try {
      execSync(`taskset -acp ${cpu} ${pid}`, { stdio: 'ignore' });
    } catch {
      console.warn('taskset failed: the targets are not pinned');
    }
  };
  pin(0, process.pid);
  const before = new Set(execSync('pgrep -f scripts/bench/target.js || true').toString().split('\n').filter(Boolean));
  const a = await A.startTarget('stack');
  const b = await B.startTarget('stack');
  for (const pid of execSync('pgrep -f scripts/bench/target.js || true').toString().split('\n').filter(Boolean)) {
    if (!before.has(pid)) pin(1, pid);
  }
  const ha = { authorization: `Bearer ${a.key}` };
  const hb = { authorization: `Bearer ${b.key}` };
  await A.load({ port: a.port, path: route, headers: ha, seconds: 3 });
  await B.load({ port: b.port, path: route, headers: hb, seconds: 3 });
  const rows = { A: [], B: [] };
  try {
    for (let i = 0; i < Number(rounds); i++) {
      rows.A.push(await A.measure(a, route, ha, Number(seconds)));
      rows.B.push(await B.measure(b, route, hb, Number(seconds)));
    }
  } finally {
    await a.stop();
    await b.stop();
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const pct = (x) => `${(x * 100).toFixed(0)}%`;
  for (const k of ['A', 'B']) console.log(k, rows[k].map((r) => `${r.rps.toFixed(0)} req/s ${r.cpuPerRequestUs.toFixed(1)} µs`).join(' | '));
  const rps = rows.B.map((r, i) => r.rps / rows.A[i].rps);
  const cpu = rows.B.map((r, i) => r.cpuPerRequestUs / rows.A[i].cpuPerRequestUs);
  console.log(`${route}: B/A requests per second ${pct(median(rps))} (rounds ${rps.map(pct).join(' ')}), CPU per request ${pct(median(cpu))}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
