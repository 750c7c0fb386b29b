#!/usr/bin/env node
'use strict';
// Key verification and routing cost, measured in one run on one machine (issue: keys and auth):
//   1. a bare node:http server, 2. a bare express app (same express, one route),
//   3. the same express app on a server that builds requests with express's prototypes, as the
//      gateway's does (services/gateway/src/http-server.ts): how much of the gateway's lead is that,
//   4. the gateway answering an authenticated request that does no further work (GET /me),
//   5. an authenticated request over gRPC to the keys service and SQL (GET /api/api-keys).
// Reports requests/s, p50/p99 latency and the server's CPU time per request, and the ratios
// to bare express. Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
// Usage: node scripts/bench/auth.js [seconds=5]
const { measure, startTarget } = require('./lib.js');

async function main() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 3);
  const specs = [
    ['node:http (bare)', 'node-http', '/x', false],
    ['express (bare, one route)', 'express', '/x', false],
    ['express, requests built with its prototypes (as the gateway)', 'express-preset', '/x', false],
    ['gateway GET /me (auth, no further work)', 'stack', '/me', true],
    ['gateway GET /api/api-keys (auth + gRPC + SQL)', 'stack', '/api/api-keys?limit=10', true],
    ['same, gateway/keys/accounts as 3 processes', 'split', '/api/api-keys?limit=10', true],
  ];
  // Every target runs at once (idle while not measured); rounds interleave the targets and the
  // median round counts, so a burst of background load does not decide a ratio.
  const targets = [];
  for (const [, kind] of specs) targets.push(await startTarget(kind));
  const results = specs.map(() => []);
  try {
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < specs.length; i++) {
        const [name, , path, withKey] = specs[i];
        const headers = withKey ? { authorization: `Bearer ${targets[i].key}` } : {};
        const r = await measure(targets[i], path, headers, seconds);
        if (r.errors) throw new Error(`${name}: ${r.errors} failed requests (statuses ${r.statuses})`);
        results[i].push(r);
      }
    }
  } finally {
    for (const t of targets) await t.stop();
  }
  const median = (rs) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)];
  const rows = specs.map(([name], i) => ({ name, ...median(results[i]), backends: targets[i].backends }));

  const express = rows[1].rps;
  const node = rows[0].rps;
  console.log(`\nmedian of ${rounds} rounds of ${seconds}s per target, 32 keep-alive connections, node ${process.version}, backends: ${JSON.stringify(rows[4].backends)}; split: ${JSON.stringify(rows[5].backends)}\n`);
  console.log('| target | req/s | p50 ms | p99 ms | CPU µs/req | load gen µs/req | vs express | vs node:http |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.rps.toFixed(0)} | ${(r.p50 / 1000).toFixed(2)} | ${(r.p99 / 1000).toFixed(2)} | ${r.cpuPerRequestUs.toFixed(0)} | ${r.loadCpuPerRequestUs.toFixed(0)} | ${((r.rps / express) * 100).toFixed(0)}% | ${((r.rps / node) * 100).toFixed(0)}% |`,
    );
  }
  const split = rows[5].perProcessUs;
  if (split) console.log(`\nsplit, CPU µs per request by process: ${Object.entries(split).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`);
  const listRps = Math.max(rows[4].rps, rows[5].rps);
  const me = rows[3].rps / express;
  const list = listRps / express;
  const preset = rows[2].rps;
  console.log(`\nagainst express with its prototypes preset: GET /me ${((rows[3].rps / preset) * 100).toFixed(0)}%, gRPC + SQL ${((listRps / preset) * 100).toFixed(0)}%`);
  // Each round measures every target within seconds of bare express, so its own ratio is less
  // exposed to a slow drift of the host's load than the ratio of medians above.
  const perRound = (i) => results[i].map((r, round) => `${((r.rps / results[1][round].rps) * 100).toFixed(0)}%`).join(', ');
  console.log(`\nper round vs express: GET /me ${perRound(3)}; gRPC + SQL in one process ${perRound(4)}, in three ${perRound(5)}`);
  console.log(`\ntargets: auth no-work >= 80% of express: ${(me * 100).toFixed(0)}% ${me >= 0.8 ? 'MET' : 'NOT MET'}; gRPC + SQL >= 30%: ${(list * 100).toFixed(0)}% ${list >= 0.3 ? 'MET' : 'NOT MET'}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
