import { routes } from '@svc/api';
import { loadSettings } from '@svc/kit';
import { LIMIT_BOUNDS, RUN_ERROR_CODES } from '@svc/quickjs';
import { sandboxService } from '@svc/sandbox';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * POST /code/run from outside: a started stack, real keys. Results, console output and errors
 * with lines; each limit ending its run with its code while the stack serves on; escape attempts;
 * the operator's maxima; a full queue answering 429.
 */

let t: TestStack;
let person: string;
let agentKey: string;
beforeAll(async () => {
  t = await startTestStack({
    SVC_MCP_RUN_CODE_POOL_SIZE: '2',
    SVC_MCP_RUN_CODE_MAX_QUEUE: '1',
    // One account may hold both processes and more calls than the queue: the full queue's 429 is tested here (fair shares: run-code-fairness.test.ts).
    SVC_MCP_RUN_CODE_ACCOUNT_SHARE: '2',
    SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT: '10',
    SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: '10000',
    SVC_MCP_RUN_CODE_MAX_MEMORY_MB: '128',
  });
  const user = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Coder' })).body;
  person = user.key;
  const agentId = (await t.ok('POST', '/agents', person, { name: 'code runner' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, person, { name: 'k' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

const run = (body: Record<string, unknown>, key = person) => t.ok('POST', '/code/run', key, body).then((r) => r.body);

/** The stack still serves: another route, and a trivial script. */
async function servesOn() {
  expect((await t.ok('GET', '/me', person)).status).toBe(200);
  expect(await run({ code: '"still serving"' })).toMatchObject({ result: 'still serving', error: null });
}

describe('POST /code/run', () => {
  test('answers the result as JSON, the console output and the limits, to a person and to an agent', async () => {
    const body = await run({ code: 'const xs = [1, 2, 3];\nconsole.log("sum of", xs);\nxs.reduce((a, b) => a + b, 0)' });
    expect(body).toEqual({
      result: 6,
      logs: [{ level: 'log', message: 'sum of [1, 2, 3]' }],
      logsTruncated: false,
      error: null,
      mode: 'script',
      durationMs: expect.any(Number),
      queuedMs: expect.any(Number),
      limits: { timeoutMs: 5000, memoryLimitMb: 64, maxOutputBytes: 65536 },
      toolCalls: 0,
    });
    expect(await run({ code: 'return { who: "agent", n: 2n ** 64n }' }, agentKey)).toMatchObject({
      result: { who: 'agent', n: '18446744073709551616' },
      mode: 'function',
    });
    expect((await t.ok('POST', '/v1/code/run', agentKey, { code: 'export default await Promise.resolve([1])' })).body).toMatchObject({
      result: [1],
      mode: 'module',
    });
  });

  test('a script that fails is a 200 answer with the error, its line and its stack', async () => {
    const body = await run({ code: 'function f(x) {\n  return x.y.z;\n}\nconsole.warn("before");\nf({});' });
    expect(body).toMatchObject({
      result: null,
      logs: [{ level: 'warn', message: 'before' }],
      error: { code: 'script_error', name: 'TypeError', line: 2, stack: expect.stringContaining('at f (script.js:2:') },
    });
    expect((await run({ code: 'let x = ;' })).error).toMatchObject({ code: 'syntax_error', line: 1, column: 9 });
    expect((await run({ code: 'new Promise(() => {})' })).error).toMatchObject({ code: 'unsettled_promise' });
  });

  test('an infinite loop ends at its time limit and the stack serves on', async () => {
    const started = Date.now();
    const body = await run({ code: 'for (;;) {}', timeoutMs: 300 });
    expect(body.error).toMatchObject({ code: 'timeout' });
    expect(body.limits.timeoutMs).toBe(300);
    expect(Date.now() - started).toBeLessThan(5000);
    await servesOn();
  });

  test('a native loop that ignores the interrupt gets its process killed, and a fresh one serves the next call', async () => {
    const body = await run({ code: 'new Array(2 ** 31).join("x").length', timeoutMs: 300 });
    expect(body.error).toMatchObject({ code: 'timeout', message: expect.stringMatching(/killed/) });
    await servesOn();
    await servesOn();
  });

  test('a string-building memory bomb ends with memory_limit', async () => {
    expect((await run({ code: 'let s = "a"; for (;;) s += s;' })).error).toMatchObject({ code: 'memory_limit' });
    expect(
      (await run({ code: 'const a = []; for (let i = 0; ; i++) a.push("x".repeat(1000) + i);', memoryLimitMb: 16, timeoutMs: 10_000 })).error,
    ).toMatchObject({
      code: 'memory_limit',
    });
    await servesOn();
  });

  test('deep recursion ends with stack_overflow', async () => {
    expect((await run({ code: 'const f = (n) => f(n + 1) + 1;\nf(0)' })).error).toMatchObject({ code: 'stack_overflow', line: 1 });
    expect((await run({ code: 'JSON.parse("[".repeat(200000) + "]".repeat(200000))' })).error).toMatchObject({ code: 'stack_overflow' });
    await servesOn();
  });

  test('output past the limit ends the run with output_limit, keeping what fits', async () => {
    const body = await run({ code: 'for (let i = 0; ; i++) console.log("line", i)', maxOutputBytes: 2000 });
    expect(body).toMatchObject({ error: { code: 'output_limit' }, logsTruncated: true, result: null });
    expect(body.logs[0]).toEqual({ level: 'log', message: 'line 0' });
    expect(JSON.stringify(body.logs).length).toBeLessThan(2000);
    expect((await run({ code: '"x".repeat(3000)', maxOutputBytes: 2000 })).error).toMatchObject({ code: 'output_limit' });
    await servesOn();
  });

  test('escape attempts find only the sandbox', async () => {
    const probe = await run({
      code: [
        'const g = constructor.constructor("return this")();',
        'const names = ["require", "process", "module", "global", "Buffer", "fetch", "setTimeout", "WebAssembly", "std", "os"];',
        '({ same: g === globalThis, found: names.filter((n) => typeof g[n] !== "undefined"),',
        '   viaConsole: console.log.constructor("return typeof process")(), viaEval: eval("typeof require") })',
      ].join('\n'),
    });
    expect(probe.result).toEqual({ same: true, found: [], viaConsole: 'undefined', viaEval: 'undefined' });
    expect((await run({ code: 'import("fs")' })).error).toMatchObject({
      code: 'script_error',
      message: expect.stringMatching(/could not load module/),
    });
    await run({ code: 'Object.prototype.polluted = "yes"; globalThis.leak = 1; 0' });
    expect((await run({ code: '[typeof ({}).polluted, typeof leak]' })).result).toEqual(['undefined', 'undefined']);
  });

  test('checks its input: a key, the body, limits within the operator’s maxima', async () => {
    const anonymous = await t.call('POST', '/code/run', { body: { code: '1' } });
    expect(anonymous.status).toBe(401);
    for (const body of [{}, { code: '' }, { code: 1 }, { code: '1', extra: true }, { code: '1', timeoutMs: 0 }, { code: '1', memoryLimitMb: 8 }]) {
      const r = await t.call('POST', '/code/run', { key: person, body });
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
      expect(r.body).toEqual(ERROR_BODY);
    }
    // Within the route's bounds but above this operator's maxima (10 s, 128 MiB).
    const tooLong = await t.call('POST', '/code/run', { key: person, body: { code: '1', timeoutMs: 20_000 } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'invalid_limit', message: expect.stringMatching(/timeoutMs may be at most 10000 ms/) });
    const tooBig = await t.call('POST', '/code/run', { key: person, body: { code: '1', memoryLimitMb: 512 } });
    expect(tooBig.body.error).toMatchObject({ code: 'invalid_limit' });
    expect((await run({ code: '1', timeoutMs: 10_000, memoryLimitMb: 128 })).limits).toMatchObject({ timeoutMs: 10_000, memoryLimitMb: 128 });
  });

  test('answers 429 with Retry-After when every sandbox is busy and the queue is full', async () => {
    // Wide margins: the requests must have arrived (and taken the sandboxes and the queue's one place)
    // before the refused one, even on a loaded machine.
    const slow = { code: 'const end = Date.now() + 4000; while (Date.now() < end) {} "slow"', timeoutMs: 10_000 };
    const running = [run(slow), run(slow)];
    await new Promise((r) => setTimeout(r, 1000));
    const queued = run({ code: '"queued"' });
    await new Promise((r) => setTimeout(r, 1000));
    const refused = await t.call('POST', '/code/run', { key: person, body: { code: '1' } });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('sandbox_busy');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await Promise.all(running)).map((b) => b.result)).toEqual(['slow', 'slow']);
    expect((await queued).result).toBe('queued');
  }, 30_000);

  test('the route’s bounds are the sandbox’s, its error codes the same list', () => {
    const r = routes.find((x) => x.id === 'code.run')!;
    const shape = (r.body as any).shape;
    const bounds = (k: string) => [shape[k].unwrap().minValue, shape[k].unwrap().maxValue];
    expect(bounds('timeoutMs')).toEqual([LIMIT_BOUNDS.timeoutMs.min, LIMIT_BOUNDS.timeoutMs.max]);
    expect(bounds('memoryLimitMb')).toEqual([LIMIT_BOUNDS.memoryLimitMb.min, LIMIT_BOUNDS.memoryLimitMb.max]);
    expect(bounds('maxOutputBytes')).toEqual([LIMIT_BOUNDS.maxOutputBytes.min, LIMIT_BOUNDS.maxOutputBytes.max]);
    const errorSchema = (r.response as any).shape.error.unwrap().unwrap();
    expect(errorSchema.shape.code.options).toEqual([...RUN_ERROR_CODES]);
  });

  test('settings: a bad value names its variable', () => {
    const load = (env: Record<string, string>) => loadSettings({ mcp: sandboxService.settings! }, env);
    expect(load({})).toMatchObject({ mcp: { SVC_MCP_RUN_CODE_POOL_SIZE: 2, SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: 30_000 } });
    expect(() => load({ SVC_MCP_RUN_CODE_POOL_SIZE: '0' })).toThrow(/SVC_MCP_RUN_CODE_POOL_SIZE/);
    expect(() => load({ SVC_MCP_RUN_CODE_MAX_MEMORY_MB: '8' })).toThrow(/SVC_MCP_RUN_CODE_MAX_MEMORY_MB/);
    expect(() => load({ SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: '600000' })).toThrow(/SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS/);
  });
});
