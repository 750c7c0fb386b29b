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
// Usage: node scripts/bench/auth.js [seconds=5] [rounds=5]
const { load, measure, startTarget } = require('./lib.js');

async function main() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 5);
  const specs = [
    ['node:http (bare)', 'node-http', '/x', false],
    ['express (bare, one route)', 'express', '/x', false],
    ['express, requests built with its prototypes (as the gateway)', 'express-preset', '/x', false],
    ['gateway GET /me (auth, no further work)', 'stack', '/me', true],
    ['gateway GET /api/api-keys (auth + gRPC + SQL)', 'stack', '/api/api-keys?limit=10', true],
    ['same, gateway/keys/accounts as 3 processes', 'split', '/api/api-keys?limit=10', true],
  ];
  // Every target runs at once (idle while not measured); rounds interleave the targets and the
  // median round counts, so a burst of background load does not decide a ratio. Within a round,
  // bare express is measured next to the gateway targets it is compared with (a ratio pairs two
  // measurements seconds apart), and every target is warmed up first: the three-process target
  // has the most code for V8 to optimise, and a 1 s warm-up left its first round visibly slower.
  const order = [0, 2, 3, 1, 5, 4];
  const targets = [];
  for (const [, kind] of specs) targets.push(await startTarget(kind));
  const headersOf = (i) => (specs[i][3] ? { authorization: `Bearer ${targets[i].key}` } : {});
  const results = specs.map(() => []);
  try {
    for (const i of order) await load({ port: targets[i].port, path: specs[i][2], headers: headersOf(i), seconds: 3 });
    for (let round = 0; round < rounds; round++) {
      for (const i of order) {
        const [name, , path] = specs[i];
        const r = await measure(targets[i], path, headersOf(i), seconds);
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
  console.log(
    `\nmedian of ${rounds} rounds of ${seconds}s per target, 32 keep-alive connections, node ${process.version}, backends: ${JSON.stringify(rows[4].backends)}; split: ${JSON.stringify(rows[5].backends)}\n`,
  );
  console.log('| target | req/s | p50 ms | p99 ms | CPU µs/req | load gen µs/req | vs express | vs node:http |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.rps.toFixed(0)} | ${(r.p50 / 1000).toFixed(2)} | ${(r.p99 / 1000).toFixed(2)} | ${r.cpuPerRequestUs.toFixed(0)} | ${r.loadCpuPerRequestUs.toFixed(0)} | ${((r.rps / express) * 100).toFixed(0)}% | ${((r.rps / node) * 100).toFixed(0)}% |`,
    );
  }
  const split = rows[5].perProcessUs;
  if (split)
    console.log(
      `\nsplit, CPU µs per request by process: ${Object.entries(split)
        .map(([k, v]) => `${k} ${v.toFixed(0)}`)
        .join(', ')}`,
    );
  const listRps = Math.max(rows[4].rps, rows[5].rps);
  const preset = rows[2].rps;
  console.log(
    `\nagainst express with its prototypes preset: GET /me ${((rows[3].rps / preset) * 100).toFixed(0)}%, gRPC + SQL ${((listRps / preset) * 100).toFixed(0)}%`,
  );
  // Each round measures the gateway targets seconds after bare express, so a round's own ratio is
  // less exposed to the host's load drifting than a ratio of medians taken minutes apart; the
  // verdict is the median of those paired ratios, and the ratio of the medians is printed beside it.
  const ratios = (i, base = 1) => results[i].map((r, round) => r.rps / results[base][round].rps);
  const pct = (x) => `${(x * 100).toFixed(0)}%`;
  const medianOf = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `\nper round vs express: GET /me ${ratios(3).map(pct).join(', ')}; gRPC + SQL in one process ${ratios(4).map(pct).join(', ')}, in three ${ratios(5).map(pct).join(', ')}`,
  );
  console.log(`per round vs express with its prototypes preset: GET /me ${ratios(3, 2).map(pct).join(', ')}`);
  const me = medianOf(ratios(3, 2));
  const list = Math.max(medianOf(ratios(4)), medianOf(ratios(5)));
  console.log(`ratio of the medians in the table: GET /me ${pct(rows[3].rps / express)}, gRPC + SQL ${pct(listRps / express)}`);
  // Issue 36's targets: /me against the same express app on a server built as the gateway's, the
  // listing against bare express (the better of one process and three).
  console.log(
    `\ntargets (median of the per-round ratios): GET /me >= 90% of express with preset prototypes: ${pct(me)} ${me >= 0.9 ? 'MET' : 'NOT MET'}; gRPC + SQL >= 60% of express: ${pct(list)} ${list >= 0.6 ? 'MET' : 'NOT MET'} (one process ${pct(medianOf(ratios(4)))}, three ${pct(medianOf(ratios(5)))})`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
