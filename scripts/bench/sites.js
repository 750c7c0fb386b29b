#!/usr/bin/env node
'use strict';
// Hosted sites' public pages against a bare static server, in one run on one machine: the same
// HTML file (8 KiB) from
//   1. a bare express app with express.static (a folder on disk),
//   2. the gateway: GET /sites/<slug>/ (the drive's OpenSiteFile over gRPC, one SQL query, the
//      bytes from the blob store checked against their SHA-256),
//   3. the gateway answering a revalidation (If-None-Match: the ETag) with 304.
// Reports requests/s, p50/p99 latency, the server's CPU time per request, and the ratio to
// express.static. Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
// Usage: node scripts/bench/sites.js [seconds=5] [rounds=3]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { load, measure, startTarget } = require('./lib.js');

async function main() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 3);
  const html = `<!doctype html><title>bench</title>\n${'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n'.repeat(128)}`.slice(
    0,
    8192,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-static-'));
  fs.writeFileSync(path.join(dir, 'index.html'), html);

  const bare = await startTarget('express-static', { BENCH_STATIC_DIR: dir });
  const stack = await startTarget('stack');
  try {
    const base = `http://127.0.0.1:${stack.port}`;
    const auth = { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json' };
    const site = await (await fetch(`${base}/sites`, { method: 'POST', headers: auth, body: JSON.stringify({ slug: 'bench' }) })).json();
    const dep = await fetch(`${base}/sites/${site.id}/deployments`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ files: [{ path: 'index.html', content: html }] }),
    });
    if (dep.status !== 201) throw new Error(`deploy: ${dep.status} ${await dep.text()}`);
    const etag = (await fetch(`${base}/sites/bench/`)).headers.get('etag');

    const specs = [
      ['express.static (bare)', bare, '/index.html', {}, 200],
      ['gateway GET /sites/bench/ (200, 8 KiB)', stack, '/sites/bench/', {}, 200],
      ['gateway GET /sites/bench/ with If-None-Match (304)', stack, '/sites/bench/', { 'if-none-match': etag }, 304],
    ];
    for (const [, target, p, headers, okStatus] of specs) await load({ port: target.port, path: p, headers, seconds: 2, okStatus });
    const results = specs.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [i, [name, target, p, headers, okStatus]] of specs.entries()) {
        const r = await measure(target, p, headers, seconds, { okStatus });
        if (r.errors) throw new Error(`${name}: ${r.errors} failed requests (statuses ${r.statuses})`);
        results[i].push(r);
      }
    }
    const median = (rs) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)];
    const rows = specs.map(([name], i) => ({ name, ...median(results[i]) }));
    console.log(
      `\nmedian of ${rounds} rounds of ${seconds}s per target, 32 keep-alive connections, node ${process.version}, backends: ${JSON.stringify(stack.backends)}\n`,
    );
    console.log('| target | req/s | p50 ms | p99 ms | CPU µs/req | vs express.static |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(
        `| ${r.name} | ${r.rps.toFixed(0)} | ${(r.p50 / 1000).toFixed(2)} | ${(r.p99 / 1000).toFixed(2)} | ${r.cpuPerRequestUs.toFixed(0)} | ${((r.rps / rows[0].rps) * 100).toFixed(0)}% |`,
      );
    }
  } finally {
    await bare.stop();
    await stack.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
