#!/usr/bin/env node
'use strict';
// Does an upload's cost grow with the files its account already holds? A drive write checks the
// account's storage quota (docs/drive.md, "Quotas") before it reads a byte and again in its commit.
// Two accounts on one stack: "empty" holds nothing, "full" holds BENCH_FILES small files (extracted
// from zips of 2,000 entries through the API). Rounds alternate between them: each uploads 1 KiB
// files (new names, four at a time) for `seconds`; the stack's CPU per upload and the rate are
// compared, full against empty. Backends follow the environment (DATABASE_URL etc.), embedded
// otherwise.
// Usage: node scripts/bench/drive-usage.js [seconds=4] [rounds=3]   (BENCH_FILES, default 20000)
const http = require('node:http');

const { zipSync } = require('fflate');

const { startTarget } = require('./lib.js');

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function request(port, key, method, path, body, type = 'application/json') {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        port,
        host: '127.0.0.1',
        method,
        path,
        agent,
        headers: { authorization: `Bearer ${key}`, ...(data ? { 'content-type': type, 'content-length': data.length } : {}) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode >= 300) return reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
          resolve(text ? JSON.parse(text) : undefined);
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Uploads 1 KiB files under new names, `parallel` at a time, for `seconds`; the count. */
async function uploads(port, key, prefix, seconds, parallel = 4) {
  const block = Buffer.alloc(1024, 7);
  const until = Date.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: parallel }, async (_, w) => {
      while (Date.now() < until) {
        block.writeUInt32LE(n, 0); // fresh content each time
        await request(port, key, 'POST', `/v1/drive/upload?name=${prefix}-${w}-${n++}`, block, 'application/octet-stream');
      }
    }),
  );
  return n;
}

async function main() {
  const seconds = Number(process.argv[2] ?? 4);
  const rounds = Number(process.argv[3] ?? 3);
  const files = Number(process.env.BENCH_FILES ?? 20000);
  const stack = await startTarget('stack', { SVC_DRIVE_WRITES_PER_MINUTE: '1000000' });
  try {
    const op = (m, p, b) => request(stack.port, stack.key, m, p, b);
    const empty = (await op('POST', '/v1/accounts', { kind: 'user', name: 'empty' })).key;
    const full = (await op('POST', '/v1/accounts', { kind: 'user', name: 'full' })).key;
    const entries = {};
    for (let i = 0; i < 2000; i++) entries[`f${i}.txt`] = Buffer.from(`file ${i}\n`);
    const zip = Buffer.from(zipSync(entries, { level: 0 }));
    const t0 = Date.now();
    for (let made = 0, z = 0; made < files; z++) {
      const item = await request(stack.port, full, 'POST', `/v1/drive/upload?name=z${z}.zip`, zip, 'application/octet-stream');
      const x0 = Date.now();
      made += (await request(stack.port, full, 'POST', `/v1/drive/${item.id}/extract`, {})).files;
      if (process.env.BENCH_VERBOSE) console.log(`extracted 2000 files in ${Date.now() - x0} ms (${made} in all)`);
    }
    console.log(`"full" holds ${files} files (extracted in ${((Date.now() - t0) / 1000).toFixed(1)} s); backends: ${JSON.stringify(stack.backends)}`);
    const results = { empty: [], full: [] };
    await uploads(stack.port, empty, 'warm', 1);
    await uploads(stack.port, full, 'warm', 1);
    for (let r = 0; r < rounds; r++) {
      for (const [name, key] of r % 2
        ? [
            ['full', full],
            ['empty', empty],
          ]
        : [
            ['empty', empty],
            ['full', full],
          ]) {
        const before = await stack.cpu();
        const started = process.hrtime.bigint();
        const n = await uploads(stack.port, key, `r${r}`, seconds);
        const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
        const after = await stack.cpu();
        results[name].push({ rate: n / elapsed, cpuUs: (after.user + after.system - before.user - before.system) / n });
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const e = { rate: median(results.empty.map((x) => x.rate)), cpu: median(results.empty.map((x) => x.cpuUs)) };
    const f = { rate: median(results.full.map((x) => x.rate)), cpu: median(results.full.map((x) => x.cpuUs)) };
    console.log(`\n| account | 1 KiB uploads/s | stack CPU per upload |`);
    console.log('|---|---:|---:|');
    console.log(`| empty | ${e.rate.toFixed(0)} | ${(e.cpu / 1000).toFixed(2)} ms |`);
    console.log(`| ${files} files | ${f.rate.toFixed(0)} | ${(f.cpu / 1000).toFixed(2)} ms |`);
    console.log(
      `\nfull against empty: rate ${((f.rate / e.rate) * 100).toFixed(0)}%, CPU per upload ${((f.cpu / e.cpu) * 100).toFixed(0)}% (medians of ${rounds} rounds of ${seconds} s)`,
    );
  } finally {
    await stack.stop();
    agent.destroy();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
