#!/usr/bin/env node
'use strict';
// `npm run bench`: the core operations (scripts/bench/ops.js) on this checkout's stack (built), in
// a minute or two, each against a bare express app's `GET /x` measured right beside it in the same
// rounds (interleaved: ab.js's engine), so the figures are ratios that a machine's load moves less
// than it moves the rates themselves. For a before/after of a change, use `npm run bench:check`.
// Usage: npm run bench [-- --only me,list-keys] [--rounds 2] [--seconds 2]
// Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
const os = require('node:os');
const { parseArgs } = require('node:util');

const { entriesFor, interleaved } = require('./ab.js');
const { load, startTarget } = require('./lib.js');
const { selectOps, STACK_ENV } = require('./ops.js');
const { median } = require('./verdict.js');

async function main() {
  const { values } = parseArgs({
    options: { only: { type: 'string' }, rounds: { type: 'string', default: '2' }, seconds: { type: 'string', default: '2' } },
  });
  const ops = selectOps(values.only);
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  if (!Number.isInteger(rounds) || rounds < 1 || !(seconds > 0)) throw new Error('--rounds: a positive integer; --seconds: a positive number');
  const started = Date.now();
  const bare = await startTarget('express');
  const stack = await startTarget('stack', STACK_ENV);
  const baseline = { run: (secs) => load({ port: bare.port, path: '/x', seconds: secs }) };
  let results;
  try {
    const entries = await entriesFor(
      ops,
      [
        { label: 'op', target: stack },
        { label: 'express', target: bare, runner: baseline },
      ],
      seconds,
    );
    results = await interleaved(entries, { rounds, seconds, warmup: 1 });
  } finally {
    await stack.stop();
    await bare.stop();
  }
  const pct = (x) => `${(x * 100).toFixed(x < 0.1 ? 2 : 0)}%`;
  console.log(
    `\nnode ${process.version}, ${os.cpus().length} cores, backends: ${JSON.stringify(stack.backends)}; median of ${rounds} round(s) of ${seconds} s ` +
      `(drive-64m: 4 s); each operation's rate and CPU against bare express's GET /x measured beside it in the same round\n`,
  );
  console.log('| operation | ops/s | p50 ms | CPU µs/op | express req/s | rate vs express | CPU vs express |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const op of ops) {
    const { op: mine, express } = results[op.name];
    const p50 = median(mine.map((r) => r.p50));
    console.log(
      `| ${op.name}: ${op.title} | ${median(mine.map((r) => r.rps)).toFixed(1)} | ${Number.isFinite(p50) ? (p50 / 1000).toFixed(2) : ''} | ` +
        `${median(mine.map((r) => r.cpuPerRequestUs)).toFixed(0)} | ${median(express.map((r) => r.rps)).toFixed(0)} | ` +
        `${pct(median(mine.map((r, i) => r.rps / express[i].rps)))} | ${median(mine.map((r, i) => r.cpuPerRequestUs / express[i].cpuPerRequestUs)).toFixed(1)}× |`,
    );
  }
  console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s in all`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
