#!/usr/bin/env node
'use strict';
// The regression guard (`npm run bench:check`): this checkout (its working tree, built) against a
// base commit, interleaved A/B on this machine, over the core operations (scripts/bench/ops.js).
// The base is checked out as a git worktree in a cache folder and installed and built once (reused
// while the commit is the same). Both stacks run at once, pinned to core 1 with the load generator
// on core 0 (ab.js); each round measures every operation on A, B and A again, or B, A and B again
// (alternately), and each operation's
// throughput and CPU per operation (the stack process's own, all its threads) are judged on the
// median of the per-round ratios against the noise measured in the same run: the spread of those
// ratios and of the A/A ratios (verdict.js). Exits 1 on a regression (2 when it could not run).
//
// Usage: npm run bench:check [-- --base <commit-ish>] [--only me,list-keys] [--rounds 6]
//        [--seconds 2] [--min 5] [--k 3]
//   --base     the commit to compare with (default: the merge-base with main, or HEAD~1 on main)
//   --only     operations, comma-separated (default all: me, list-keys, drive-1m, drive-64m,
//              thread-ask, paper-order, mcp-call)
//   --rounds   rounds (at least 3; even: as many A, B, A as B, A, B); --seconds: each measurement
//              (drive-64m takes 4)
//   --min      the smallest change (%) that counts as a regression, however quiet the machine
//   --k        how many standard errors of the median a regression must exceed
// Backends follow the environment (DATABASE_URL etc.), embedded otherwise; CPU is the stack
// process's own, and on a real PostgreSQL its server's CPU per operation is judged too (where the
// operation spends at least 10 µs there). Environment: SVC_BENCH_CACHE (the base checkouts' folder,
// default ~/.cache/svc-bench).
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const { entriesFor, interleaved, pinForAB } = require('./ab.js');
const { startTarget } = require('./lib.js');
const { selectOps, STACK_ENV } = require('./ops.js');
const { judge, median } = require('./verdict.js');

const ROOT = path.resolve(__dirname, '..', '..');
const CACHE = process.env.SVC_BENCH_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'svc-bench');
/** Base checkouts kept in the cache (the most recently used). */
const KEEP = 3;

const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The base commit: `--base` if given, else the merge-base with main, else (on main itself) HEAD~1. */
function baseCommit(base) {
  if (base) return git('rev-parse', '--verify', `${base}^{commit}`);
  const head = git('rev-parse', 'HEAD');
  let mergeBase;
  try {
    mergeBase = git('merge-base', 'HEAD', 'main');
  } catch {
    mergeBase = head;
  }
  return mergeBase === head ? git('rev-parse', 'HEAD~1') : mergeBase;
}

