import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { routes } from '@svc/api';

import { type Exclusion, formatReport, fuzz, type FuzzReport } from '../support/fuzz/run';
import { changes, snapshot } from '../support/fuzz/snapshot';
import { makeTenant, seedGeneric, type Tenant } from '../support/fuzz/tenants';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Every operation of the route table, fuzzed from its schemas (test/support/fuzz): a valid case,
 * one with another tenant's real ids, and hostile mutations (wrong types, missing and extra fields,
 * boundaries, 1 MB strings, deep nesting, unicode with U+0000 and lone surrogates, numbers out of
 * range, path tricks, bad content types, query and header tricks, other credentials). No answer
 * may be a 5xx (a 503/504 only with the contract's body), every error has the contract's body,
 * every success the documented shape, and nothing of the other tenant shows. Bounded here
 * (FUZZ_CASES per operation, default 6: the valid case, the other tenant's ids, four mutations that
 * each operation takes in turn from a place of its own, so that the run covers every mutation); scripts/fuzz.mjs runs longer.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const CASES = Number(process.env.FUZZ_CASES ?? 6);
const DURATION = process.env.FUZZ_DURATION_MS ? Number(process.env.FUZZ_DURATION_MS) : undefined;
const ONLY = process.env.FUZZ_ONLY ? process.env.FUZZ_ONLY.split(',') : undefined;

/** Operations no case goes to, with the reason. */
const EXCLUDED: Exclusion[] = [];

let t: TestStack;
let upstream: http.Server;
let ada: Tenant;
let bea: Tenant;
let report: FuzzReport;
let beaBefore: Map<string, string>;
let beaAfter: Map<string, string>;

beforeAll(
  async () => {
    // Providers and venues point here: a loopback server that refuses every call at once, so that
    // nothing generated leaves the machine and no case waits on a connection.
    upstream = http.createServer((_req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const fake = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    t = await startTestStack({
      SVC_RATE_LIMITS: 'off',
      SVC_RATE_LIMITS_ACCOUNT: 'off',
      SVC_MODELS_OPENAI_URL: fake,
      SVC_MODELS_ANTHROPIC_URL: fake,
      SVC_TRADING_ALPACA_URL: fake,
    });
    const t0 = Date.now();
    const marker = `BEASECRET${SEED.toString(36)}X`;
    ada = await makeTenant(t, 'Ada', `ADA${SEED.toString(36)}`);
    bea = await makeTenant(t, 'Bea', marker);
    await seedGeneric(t, bea, routes, SEED);
    // Ada's host answers its calls on the bus (a host that never answers would only make them wait).
    const hostId = ada.pool.withPrefix('host')[0];
    if (hostId) {
      const bus = await t.stack.backends.bus();
      await bus.respond(`hosts.${hostId}.call`, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
    }
    const setupMs = Date.now() - t0;
    beaBefore = await snapshot(t, routes, bea, SEED);
    const only = ONLY ?? routes.map((r) => r.id).filter((id) => !EXCLUDED.some((e) => e.operation === id));
    report = await fuzz(t, routes, ada, bea, { seed: SEED, cases: CASES, durationMs: DURATION, only, concurrency: 4 });
    beaAfter = await snapshot(t, routes, bea, SEED);
    if (process.env.FUZZ_REPORT !== '0') process.stdout.write(`fixtures: ${setupMs} ms\n${formatReport(report)}\n`);
  },
  (DURATION ?? 0) + Number(process.env.FUZZ_TIMEOUT_MS ?? 600_000),
);
afterAll(async () => {
  await t?.stop();
  upstream?.close();
});

test('the tenants were made with every kind of fixture', () => {
  expect(ada.notes).toEqual([]);
  expect(bea.notes).toEqual([]);
  for (const prefix of ['acct', 'agt', 'fld', 'file', 'thr', 'site', 'dep', 'prof', 'host', 'grt', 'key', 'ord']) {
    expect([prefix, bea.pool.withPrefix(prefix).length > 0]).toEqual([prefix, true]);
  }
});

test('every operation of the route table got its cases (or is listed as excluded, with the reason)', () => {
  const fuzzed = new Set(report.operations.filter((s) => s.cases > 0).map((s) => s.operation));
  const missing = routes.filter((r) => !fuzzed.has(r.id) && !EXCLUDED.some((e) => e.operation === r.id)).map((r) => r.id);
  if (!ONLY) expect(missing).toEqual([]);
});

test('no answer is a 5xx, every error has the contract body, no other tenant data shows', () => {
  const failing = formatReport({ ...report, operations: [], unavailable: [], kinds: {} })
    .split('\n')
    .slice(1);
  expect(failing).toEqual([]);
});

test('what the other tenant sees of its resources is the same after the run', () => {
  expect(changes(beaBefore, beaAfter)).toEqual([]);
});
