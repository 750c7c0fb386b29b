#!/usr/bin/env node
'use strict';
// A newcomer's first run, measured: a fresh clone of this checkout's HEAD, `npm ci`, then
// `npm start` on a new data folder, timed from spawn to GET /health = 200; the longest silence
// between two lines of its output before that; the process's resident memory after 10 s idle;
// then a second `npm start` of the built clone. Usage: node scripts/bench/first-start.js
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');

function descendants(pid) {
  let children = [];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    // none
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

function rssMiB(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return 0;
  }
}

async function start(dir, port) {
  const started = Date.now();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: path.join(dir, '.data'), LOG_LEVEL: 'warn' };
  for (const k of ['DATABASE_URL', 'REDIS_URL', 'NATS_URL', 'S3_ENDPOINT']) delete env[k];
  const child = spawn('npm', ['start'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let last = started;
  let silence = 0;
  const lines = [];
  const onLine = (chunk) => {
    const now = Date.now();
    silence = Math.max(silence, now - last);
    last = now;
    for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(`${((now - started) / 1000).toFixed(1)} s  ${l.slice(0, 120)}`);
  };
  child.stdout.on('data', onLine);
  child.stderr.on('data', onLine);
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {
      // not yet
    }
    if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}):\n${lines.join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const ms = Date.now() - started;
  silence = Math.max(silence, Date.now() - last);
  await new Promise((r) => setTimeout(r, 10_000));
  // The platform's process (node scripts/start.js, under npm and its shell): the largest of npm's
  // descendants (the run_code sandbox's children are small).
  const rss = Math.max(...descendants(child.pid).map(rssMiB));
  process.kill(-child.pid, 'SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { ms, silence, rss, lines };
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-first-start-'));
  try {
    execFileSync('git', ['clone', '-q', '--local', root, dir]);
    execFileSync('git', ['-C', dir, 'checkout', '-q', execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()]);
    const t = Date.now();
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, stdio: 'ignore' });
    const ci = Date.now() - t;
    const first = await start(dir, 18961);
    const again = await start(dir, 18962);
    console.log(
      `fresh clone of ${execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()}, node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`,
    );
    console.log(`npm ci: ${(ci / 1000).toFixed(1)} s`);
    console.log(
      `first npm start: ${(first.ms / 1000).toFixed(1)} s to /health, longest silence ${(first.silence / 1000).toFixed(1)} s, idle RSS ${first.rss.toFixed(0)} MiB`,
    );
    console.log(`second npm start: ${(again.ms / 1000).toFixed(1)} s to /health, idle RSS ${again.rss.toFixed(0)} MiB`);
    console.log('\nthe first start said:\n' + first.lines.join('\n'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
