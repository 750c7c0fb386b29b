#!/usr/bin/env node
/**
 * The long fuzz run (docs/reliability.md, "Fuzzing"): test/platform/fuzz.test.ts with more cases, for a
 * while, on the backends the environment names (DATABASE_URL, REDIS_URL, NATS_URL; embedded ones
 * otherwise). It prints a summary per operation and each failing case with the seed that replays it.
 *
 *   node scripts/fuzz.mjs [--seed N] [--cases N] [--duration SECONDS] [--only op.id,op.id]
 *
 * --seed      the run's seed (default: the time); round k of a run uses seed + k
 * --cases     cases per operation in each round (default 30)
 * --duration  keep running rounds until this many seconds have passed (default: one round)
 * --only      only these operations (replaying a failure: its seed and its operation)
 *
 * Exit status: 0 when no case failed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opts = { seed: String(Date.now() % 2 ** 31), cases: '30', duration: undefined, only: undefined };
for (let i = 0; i < args.length; i++) {
  const name = args[i].replace(/^--/, '');
  if (!(name in opts) || args[i + 1] === undefined) {
    console.error(`usage: node scripts/fuzz.mjs [--seed N] [--cases N] [--duration SECONDS] [--only op.id,...] (${args[i]}?)`);
    process.exit(2);
  }
  opts[name] = args[++i];
}
for (const k of ['seed', 'cases', 'duration']) {
  if (opts[k] !== undefined && !/^\d+$/.test(opts[k])) {
    console.error(`--${k}: must be a whole number`);
    process.exit(2);
  }
}

console.log(
  `fuzz: seed ${opts.seed}, ${opts.cases} cases per operation${opts.duration ? `, for ${opts.duration} s` : ''}${opts.only ? `, only ${opts.only}` : ''}`,
);
const env = {
  ...process.env,
  FUZZ_SEED: opts.seed,
  FUZZ_CASES: opts.cases,
  // However slow the machine: the run ends by its duration or when its cases are done, never by jest's timeout.
  FUZZ_TIMEOUT_MS: String(6 * 3600 * 1000),

  ...(opts.duration ? { FUZZ_DURATION_MS: String(Number(opts.duration) * 1000) } : {}),
  ...(opts.only ? { FUZZ_ONLY: opts.only } : {}),
};
const jest = path.join(root, 'node_modules/jest/bin/jest.js');
const run = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', '--disable-warning=ExperimentalWarning', jest, '--runTestsByPath', 'test/platform/fuzz.test.ts'],
  { cwd: root, env, stdio: 'inherit' },
);
process.exit(run.status ?? 1);
