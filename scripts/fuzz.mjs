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
import { readOptions, runSuite } from './fuzz-common.mjs';

const opts = readOptions('node scripts/fuzz.mjs [--seed N] [--cases N] [--duration SECONDS] [--only op.id,...]', {
  strings: { seed: String(Date.now() % 2 ** 31), cases: '30', duration: undefined, only: undefined },
  whole: ['seed', 'cases', 'duration'],
});

console.log(
  `fuzz: seed ${opts.seed}, ${opts.cases} cases per operation${opts.duration ? `, for ${opts.duration} s` : ''}${opts.only ? `, only ${opts.only}` : ''}`,
);
runSuite('test/platform/fuzz.test.ts', {
  FUZZ_SEED: opts.seed,
  FUZZ_CASES: opts.cases,
  // However slow the machine: the run ends by its duration or when its cases are done, never by jest's timeout.
  FUZZ_TIMEOUT_MS: String(6 * 3600 * 1000),
  ...(opts.duration ? { FUZZ_DURATION_MS: String(Number(opts.duration) * 1000) } : {}),
  ...(opts.only ? { FUZZ_ONLY: opts.only } : {}),
});
