#!/usr/bin/env node
/**
 * The stateful fuzzer (docs/reliability.md, "Stateful fuzzing"): test/platform/fuzz-stateful.test.ts,
 * against a stack already running at a URL, or (without --url) against one it starts on the
 * backends the environment names. It prints the phases, the counts, and each failing request with
 * the seed that replays it.
 *
 *   node scripts/fuzz-stateful.mjs [--url http://127.0.0.1:8080 --key svc_…] [--seed N] [--long]
 *
 * --url    the running stack (its gateway); --key its operator key (SVC_BOOTSTRAP_KEY): two accounts are made with it
 * --seed   the run's seed (default: the time)
 * --long   more rounds, mutations and seeds (SVC_FUZZ_LONG=1)
 *
 * Exit status: 0 when no request failed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opts = { url: undefined, key: process.env.SVC_BOOTSTRAP_KEY, seed: String(Date.now() % 2 ** 31), long: false };
for (let i = 0; i < args.length; i++) {
  const name = args[i].replace(/^--/, '');
  if (name === 'long') {
    opts.long = true;
    continue;
  }
  if (!(name in opts) || args[i + 1] === undefined) {
    console.error(`usage: node scripts/fuzz-stateful.mjs [--url URL --key KEY] [--seed N] [--long] (${args[i]}?)`);
    process.exit(2);
  }
  opts[name] = args[++i];
}
if (!/^\d+$/.test(opts.seed)) {
  console.error('--seed: must be a whole number');
  process.exit(2);
}
if (opts.url && !opts.key) {
  console.error('--url needs the stack operator key: --key or SVC_BOOTSTRAP_KEY');
  process.exit(2);
}
console.log(`stateful fuzz: seed ${opts.seed}${opts.long ? ', long' : ''}${opts.url ? `, against ${opts.url}` : ''}`);
const env = {
  ...process.env,
  SVC_FUZZ_SEED: opts.seed,
  ...(opts.long ? { SVC_FUZZ_LONG: '1' } : {}),
  ...(opts.url ? { SVC_FUZZ_URL: opts.url, SVC_FUZZ_BOOTSTRAP_KEY: opts.key } : {}),
};
const jest = path.join(root, 'node_modules/jest/bin/jest.js');
const run = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', '--disable-warning=ExperimentalWarning', jest, '--runTestsByPath', 'test/platform/fuzz-stateful.test.ts'],
  { cwd: root, env, stdio: 'inherit' },
);
process.exit(run.status ?? 1);
