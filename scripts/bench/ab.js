#!/usr/bin/env node
'use strict';
// An interleaved A/B of one request path between two checkouts of svc (e.g. main and the commit a
// change started from, as a `git worktree`), each built. Both stacks run at once, each pinned to
// core 1 and the load generator to core 0 (taskset), so that the two compete the same way; rounds
// alternate A and B, and the verdict is the median of the per-round ratios.
// Usage: node scripts/bench/ab.js <checkout A> <checkout B> [path=/me] [rounds=6] [seconds=3]
// Backends follow the environment (DATABASE_URL etc.), embedded otherwise. The engine (`interleaved`,
// `pinForAB`) is also the regression guard's (check.js), over several operations.
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const { load, measureRun, startTarget } = require('./lib.js');

/** Pins a process and its threads to one CPU (Linux taskset); says so once if it cannot. */
let pinWarned = false;
function pin(cpu, pid) {
  try {
    execFileSync('taskset', ['-acp', String(cpu), String(pid)], { stdio: 'ignore' });
  } catch {
    if (!pinWarned) console.warn('taskset failed: the targets are not pinned');
    pinWarned = true;
  }
}

/** The load generator (this process) on core 0, the targets on core 1: they compete for one core alike. */
function pinForAB(targets) {
  pin(0, process.pid);
  for (const t of targets) pin(1, t.pid);
}

/**
 * Interleaved measurements: `entries` are [{ name, seconds?, sides: [{ label, target, runner }] }]
 * (runner: { run(seconds), reset?() }, as scripts/bench/ops.js makes them; a side may repeat
 * another's runner under a label of its own, to measure it twice in a round). Every runner is warmed
 * up first; then, in each round, each entry's sides are measured one after the other
 * (lib.measureRun) in the order `order(round, sides)` gives (by default reversed on odd rounds, so
 * that neither side always follows the other; it may leave sides out). A failed request stops the
 * run. Returns { [name]: { [label]: [measurement, one per round; undefined where left out] } };
 * `onRound(round, name, measurements)` sees each round as it ends.
 */
async function interleaved(
  entries,
  { rounds, seconds, warmup = 2, order = (round, sides) => (round % 2 ? [...sides].reverse() : sides), onRound = () => {} },
) {
  const out = Object.fromEntries(entries.map((e) => [e.name, Object.fromEntries(e.sides.map((s) => [s.label, []]))]));
  const once = async (entry, side, secs) => {
    await side.runner.reset?.();
    const r = await measureRun(side.target, side.runner.run, secs);
    if (r.errors) throw new Error(`${entry.name} (${side.label}): ${r.errors} failed (statuses ${r.statuses})`);
    return r;
  };
  const warm = new Set();
  for (const entry of entries)
    for (const side of entry.sides) {
      if (!warm.has(side.runner)) await once(entry, side, warmup);
      warm.add(side.runner);
    }
  for (let round = 0; round < rounds; round++) {
    for (const entry of entries) {
      const sides = order(round, entry.sides);
      const got = {};
      for (const side of sides) got[side.label] = await once(entry, side, entry.seconds ?? seconds);
      for (const side of entry.sides) out[entry.name][side.label].push(got[side.label]);
      onRound(round, entry.name, got);
    }
  }
  return out;
}

/**
 * interleaved()'s entries for operations of scripts/bench/ops.js: each prepared on every side's
 * target, in order, unless the side brings its own runner (a baseline measured beside it).
 */
async function entriesFor(ops, sides, seconds) {
  const entries = [];
  for (const op of ops) {
    const prepared = [];
    for (const { label, target, runner } of sides) prepared.push({ label, target, runner: runner ?? (await op.prepare(target)) });
    entries.push({ name: op.name, seconds: op.seconds ?? seconds, sides: prepared });
  }
  return entries;
}

async function main() {
  const [dirA, dirB, route = '/me', rounds = '6', seconds = '3'] = process.argv.slice(2);
  if (!dirA || !dirB) throw new Error('usage: node scripts/bench/ab.js <checkout A> <checkout B> [path] [rounds] [seconds]');
  const a = await startTarget('stack', {}, [], path.resolve(dirA));
  const b = await startTarget('stack', {}, [], path.resolve(dirB));
  pinForAB([a, b]);
  const side = (label, t) => ({
    label,
    target: t,
    runner: { run: (secs) => load({ port: t.port, path: route, headers: { authorization: `Bearer ${t.key}` }, seconds: secs }) },
  });
  let rows;
  try {
    rows = (
      await interleaved([{ name: route, sides: [side('A', a), side('B', b)] }], { rounds: Number(rounds), seconds: Number(seconds), warmup: 3 })
    )[route];
  } finally {
    await a.stop();
    await b.stop();
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const pct = (x) => `${(x * 100).toFixed(0)}%`;
  for (const k of ['A', 'B']) console.log(k, rows[k].map((r) => `${r.rps.toFixed(0)} req/s ${r.cpuPerRequestUs.toFixed(1)} µs`).join(' | '));
  const rps = rows.B.map((r, i) => r.rps / rows.A[i].rps);
  const cpu = rows.B.map((r, i) => r.cpuPerRequestUs / rows.A[i].cpuPerRequestUs);
  console.log(`${route}: B/A requests per second ${pct(median(rps))} (rounds ${rps.map(pct).join(' ')}), CPU per request ${pct(median(cpu))}`);
}

if (require.main === module)
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });

module.exports = { entriesFor, interleaved, pinForAB };
