#!/usr/bin/env node
/**
 * The stateful fuzzer (docs/reliability.md, "Stateful fuzzing"): test/platform/fuzz-stateful.test.ts,
 * against a stack already running at a URL, or (without --url) against one it starts on the
 * backends the environment names. It prints the phases, the counts, and each failing request with
 * the seed that replays it.
 *
 *   node scripts/fuzz-stateful.mjs [--url http://127.0.0.1:8080 --key svc_…] [--seed N] [--long]
 *
 * --url    the running stack (its gateway); --key its operator key (SVC_BOOTSTRAP_KEY): two accounts are made with it.
 *          Start that stack with SVC_RATE_LIMITS=off SVC_RATE_LIMITS_ACCOUNT=off, or its rate limits refuse
 *          producers and fewer chains run; without model providers or a broker, their operations answer 503
 *          (counted apart, not failures).
 * --seed   the run's seed (default: the time)
 * --long   more rounds, mutations and seeds (SVC_FUZZ_LONG=1)
 *
 * Exit status: 0 when no request failed.
 */
import { readOptions, runSuite } from './fuzz-common.mjs';

const opts = readOptions('node scripts/fuzz-stateful.mjs [--url URL --key KEY] [--seed N] [--long]', {
  strings: { url: undefined, key: process.env.SVC_BOOTSTRAP_KEY, seed: String(Date.now() % 2 ** 31) },
  flags: ['long'],
  whole: ['seed'],
});
if (opts.url && !opts.key) {
  console.error('--url needs the stack operator key: --key or SVC_BOOTSTRAP_KEY');
  process.exit(2);
}
console.log(`stateful fuzz: seed ${opts.seed}${opts.long ? ', long' : ''}${opts.url ? `, against ${opts.url}` : ''}`);
runSuite('test/platform/fuzz-stateful.test.ts', {
  SVC_FUZZ_SEED: opts.seed,
  ...(opts.long ? { SVC_FUZZ_LONG: '1' } : {}),
  ...(opts.url ? { SVC_FUZZ_URL: opts.url, SVC_FUZZ_BOOTSTRAP_KEY: opts.key } : {}),
});