/** Runs a command in `cwd`, its output to `log`; throws with the log's end on failure. */
function run(cmd, args, cwd, log) {
  const fd = fs.openSync(log, 'a');
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', fd, fd], env: process.env });
  fs.closeSync(fd);
  if (r.status !== 0) {
    const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-30).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} in ${cwd} failed (${r.status}); the end of ${log}:\n${tail}`);
  }
}

/** The base commit as a built git worktree in the cache, made once per commit; older ones pruned. */
function prepareBase(sha) {
  const dir = path.join(CACHE, sha);
  const marker = path.join(dir, '.svc-bench-ready');
  fs.mkdirSync(CACHE, { recursive: true });
  if (fs.existsSync(marker)) {
    const now = new Date();
    fs.utimesSync(marker, now, now);
    console.log(`base ${sha.slice(0, 12)}: built checkout reused (${dir})`);
    return dir;
  }
  // Half-made by an earlier run (stopped during npm ci or the build): made again.
  if (fs.existsSync(dir)) {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  git('worktree', 'prune');
  const log = path.join(CACHE, `${sha}.log`);
  fs.writeFileSync(log, '');
  const started = Date.now();
  console.log(`base ${sha.slice(0, 12)}: checking out, npm ci and build in ${dir} (once for this commit; log ${log})`);
  git('worktree', 'add', '--detach', dir, sha);
  run('npm', ['ci', '--no-audit', '--no-fund'], dir, log);
  run('npm', ['run', 'build'], dir, log);
  fs.writeFileSync(marker, `${sha}\n`);
  console.log(`base ready after ${((Date.now() - started) / 1000).toFixed(0)} s`);
  const old = fs
    .readdirSync(CACHE)
    .filter((d) => /^[0-9a-f]{40}$/.test(d) && d !== sha && fs.existsSync(path.join(CACHE, d, '.svc-bench-ready')))
    .map((d) => ({ d, t: fs.statSync(path.join(CACHE, d, '.svc-bench-ready')).mtimeMs }))
    .sort((x, y) => y.t - x.t)
    .slice(KEEP - 1);
  for (const { d } of old) {
    spawnSync('git', ['worktree', 'remove', '--force', path.join(CACHE, d)], { cwd: ROOT, stdio: 'ignore' });
    fs.rmSync(path.join(CACHE, d), { recursive: true, force: true });
    fs.rmSync(path.join(CACHE, `${d}.log`), { force: true });
  }
  return dir;
}

const pct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;

async function main() {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      only: { type: 'string' },
      rounds: { type: 'string', default: '6' },
      seconds: { type: 'string', default: '2' },
      min: { type: 'string', default: '5' },
      k: { type: 'string', default: '3' },
    },
  });
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const options = { minChange: Number(values.min) / 100, k: Number(values.k) };
  if (!Number.isInteger(rounds) || rounds < 3) throw new Error('--rounds: an integer of at least 3');
  if (!(seconds > 0) || !(options.minChange >= 0) || !(options.k >= 0)) throw new Error('--seconds, --min, --k: numbers (seconds > 0)');
  const ops = selectOps(values.only);
  const sha = baseCommit(values.base);
  const head = git('rev-parse', 'HEAD');
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  if (!fs.existsSync(path.join(ROOT, 'apps/stack/dist/main.js'))) throw new Error('this checkout is not built: npm run build');
  const baseDir = prepareBase(sha);

  console.log(
    `\nA = base ${sha.slice(0, 12)}, B = this tree (${head.slice(0, 12)}${dirty ? ' + uncommitted changes' : ''}); ` +
      `${ops.map((o) => o.name).join(', ')}; ${rounds} rounds of ${seconds} s; node ${process.version}, ${os.cpus().length} cores, ` +
      `backends: ${process.env.DATABASE_URL ? 'real (DATABASE_URL)' : 'embedded'}`,
  );
  const started = Date.now();
  const a = await startTarget('stack', STACK_ENV, [], baseDir);
  const b = await startTarget('stack', STACK_ENV, [], ROOT);
  let results;
  try {
    pinForAB([a, b]);
    const entries = await entriesFor(
      ops,
      [
        { label: 'A', target: a },
        { label: 'B', target: b },
      ],
      seconds,
    );
    // Rounds alternate A, B, A again (A2) and B, A, B again (B2): each side is compared with the two
    // measurements of the other around it, the repeated side's two measurements with each other
    // (the noise an A/A shows now), and neither side is always the one measured first or between.
    for (const e of entries) e.sides.push({ ...e.sides[0], label: 'A2' }, { ...e.sides[1], label: 'B2' });
    const line = (m) => `${m.rps.toFixed(1)}/s ${m.cpuPerRequestUs.toFixed(0)} µs`;
    results = await interleaved(entries, {
      rounds,
      seconds,
      order: (round, [A, B, A2, B2]) => (round % 2 ? [B, A, B2] : [A, B, A2]),
      onRound: (round, name, got) =>
        console.log(
          `  round ${round + 1} ${name}: ${Object.entries(got)
            .map(([label, m]) => `${label} ${line(m)}`)
            .join(', ')}`,
        ),
    });
  } finally {
    await a.stop();
    await b.stop();
  }

  console.log(
    `\n| operation | A ops/s | B ops/s | throughput B/A | A CPU µs/op | B CPU µs/op | CPU per op B/A | PostgreSQL µs/op A → B, B/A | verdict |`,
  );
  console.log('|---|---:|---:|---|---:|---:|---|---|---|');
  let regressions = 0;
  for (const op of ops) {
    const { A, B, A2, B2 } = results[op.name];
    const v = judge(
      A.map((a, i) => ({ a, b: B[i], a2: A2[i], b2: B2[i] })),
      options,
    );
    if (v.verdict === 'regression') regressions++;
    const cell = (m) =>
      `${pct(m.change)}${m.verdict === 'regression' ? ' **worse**' : m.verdict === 'improvement' ? ' better' : ''} ` +
      `(limit ${pct(m.limit)}, noise ±${(m.roundNoise * 100).toFixed(1)}% a round; rounds ${m.rounds.map(pct).join(' ')}; repeats ${m.aa.map(pct).join(' ')})`;
    const of = (xs, f) => median(xs.filter(Boolean).map(f));
    const rps = (x) => x.rps;
    const cpu = (x) => x.cpuPerRequestUs;
    const db = (x) => x.dbCpuPerRequestUs;
    // PostgreSQL's CPU (real backends): judged when the operation spends some there (verdict.js).
    const dbCell = v.metrics.db ? `${of([...A, ...A2], db).toFixed(0)} → ${of([...B, ...B2], db).toFixed(0)}, ${cell(v.metrics.db)}` : '–';
    console.log(
      `| ${op.name} | ${of([...A, ...A2], rps).toFixed(1)} | ${of([...B, ...B2], rps).toFixed(1)} | ${cell(v.metrics.rps)} | ` +
        `${of([...A, ...A2], cpu).toFixed(0)} | ${of([...B, ...B2], cpu).toFixed(0)} | ${cell(v.metrics.cpu)} | ${dbCell} | ${v.verdict.toUpperCase()} |`,
    );
  }
  console.log(
    `\n${((Date.now() - started) / 1000).toFixed(0)} s. ${regressions ? `FAIL: ${regressions} operation(s) regressed beyond the noise` : 'PASS: no regression beyond the noise'} ` +
      `(a metric fails when its median per-round change is worse than both ${values.min}% and ${values.k} standard errors of that median, the noise measured in this run).`,
  );
  process.exitCode = regressions ? 1 : 0;
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
