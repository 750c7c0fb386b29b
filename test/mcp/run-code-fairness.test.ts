import { legacyClient, type McpTestClient, outcome } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Fair shares of the code sandbox (docs/run-code.md, "Fair shares"), with two accounts: one floods
 * run_code with more slow scripts than the pool holds; the other's call is served while the
 * flood's calls wait, and the flood past its cap is refused with 429, Retry-After and the limit
 * named. Outcomes only: who got an answer, in which order, with what.
 */

let t: TestStack;
let ada: string;
let bob: string;
let adaAgent: string;
beforeAll(async () => {
  // Two processes; an account holds one of them (the default share of a pool of 2) and may have 3
  // calls in progress (running and waiting); its agent 2 (half, rounded up). The token buckets are
  // off: the bursts here are about concurrency, and rate limits have their own suite.
  t = await startTestStack({
    SVC_MCP_RUN_CODE_POOL_SIZE: '2',
    SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT: '3',
    SVC_RATE_LIMITS: 'off',
    SVC_RATE_LIMITS_ACCOUNT: 'off',
  });
  const person = async (name: string) => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key as string;
  [ada, bob] = await Promise.all([person('Ada'), person('Bob')]);
  const agentId = (await t.ok('POST', '/agents', ada, { name: 'flooder' })).body.id;
  adaAgent = (await t.ok('POST', `/agents/${agentId}/keys`, ada, { name: 'k' })).body.key;
  // Both processes up before the flood.
  await Promise.all([t.ok('POST', '/code/run', ada, { code: '1' }), t.ok('POST', '/code/run', bob, { code: '1' })]);
}, 60_000);
afterAll(() => t?.stop());

/** A script that holds its process for `ms` of wall-clock time, then answers `name`. */
const slow = (name: string, ms = 1500) => ({
  code: `const end = Date.now() + ${ms}; while (Date.now() < end) {} ${JSON.stringify(name)}`,
  timeoutMs: 10_000,
});

/** Sends `n` calls at once; resolves `refusedAll` once `refusals` of them were refused. */
function flood(key: string, n: number, refusals: number) {
  const done: string[] = [];
  let refused = 0;
  let onRefusals: () => void;
  const refusedAll = new Promise<void>((r) => (onRefusals = r));
  const answers = Array.from({ length: n }, (_, i) =>
    t.call('POST', '/v1/code/run', { key, body: slow(`a${i}`) }).then((res) => {
      if (res.status === 429 && ++refused === refusals) onRefusals();
      if (res.status === 200) done.push(res.body.result);
      return res;
    }),
  );
  return { answers: Promise.all(answers), refusedAll, done };
}

test("one account's flood does not hold the pool: another account's call is served before the flood's waiting calls, the excess gets 429", async () => {
  const a = flood(ada, 10, 7);
  // Every one of the flood's calls has reached the sandbox (seven were refused, so three are in).
  await a.refusedAll;
  const b = await t.call('POST', '/v1/code/run', { key: bob, body: { code: '"bob"' } });
  expect([b.status, b.body.result, b.body.error]).toEqual([200, 'bob', null]);
  // Served while Ada's accepted calls were still running or waiting.
  const doneWhenBobWasServed = a.done.length;
  expect(doneWhenBobWasServed).toBeLessThan(3);

  const answers = await a.answers;
  const ok = answers.filter((r) => r.status === 200);
  const refused = answers.filter((r) => r.status === 429);
  expect([ok.length, refused.length]).toEqual([3, 7]);
  for (const r of ok) expect(r.body.error).toBeNull();
  for (const r of refused) {
    expect(r.headers.get('retry-after')).toBe('1');
    expect(r.body.error).toEqual({
      code: 'concurrency_limit',
      message: expect.stringMatching(/an account may have 3 in progress \(limit run_code\)/),
      requestId: expect.any(String),
      details: { limit: 'run_code', scope: 'account', max: 3 },
    });
  }
}, 60_000);

test('an agent counts under its account and on its own: half the account’s calls', async () => {
  const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => t.call('POST', '/v1/code/run', { key: adaAgent, body: slow(`g${i}`, 500) })));
  expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 429, 429]);
  const refusal = answers.find((r) => r.status === 429)!;
  expect(refusal.body.error).toMatchObject({ code: 'concurrency_limit', details: { limit: 'run_code', scope: 'agent', max: 2 } });
}, 60_000);

test('the MCP tool run_code is held to the same shares: the flood is refused with the limit named, the other account served', async () => {
  const clients: McpTestClient[] = [await legacyClient(t.url, ada), await legacyClient(t.url, bob)];
  try {
    const [adaMcp, bobMcp] = clients as [McpTestClient, McpTestClient];
    const results = Array.from({ length: 6 }, (_, i) => adaMcp.callTool({ name: 'run_code', arguments: slow(`m${i}`) }).then(outcome));
    let refusedCount = 0;
    const threeRefused = new Promise<void>((resolve) => {
      for (const r of results)
        r.then(
          (x) => x.isError && ++refusedCount === 3 && resolve(),
          () => undefined,
        );
    });
    await Promise.race([threeRefused, Promise.allSettled(results)]);
    const bobs = outcome(await bobMcp.callTool({ name: 'run_code', arguments: { code: '"bob"' } }));
    expect(bobs).toMatchObject({ isError: false, body: { result: 'bob', error: null } });
    const all = await Promise.all(results);
    const refused = all.filter((x) => x.isError);
    expect([all.length - refused.length, refused.length]).toEqual([3, 3]);
    for (const x of refused) {
      expect(x.body.error).toMatchObject({
        code: 'concurrency_limit',
        details: { limit: 'run_code', scope: 'account', max: 3, retryAfterSeconds: 1 },
      });
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}, 60_000);
