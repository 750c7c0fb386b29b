#!/usr/bin/env node
// Drive throughput: uploads and downloads of 1 MiB and 64 MiB files through the gateway
// (HTTP → gateway → SHA-256 → blob store, the drive service deciding and committing over gRPC;
// and back), against, in the same run: a bare server (scripts/bench/drive-bare.js, its own
// process: node:http hashing with SHA-256 while it writes, fsync, rename, fsync of the folder; and
// reading and sending a file), the figure the targets are set against; and two plain writes of the
// same bytes to the same disk: a page-cache write (`fs.promises.writeFile`: a copy into memory) and
// a durable write (open, write, fsync, close: what the blob store does before a file counts as
// stored). The bare server and the stack take turns, which goes first alternating by run. Then a 1 GiB upload and download with
// the stack's resident memory sampled, to show that content is streamed in bounded memory.
//
//   npm run build && node scripts/bench/drive.js          # embedded backends (PGlite, filesystem)
//
// The stack runs as its own process (the image's entrypoint), so the client's CPU is not the
// server's. Every timed write (each baseline, each upload) starts from the same disk state:
// dirty pages are flushed (`sync`) first, and what the previous run wrote is deleted (the
// uploaded files through the API, their blobs collected at once), so that a disk that absorbs a
// burst quickly and then slows down (virtual disks with a host-side write cache do) treats the
// baselines and the uploads alike. Medians of the runs; the baselines are measured right before
// each upload (BENCH_BASELINES of each kind, interleaved). Each size starts with one uncounted
// round (warm-up), after BENCH_WARM_1M uploads of 1 MiB that bring the stack to its steady state
// (its code optimized as it runs hot; the first and last fifty are printed). It also prints the CPU time per download of the stack and of the bare server
// (all their threads, from /proc: repeatable where the rates move with the machine's load).
// Options (environment): BENCH_RUNS_1M (20), BENCH_RUNS_64M (9), BENCH_BASELINES (3), BENCH_WARM_1M
// (300, 0: timed from a fresh start),
// BENCH_BIG_MIB (1024, 0 to skip), BENCH_NO_DOWNLOAD (1: uploads only), BENCH_VERBOSE (1: every
// sample, the stack's CPU time per upload and both servers' per download), BENCH_STACK_NODE_ARGS
// (node flags for the stack, e.g. --cpu-prof), plus any SVC_* / S3_* / DATABASE_URL to benchmark
// other backends.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const { freePort } = require('./lib.js');

const ROOT = path.resolve(__dirname, '..', '..');
const MiB = 1024 * 1024;
const RUNS_1M = Number(process.env.BENCH_RUNS_1M ?? 20);
const RUNS_64M = Number(process.env.BENCH_RUNS_64M ?? 9);
const NO_DOWNLOAD = process.env.BENCH_NO_DOWNLOAD === '1';
const BASELINES = Number(process.env.BENCH_BASELINES ?? 3);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 1024);
const WARM_1M = Number(process.env.BENCH_WARM_1M ?? 300);

