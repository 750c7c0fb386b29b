#!/usr/bin/env node
'use strict';
// Measures the all-in-one process: time from spawn to GET /health = 200 (fresh data folder and
// again with existing data), and its resident memory once idle. Usage: node scripts/bench/startup.js
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');

async function once(dataDir, port) {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, ['--require', './packages/kit/dist/tracing/register.js', './apps/stack/dist/main.js'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  await new Promise((r) => setTimeout(r, 10_000));
  const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { ms, rssMb: rssKb / 1024 };
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-startup-'));
  const backends = process.env.DATABASE_URL ? 'real backends from the environment' : 'embedded backends';
  const fresh = await once(dir, 18931);
  const warm = await once(dir, 18932);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`all-in-one on ${backends}, node ${process.version}`);
  console.log(`first start (new data folder): ${fresh.ms.toFixed(0)} ms to healthy, idle RSS ${fresh.rssMb.toFixed(0)} MiB`);
  console.log(`restart (existing data):       ${warm.ms.toFixed(0)} ms to healthy, idle RSS ${warm.rssMb.toFixed(0)} MiB`);
})();
