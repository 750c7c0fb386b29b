#!/usr/bin/env node
// Drive throughput: uploads and downloads of 1 MiB and 64 MiB files through the gateway
// (HTTP → gateway → gRPC stream → drive service → SHA-256 → blob store, and back), against a plain
// write of the same bytes to disk in the same run; then a 1 GiB upload and download with the
// stack's resident memory sampled, to show that content is streamed in bounded memory.
//
//   npm run build && node scripts/bench/drive.js          # embedded backends (PGlite, filesystem)
//
// The stack runs as its own process (the image's entrypoint), so the client's CPU is not the
// server's. Options (environment): BENCH_RUNS_1M (20), BENCH_RUNS_64M (6), BENCH_BIG_MIB (1024,
// 0 to skip), BENCH_STACK_NODE_ARGS (node flags for the stack, e.g. --cpu-prof), plus any SVC_* /
// S3_* / DATABASE_URL to benchmark other backends.
'use strict';
const { spawn } = require('node:child_process');
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const MiB = 1024 * 1024;
const RUNS_1M = Number(process.env.BENCH_RUNS_1M ?? 20);
const RUNS_64M = Number(process.env.BENCH_RUNS_64M ?? 6);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 1024);

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function startStack(dataDir) {
  const port = await freePort();
  const extra = process.env.BENCH_STACK_NODE_ARGS ? process.env.BENCH_STACK_NODE_ARGS.split(' ') : [];
  const child = spawn(process.execPath, [...extra, './packages/stack/dist/main.js'], {
    cwd: ROOT,
    env: { ...process.env, SVC_SERVICE: 'all', PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the stack exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the stack did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  const key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  return {
    port,
    key,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

/** Sends `total` bytes (`block` repeated) as a raw upload; resolves with the created item. */
function upload(stack, name, block, total) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: stack.port,
      path: `/v1/drive/upload?name=${encodeURIComponent(name)}`,
      method: 'POST',
      headers: { authorization: `Bearer ${stack.key}`, 'content-type': 'application/octet-stream', 'content-length': String(total) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode === 201 ? resolve(JSON.parse(text)) : reject(new Error(`upload: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const n = Math.min(block.length, total - sent);
        const ok = req.write(n === block.length ? block : block.subarray(0, n));
        sent += n;
        if (!ok) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

/** Reads a file's content; resolves with its length and SHA-256. */
function download(stack, id, hash) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: stack.port, path: `/v1/drive/${id}/content`, headers: { authorization: `Bearer ${stack.key}` } }, (res) => {
        const h = hash ? createHash('sha256') : null;
        let n = 0;
        res.on('data', (d) => {
          n += d.length;
          h?.update(d);
        });
        res.on('end', () => (res.statusCode === 200 ? resolve({ size: n, sha256: h?.digest('hex') }) : reject(new Error(`download: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

const seconds = async (fn) => {
  const t = process.hrtime.bigint();
  const out = await fn();
  return { s: Number(process.hrtime.bigint() - t) / 1e9, out };
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (n) => n.toFixed(0).padStart(6);

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-drive-'));
  const diskDir = fs.mkdtempSync(path.join(dataDir, 'disk-'));
  console.log(`drive bench: node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const stack = await startStack(dataDir);
  const results = [];
  try {
    // Warm-up: code paths, connections, caches.
    const warm = randomBytes(4 * MiB);
    for (let i = 0; i < 3; i++) await download(stack, (await upload(stack, `warm-${i}`, warm, warm.length)).id);

    for (const [mib, runs] of [
      [1, RUNS_1M],
      [64, RUNS_64M],
    ]) {
      if (!runs) continue;
      const disk = [];
      const up = [];
      const down = [];
      for (let i = 0; i < runs; i++) {
        // Fresh bytes each run (no deduplication), the same bytes for the disk and the upload.
        const bytes = randomBytes(mib * MiB);
        const file = path.join(diskDir, `plain-${i}.bin`);
        disk.push(mib / (await seconds(() => fs.promises.writeFile(file, bytes))).s);
        fs.rmSync(file);
        const u = await seconds(() => upload(stack, `bench-${mib}-${i}`, bytes, bytes.length));
        up.push(mib / u.s);
        const d = await seconds(() => download(stack, u.out.id, false));
        if (d.out.size !== bytes.length) throw new Error('short download');
        down.push(mib / d.s);
      }
      const r = { size: `${mib} MiB`, runs, diskMiBs: median(disk), uploadMiBs: median(up), downloadMiBs: median(down) };
      r.uploadRatio = r.uploadMiBs / r.diskMiBs;
      r.downloadRatio = r.downloadMiBs / r.diskMiBs;
      results.push(r);
    }
    console.log('\n  size     runs  disk MiB/s  upload MiB/s  download MiB/s  upload/disk  download/disk');
    for (const r of results) {
      console.log(
        `  ${r.size.padEnd(7)} ${String(r.runs).padStart(5)}  ${fmt(r.diskMiBs)}      ${fmt(r.uploadMiBs)}        ${fmt(r.downloadMiBs)}          ${(r.uploadRatio * 100).toFixed(0).padStart(3)}%         ${(r.downloadRatio * 100).toFixed(0).padStart(3)}%`,
      );
    }

    if (BIG_MIB > 0) {
      // A large file, its bytes never held by the client either: one random MiB repeated.
      const block = randomBytes(MiB);
      const total = BIG_MIB * MiB;
      const h = createHash('sha256');
      for (let i = 0; i < BIG_MIB; i++) h.update(block);
      const expected = h.digest('hex');
      await new Promise((r) => setTimeout(r, 500));
      const base = rss(stack.pid);
      let peak = base;
      const timer = setInterval(() => (peak = Math.max(peak, rss(stack.pid))), 20);
      const u = await seconds(() => upload(stack, 'big.bin', block, total));
      const upPeak = peak;
      peak = rss(stack.pid);
      const d = await seconds(() => download(stack, u.out.id, true));
      clearInterval(timer);
      if (u.out.sha256 !== expected || d.out.sha256 !== expected) throw new Error('the large file does not hash as sent');
      const big = {
        size: `${BIG_MIB} MiB`,
        uploadMiBs: BIG_MIB / u.s,
        downloadMiBs: BIG_MIB / d.s,
        rssBaseMiB: base / MiB,
        uploadPeakGrowthMiB: (upPeak - base) / MiB,
        downloadPeakGrowthMiB: (peak - base) / MiB,
      };
      results.push(big);
      console.log(
        `\n  ${big.size}: upload ${fmt(big.uploadMiBs)} MiB/s, download ${fmt(big.downloadMiBs)} MiB/s; stack RSS ${big.rssBaseMiB.toFixed(0)} MiB at rest, ` +
          `peak growth +${big.uploadPeakGrowthMiB.toFixed(0)} MiB uploading, +${big.downloadPeakGrowthMiB.toFixed(0)} MiB downloading (hash verified both ways)`,
      );
    }
    console.log(`\n${JSON.stringify({ bench: 'drive', results })}`);
  } finally {
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
