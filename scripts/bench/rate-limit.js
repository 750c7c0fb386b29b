#!/usr/bin/env node
'use strict';
// The rate limiter's cost on the cheapest authenticated request (GET /me): two stacks of this
// checkout at once, A without limits (SVC_RATE_LIMITS=off) and B with limits too high to refuse
// (every request takes its tokens: from the local lease, and from Redis once per 50 requests),
// each pinned to core 1 and the load to core 0; rounds alternate, the verdict is the median ratio.
// Usage: node scripts/bench/rate-limit.js [rounds=3] [seconds=2]    (about 40 s, half of it starting the stacks)
//        node scripts/bench/rate-limit.js admission                 (the limiter alone, in process: a few seconds)
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
  await perAdmission();
}

/** The limiter alone, in this process: CPU per admission on memory and (with REDIS_URL) Redis buckets. */
async function perAdmission() {
  const { RateLimiter } = require('@svc/gateway/dist/rate-limit.js');
  const { createMemoryCache, createRedisCache } = require('@svc/kit');
  const { routes } = require('@svc/api');
  const me = routes.find((r) => r.id === 'me.get');
  const big = { capacity: 1e9, windowSeconds: 1 };
  const limits = { read: big, write: big, compute: big };
  const principal = { kind: 'human', accountId: 'acct_bench', keyId: 'key_bench', userId: 'usr_bench', channel: 'api' };
  const caches = [['memory', createMemoryCache()]];
  if (process.env.REDIS_URL) caches.push(['redis', createRedisCache(process.env.REDIS_URL, `rlbench${Date.now()}`)]);
  for (const [name, cache] of caches) {
    const limiter = new RateLimiter(cache, limits, limits);
    const admit = async () => {
      const a = limiter.admit(me, principal);
      if (a instanceof Promise) await a;
    };
    for (let i = 0; i < 20_000; i++) await admit();
    const n = 200_000;
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) await admit();
    const used = process.cpuUsage(before);
    console.log(`admission on ${name} buckets: ${((used.user + used.system) / n).toFixed(2)} µs CPU`);
    limiter.close();
    await cache.close();
  }
}

(process.argv[2] === 'admission' ? perAdmission() : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