async function startStack(dataDir) {
  const port = await freePort();
  const extra = process.env.BENCH_STACK_NODE_ARGS ? process.env.BENCH_STACK_NODE_ARGS.split(' ') : [];
  const child = spawn(process.execPath, [...extra, './apps/stack/dist/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      SVC_SERVICE: 'all',
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // Deleted files' content is collected within a second, so that runs do not pile up on the disk.
      SVC_DRIVE_GRACE_SECONDS: '0',
      SVC_DRIVE_COLLECT_INTERVAL_MS: '1000',
      // The warm-up's uploads come faster than an account's default 600 a minute.
      SVC_DRIVE_WRITES_PER_MINUTE: '1000000',
    },
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

/** The bare server (drive-bare.js) in its own process, storing in `dir`. */
async function startBare(dir) {
  const child = spawn(process.execPath, [path.join(__dirname, 'drive-bare.js'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /port (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
  return {
    port,
    pid: child.pid,
    bare: true,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** CPU time (ms) of each thread of a process, from /proc (Linux); null elsewhere. */
function threadCpu(pid) {
  const dir = `/proc/${pid}/task`;
  if (!fs.existsSync(dir)) return null;
  const tick = 1000 / 100; // USER_HZ
  const out = new Map();
  for (const tid of fs.readdirSync(dir)) {
    try {
      const st = fs.readFileSync(`${dir}/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) * tick);
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** CPU time since `before`: the main thread's (its id is the process id) and the other threads'. */
function cpuSince(pid, before) {
  const after = threadCpu(pid);
  if (!before || !after) return null;
  let main = 0;
  let other = 0;
  for (const [tid, ms] of after) {
    const d = ms - (before.get(tid) ?? 0);
    if (tid === pid) main += d;
    else other += d;
  }
  return { main, other };
}

const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

/** Sends `total` bytes (`block` repeated) as a raw upload to the stack or the bare server; resolves with the created item (`{sha256, size}` from the bare one). */
function upload(stack, name, block, total) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: stack.port,
      path: stack.bare ? '/upload' : `/v1/drive/upload?name=${encodeURIComponent(name)}`,
      method: 'POST',
      headers: {
        ...(stack.bare ? {} : { authorization: `Bearer ${stack.key}` }),
        'content-type': 'application/octet-stream',
        'content-length': String(total),
      },
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

/** Reads a file's content (by its id, or by its digest from the bare server); resolves with its length and SHA-256. */
function download(stack, id, hash) {
  return new Promise((resolve, reject) => {
    const where = stack.bare ? { path: `/blob/${id}` } : { path: `/v1/drive/${id}/content`, headers: { authorization: `Bearer ${stack.key}` } };
    http
      .get({ host: '127.0.0.1', port: stack.port, ...where }, (res) => {
        const h = hash ? createHash('sha256') : null;
        let n = 0;
        res.on('data', (d) => {
          n += d.length;
          h?.update(d);
        });
        res.on('end', () =>
          res.statusCode === 200 ? resolve({ size: n, sha256: h?.digest('hex') }) : reject(new Error(`download: ${res.statusCode}`)),
        );
      })
      .on('error', reject);
  });
}

/** Deletes a file through the API and waits until its blob is gone from the disk (collected). */
async function remove(stack, dataDir, item) {
  await deleteItem(stack, item);
  await collected(dataDir, [item.sha256]);
}

async function deleteItem(stack, item) {
  const res = await fetch(`http://127.0.0.1:${stack.port}/v1/drive/${item.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${stack.key}` },
  });
  if (!res.ok) throw new Error(`delete: ${res.status} ${await res.text()}`);
}

/** Waits until the stack's blob store holds none of these contents (deleted files' collected). */
async function collected(dataDir, hashes) {
  const blobDir = path.join(dataDir, 'blobs', 'drive');
  const deadline = Date.now() + 30_000;
  // A collected content does not come back: each look asks only about those still there, and
  // lists the accounts' folders once.
  const left = (pending) => {
    if (!fs.existsSync(blobDir)) return [];
    const accounts = fs.readdirSync(blobDir);
    return pending.filter((h) => accounts.some((a) => fs.existsSync(path.join(blobDir, a, h.slice(0, 2), h))));
  };
  for (let stored = left(hashes); stored.length; stored = left(stored)) {
    if (Date.now() > deadline) {
      // Seen rarely: the run goes on (the disk keeps more files) rather than fail.
      console.log(`  (${stored.length} deleted files' content not collected within 30 s, e.g. ${stored[0]})`);
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs both servers to their steady state before anything is timed: WARM_1M uploads of 1 MiB to
 * the stack (and a sixth as many to the bare server), then deleted. A freshly started stack is
 * slower for its first few hundred uploads: V8 optimizes its code and the embedded database's
 * WebAssembly as they run hot (pglite.ts, the tiering budget). Prints the first and last fifty's
 * time and the stack's CPU per upload, so the cold figure is seen in the same run.
 */
async function steady(stack, bare, dataDir) {
  const bytes = randomBytes(MiB);
  const items = [];
  const block = async (from, n) => {
    const t0 = performance.now();
    const c0 = threadCpu(stack.pid);
    for (let i = from; i < from + n; i++) {
      bytes.writeUInt32LE(i, 0); // no two alike: nothing is deduplicated
      items.push(await upload(stack, `steady-${i}`, bytes, bytes.length));
    }
    const c = cpuSince(stack.pid, c0);
    return `${((performance.now() - t0) / n).toFixed(1)} ms${c ? `, CPU ${((c.main + c.other) / n).toFixed(1)} ms` : ''}`;
  };
  const n = Math.min(50, Math.floor(WARM_1M / 2));
  const first = await block(0, n);
  await block(n, WARM_1M - 2 * n);
  const last = await block(WARM_1M - n, n);
  for (let i = 0; i < Math.ceil(WARM_1M / 6); i++) {
    bytes.writeUInt32LE(i, 0);
    const u = await upload(bare, '', bytes, bytes.length);
    await fetch(`http://127.0.0.1:${bare.port}/blob/${u.sha256}`, { method: 'DELETE' });
  }
  for (const item of items) await deleteItem(stack, item);
  // Every one's content collected before anything is timed (the collector runs every second).
  await collected(
    dataDir,
    items.map((i) => i.sha256),
  );
  console.log(
    `steady state: ${WARM_1M} uploads of 1 MiB to the stack first, then deleted; the first ${n}: ${first} each, the last ${n}: ${last} each\n`,
  );
}

/** Flushes dirty pages (everyone's), so that the next timed write does not pay for earlier ones. */
const settle = () => spawnSync('sync');

/** The durable write: open, write, fsync, close (the blob store also renames and syncs the folder). */
async function durableWrite(file, chunks) {
  const fh = await fs.promises.open(file, 'w');
  try {
    for (const c of chunks) await fh.write(c);
    await fh.sync();
  } finally {
    await fh.close();
  }
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
  console.log(
    `drive bench: node ${process.version}, ${os.cpus().length} CPUs, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const stack = await startStack(dataDir);
  const bare = await startBare(path.join(dataDir, 'bare'));
  const results = [];
  try {
    // Warm-up: code paths, connections, caches.
    const warm = randomBytes(4 * MiB);
    for (let i = 0; i < 3; i++) await download(stack, (await upload(stack, `warm-${i}`, warm, warm.length)).id);
    for (let i = 0; i < 3; i++) await download(bare, (await upload(bare, `warm-${i}`, warm, warm.length)).sha256);
    if (WARM_1M) await steady(stack, bare, dataDir);

    for (const [mib, runs] of [
      [1, RUNS_1M],
      [64, RUNS_64M],
    ]) {
      if (!runs) continue;
      const cached = [];
      const durable = [];
      const up = [];
      const down = [];
      const bareUp = [];
      const bareDown = [];
      const mainCpu = [];
      const otherCpu = [];
      // CPU time per download (all threads): the stack's and the bare server's.
      const downCpu = [];
      const downMainCpu = [];
      const bareDownCpu = [];
      // Round -1 warms this size up (not counted).
      for (let i = -1; i < runs; i++) {
        // Fresh bytes each run (no deduplication), the same bytes for the disk and the upload.
        const bytes = randomBytes(mib * MiB);
        const file = path.join(diskDir, `plain-${i}.bin`);
        // The baselines, right before the upload, interleaved, each from a flushed disk.
        const pc = [];
        const du = [];
        for (let b = 0; b < BASELINES; b++) {
          settle();
          pc.push(mib / (await seconds(() => fs.promises.writeFile(file, bytes))).s);
          fs.rmSync(file);
          settle();
          du.push(mib / (await seconds(() => durableWrite(file, [bytes]))).s);
          fs.rmSync(file);
        }
        // The bare server and the stack, each from a flushed disk; which goes first alternates.
        const bareRound = async () => {
          settle();
          const u = await seconds(() => upload(bare, '', bytes, bytes.length));
          const c0 = threadCpu(bare.pid);
          const d = NO_DOWNLOAD ? null : await seconds(() => download(bare, u.out.sha256, false));
          const c = cpuSince(bare.pid, c0);
          if (d && c) bareDownCpuNow = c.main + c.other;
          if (d && d.out.size !== bytes.length) throw new Error('short download (bare)');
          await fetch(`http://127.0.0.1:${bare.port}/blob/${u.out.sha256}`, { method: 'DELETE' });
          return { u, d };
        };
        let cpu = null;
        let bareDownCpuNow = null;
        let downCpuNow = null;
        const stackRound = async () => {
          settle();
          const cpu0 = threadCpu(stack.pid);
          const u = await seconds(() => upload(stack, `bench-${mib}-${i}`, bytes, bytes.length));
          cpu = cpuSince(stack.pid, cpu0);
          const c0 = threadCpu(stack.pid);
          const d = NO_DOWNLOAD ? null : await seconds(() => download(stack, u.out.id, false));
          const c = cpuSince(stack.pid, c0);
          if (d && c) downCpuNow = c;
          if (d && d.out.size !== bytes.length) throw new Error('short download');
          await remove(stack, dataDir, u.out);
          return { u, d };
        };
        const [b, { u, d }] = i % 2 ? [await bareRound(), await stackRound()] : (([x, y]) => [y, x])([await stackRound(), await bareRound()]);
        if (i < 0) continue;
        cached.push(...pc);
        durable.push(...du);
        up.push(mib / u.s);
        bareUp.push(mib / b.u.s);
        if (d) down.push(mib / d.s);
        if (b.d) bareDown.push(mib / b.d.s);
        if (cpu) {
          mainCpu.push(cpu.main);
          otherCpu.push(cpu.other);
        }
        if (downCpuNow !== null) {
          downCpu.push(downCpuNow.main + downCpuNow.other);
          downMainCpu.push(downCpuNow.main);
        }
        if (bareDownCpuNow !== null) bareDownCpu.push(bareDownCpuNow);
      }
      const r = {
        size: `${mib} MiB`,
        runs,
        baselineWrites: runs * BASELINES,
        pageCacheMiBs: median(cached),
        durableMiBs: median(durable),
        uploadMiBs: median(up),
        downloadMiBs: NO_DOWNLOAD ? null : median(down),
        bareUploadMiBs: median(bareUp),
        bareDownloadMiBs: NO_DOWNLOAD ? null : median(bareDown),
        // Run by run (the stack's over the bare server's in the same round), then the median.
        uploadVsBare: median(up.map((x, k) => x / bareUp[k])),
        downloadVsBare: NO_DOWNLOAD ? null : median(down.map((x, k) => x / bareDown[k])),
      };
      r.uploadVsDurable = r.uploadMiBs / r.durableMiBs;
      r.uploadVsPageCache = r.uploadMiBs / r.pageCacheMiBs;
      r.downloadVsDurable = NO_DOWNLOAD ? null : r.downloadMiBs / r.durableMiBs;
      r.downloadVsPageCache = NO_DOWNLOAD ? null : r.downloadMiBs / r.pageCacheMiBs;
      if (mainCpu.length) {
        // CPU time of the stack per upload: its main thread (the event loop that runs the gateway
        // and the service) and all its other threads (hashing, file I/O, garbage collection).
        r.uploadMainThreadCpuMs = median(mainCpu);
        r.uploadOtherThreadsCpuMs = median(otherCpu);
        r.uploadWallMs = (mib * 1000) / r.uploadMiBs;
      }
      if (downCpu.length) {
        // Summed over the runs (each is counted in 10 ms ticks): the CPU time per download.
        r.downloadCpuMs = downCpu.reduce((a, b) => a + b, 0) / downCpu.length;
        r.downloadMainThreadCpuMs = downMainCpu.reduce((a, b) => a + b, 0) / downMainCpu.length;
        r.bareDownloadCpuMs = bareDownCpu.length ? bareDownCpu.reduce((a, b) => a + b, 0) / bareDownCpu.length : null;
      }
      if (process.env.BENCH_VERBOSE) {
        const list = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
        console.log(
          `  ${r.size}: page cache ${list(cached)}\n    durable ${list(durable)}\n    upload ${list(up)}\n    download ${list(down)}\n` +
            `    bare upload ${list(bareUp)}\n    bare download ${list(bareDown)}`,
        );
        if (mainCpu.length) console.log(`    stack CPU per upload, ms: main thread ${list(mainCpu)} | other threads ${list(otherCpu)}`);
        if (downCpu.length)
          console.log(`    CPU per download, ms: stack ${list(downCpu)} (main thread ${list(downMainCpu)}) | bare ${list(bareDownCpu)}`);
      }
      results.push(r);
    }
    const pct = (x) => (x === null ? '   -' : `${(x * 100).toFixed(0).padStart(3)}%`);
    console.log('\n  size     runs  page-cache  durable  upload  download   upload/durable  upload/page-cache  download/durable');
    console.log('                 write MiB/s  MiB/s    MiB/s   MiB/s');
    for (const r of results) {
      console.log(
        `  ${r.size.padEnd(7)} ${String(r.runs).padStart(5)}  ${fmt(r.pageCacheMiBs)}      ${fmt(r.durableMiBs)}   ${fmt(r.uploadMiBs)}  ${r.downloadMiBs === null ? '     -' : fmt(r.downloadMiBs)}   ` +
          `${pct(r.uploadVsDurable)}             ${pct(r.uploadVsPageCache)}                ${pct(r.downloadVsDurable)}`,
      );
    }
    console.log('\n  against the bare server (same run; per round, median):');
    for (const r of results) {
      console.log(
        `  ${r.size.padEnd(7)} upload ${fmt(r.uploadMiBs)} vs ${fmt(r.bareUploadMiBs)} MiB/s: ${pct(r.uploadVsBare)}` +
          (NO_DOWNLOAD ? '' : `;  download ${fmt(r.downloadMiBs)} vs ${fmt(r.bareDownloadMiBs)} MiB/s: ${pct(r.downloadVsBare)}`),
      );
    }
    for (const r of results) {
      if (r.uploadMainThreadCpuMs !== undefined) {
        console.log(
          `  ${r.size} upload: ${r.uploadWallMs.toFixed(0)} ms; stack CPU ${r.uploadMainThreadCpuMs.toFixed(0)} ms on its main thread, ${r.uploadOtherThreadsCpuMs.toFixed(0)} ms on others (medians)`,
        );
      }
      if (r.downloadCpuMs !== undefined) {
        console.log(
          `  ${r.size} download: CPU ${r.downloadCpuMs.toFixed(1)} ms (stack, all threads; ${r.downloadMainThreadCpuMs.toFixed(1)} on its main thread) vs ${r.bareDownloadCpuMs?.toFixed(1) ?? '-'} ms (bare server) (means)`,
        );
      }
    }

    if (BIG_MIB > 0) {
      // A large file, its bytes never held by the client either: one random MiB repeated.
      const block = randomBytes(MiB);
      const total = BIG_MIB * MiB;
      const h = createHash('sha256');
      for (let i = 0; i < BIG_MIB; i++) h.update(block);
      const expected = h.digest('hex');
      // The same bytes written durably, for the disk's sustained speed (a large write outlasts a
      // host-side write cache).
      const file = path.join(diskDir, 'plain-big.bin');
      settle();
      const disk = await seconds(() =>
        durableWrite(
          file,
          Array.from({ length: BIG_MIB }, () => block),
        ),
      );
      fs.rmSync(file);
      settle();
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
        durableMiBs: BIG_MIB / disk.s,
        uploadMiBs: BIG_MIB / u.s,
        downloadMiBs: BIG_MIB / d.s,
        rssBaseMiB: base / MiB,
        uploadPeakGrowthMiB: (upPeak - base) / MiB,
        downloadPeakGrowthMiB: (peak - base) / MiB,
      };
      results.push(big);
      console.log(
        `\n  ${big.size}: durable write ${fmt(big.durableMiBs)} MiB/s, upload ${fmt(big.uploadMiBs)} MiB/s, download ${fmt(big.downloadMiBs)} MiB/s; stack RSS ${big.rssBaseMiB.toFixed(0)} MiB at rest, ` +
          `peak growth +${big.uploadPeakGrowthMiB.toFixed(0)} MiB uploading, +${big.downloadPeakGrowthMiB.toFixed(0)} MiB downloading (hash verified both ways)`,
      );
    }
    console.log(`\n${JSON.stringify({ bench: 'drive', results })}`);
  } finally {
    await bare.stop();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
