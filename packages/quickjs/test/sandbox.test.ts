import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

import {
  DEFAULT_LIMITS,
  LimitError,
  resolveLimits,
  Sandbox,
  SandboxAbortedError,
  SandboxBusyError,
  SandboxClosedError,
  type SandboxEvent,
} from '@svc/quickjs';

// The sandbox's pool of child processes, as a caller sees it: results, console output, errors with
// positions, each limit ending a run with its code, and the pool serving on after every kill.

const events: SandboxEvent[] = [];
let sb: Sandbox;

beforeAll(async () => {
  sb = new Sandbox({ poolSize: 2, onEvent: (e) => events.push(e) });
  await sb.start();
});
afterAll(() => sb.close());

const run = (code: string, limits: { timeoutMs?: number; memoryLimitMb?: number; maxOutputBytes?: number } = {}) => sb.run({ code, ...limits });
const result = async (code: string) => {
  const r = await run(code);
  if (r.error) throw new Error(`${code}: ${JSON.stringify(r.error)}`);
  return JSON.parse(r.resultJson!);
};

/** A trivial script still answers, from a process the pool has now. */
async function servesOn() {
  const r = await run('6 * 7');
  expect(r.resultJson).toBe('42');
}

describe('results', () => {
  it('is the value of the last expression, as JSON', async () => {
    expect(await result('1 + 1')).toBe(2);
    expect(await result('const xs = [3, 1, 2];\nxs.sort();\n({ xs, n: xs.length, s: "é" })')).toEqual({ xs: [1, 2, 3], n: 3, s: 'é' });
    const r = await run('let x = 5; x * 2');
    expect(r).toMatchObject({ resultJson: '10', mode: 'script', logs: [], logsTruncated: false, limits: DEFAULT_LIMITS });
    expect(r.error).toBeUndefined();
  });

  it('follows JSON: undefined and functions are null, BigInt is a string, dates are text', async () => {
    expect(await result('undefined')).toBeNull();
    expect(await result('(function () {})')).toBeNull();
    expect(await result('({ big: 2n ** 70n, d: new Date(0), f() {}, u: undefined, n: NaN })')).toEqual({
      big: '1180591620717411303424',
      d: '1970-01-01T00:00:00.000Z',
      n: null,
    });
  });

  it('awaits a promise the script ends with (an async function)', async () => {
    expect(await result('(async () => { const x = await Promise.resolve(20); return x + 1; })()')).toBe(21);
    const r = await run('Promise.reject(new TypeError("nope"))');
    expect(r.error).toMatchObject({ code: 'script_error', name: 'TypeError', message: 'TypeError: nope' });
  });

  it('runs a module: the default export, top-level await', async () => {
    const r = await run('const a = await Promise.resolve(2);\nexport default { a, b: a * 2 };');
    expect(r).toMatchObject({ mode: 'module', resultJson: '{"a":2,"b":4}' });
    expect(JSON.parse((await run('export const x = 1; export const y = "two";')).resultJson!)).toEqual({ x: 1, y: 'two' });
  });

  it('takes a top-level return as the body of an async function', async () => {
    const r = await run('const n = await Promise.resolve(3);\nif (n > 2) return { big: n };\nreturn null;');
    expect(r).toMatchObject({ mode: 'function', resultJson: '{"big":3}' });
  });

  it('runs queued jobs before answering', async () => {
    const r = await run('Promise.resolve().then(() => console.log("later")); "now"');
    expect(r.resultJson).toBe('"now"');
    expect(r.logs).toEqual([{ level: 'log', message: 'later' }]);
  });

  it('says when the promise it ended with can never settle', async () => {
    expect((await run('new Promise(() => {})')).error).toMatchObject({ code: 'unsettled_promise' });
  });

  it('says when the result is not JSON', async () => {
    const r = await run('const o = {}; o.self = o; o');
    expect(r.error).toMatchObject({ code: 'result_not_serializable' });
    expect(r.error!.message).toMatch(/circular/);
  });
});

describe('console', () => {
  it('keeps each level and formats values readably', async () => {
    const r = await run(
      'console.log("a", 1, { x: [1, "two"] }, null, undefined);\nconsole.info(new Map([[1, 2]]), new Set(["s"]));\nconsole.warn(10n, Symbol("q"), -0);\nconsole.error(new RangeError("bad"));\nconsole.debug(function named() {});',
    );
    expect(r.logs).toEqual([
      { level: 'log', message: 'a 1 { x: [1, "two"] } null undefined' },
      { level: 'info', message: 'Map(1) { 1 => 2 } Set(1) { "s" }' },
      { level: 'warn', message: '10n Symbol(q) -0' },
      { level: 'error', message: expect.stringMatching(/^RangeError: bad\n {4}at <eval> \(script\.js:4:\d+\)$/) },
      { level: 'debug', message: '[Function: named]' },
    ]);
  });

  it('keeps output past an error, and prints cycles without looping', async () => {
    const r = await run('const o = { name: "o" }; o.me = o; console.log(o); throw new Error("after")');
    expect(r.logs).toEqual([{ level: 'log', message: '{ name: "o", me: [Circular] }' }]);
    expect(r.error).toMatchObject({ code: 'script_error', message: 'Error: after' });
  });

  it('stops a run whose output passes the output limit, keeping what fits', async () => {
    const r = await run('for (;;) console.log("spam spam spam")', { maxOutputBytes: 1000, timeoutMs: 5000 });
    expect(r.error).toMatchObject({ code: 'output_limit' });
    expect(r.logsTruncated).toBe(true);
    // Each entry counts its text and 32 bytes for its place in the answer.
    const bytes = r.logs.reduce((n, l) => n + Buffer.byteLength(l.message) + 32, 0);
    expect(bytes).toBeLessThanOrEqual(1000);
    expect(bytes).toBeGreaterThan(900);
    expect(JSON.stringify(r.logs).length).toBeLessThan(1000);
    expect(r.durationMs).toBeLessThan(5000);
  });

  it('counts the result against the output limit', async () => {
    const r = await run('"x".repeat(5000)', { maxOutputBytes: 4096 });
    expect(r.error).toMatchObject({ code: 'output_limit' });
    expect(r.resultJson).toBeNull();
    expect((await run('"x".repeat(4000)', { maxOutputBytes: 4096 })).error).toBeUndefined();
  });
});

describe('errors', () => {
  it('gives the line and column of a runtime error and its stack', async () => {
    const r = await run('const a = 1;\nfunction f() {\n  return a.b.c;\n}\nf();');
    expect(r.error).toMatchObject({ code: 'script_error', name: 'TypeError', line: 3, column: 13 });
    expect(r.error!.message).toMatch(/^TypeError: /);
    expect(r.error!.stack).toBe('    at f (script.js:3:13)\n    at <eval> (script.js:5:2)');
  });

  it('gives the position of a syntax error', async () => {
    const r = await run('let ok = 1;\nlet x = ;');
    expect(r.error).toMatchObject({ code: 'syntax_error', name: 'SyntaxError', line: 2, column: 9 });
    const m = await run('export default 1;\nexport const = 2;');
    expect(m).toMatchObject({ mode: 'module', error: { code: 'syntax_error', line: 2 } });
  });

  it("gives positions in the caller's code in function mode", async () => {
    const r = await run('return null.x');
    expect(r).toMatchObject({ mode: 'function', error: { code: 'script_error', line: 1, column: 12 } });
  });

  it('describes thrown values that are not errors', async () => {
    expect((await run('throw { reason: "no" }')).error).toMatchObject({ code: 'script_error', message: 'Uncaught { reason: "no" }' });
    expect((await run('throw 42')).error).toMatchObject({ code: 'script_error', message: 'Uncaught 42' });
  });

  it('refuses imports: nothing can be loaded', async () => {
    expect((await run('import fs from "fs";\nfs')).error).toMatchObject({
      code: 'script_error',
      message: expect.stringMatching(/could not load module 'fs'/),
    });
    expect((await run('import("node:child_process")')).error).toMatchObject({ code: 'script_error' });
  });
});

describe('limits', () => {
  it('stops an infinite loop at its time limit (interrupt inside)', async () => {
    const started = Date.now();
    const r = await run('let i = 0;\nwhile (true) { i++; }', { timeoutMs: 300 });
    expect(r.error).toMatchObject({ code: 'timeout', line: expect.any(Number) });
    expect(Date.now() - started).toBeLessThan(3000);
    await servesOn();
  });

  it('kills a process stuck in a native loop that ignores the interrupt, and replaces it', async () => {
    const before = sb.stats();
    const r = await run('new Array(2 ** 31).join("x").length', { timeoutMs: 200 });
    expect(r.error).toMatchObject({ code: 'timeout', message: expect.stringMatching(/killed/) });
    expect(events).toContainEqual(expect.objectContaining({ type: 'killed', reason: 'timeout' }));
    await servesOn();
    await servesOn();
    const after = sb.stats();
    expect(after.spawned).toBeGreaterThan(before.spawned);
    expect(after.killed).toBe(before.killed + 1);
  });

  it('ends a string-building memory bomb with memory_limit', async () => {
    expect((await run('let s = "a"; for (;;) s += s;')).error).toMatchObject({ code: 'memory_limit' });
    expect((await run('const big = "x".repeat(1 << 20); const a = []; for (;;) a.push(big + a.length);', { memoryLimitMb: 16 })).error).toMatchObject(
      {
        code: 'memory_limit',
      },
    );
    expect((await run('const a = []; for (;;) a.push({ n: a.length });', { memoryLimitMb: 16, timeoutMs: 10_000 })).error).toMatchObject({
      code: 'memory_limit',
    });
    await servesOn();
  });

  it('holds memory to the limit the caller asked for', async () => {
    const code = 'const b = []; for (let i = 0; i < 24; i++) b.push(new ArrayBuffer(1 << 20)); b.length';
    expect((await run(code, { memoryLimitMb: 64 })).resultJson).toBe('24');
    expect((await run(code, { memoryLimitMb: 16 })).error).toMatchObject({ code: 'memory_limit' });
  });

  it('ends deep recursion with stack_overflow, in script code and in native code', async () => {
    const r = await run('function f(n) { return f(n + 1) + 1; }\nf(0)');
    expect(r.error).toMatchObject({ code: 'stack_overflow', line: 1 });
    expect(r.error!.stack!.split('\n').length).toBeLessThanOrEqual(21);
    for (const code of [
      'let a = []; for (let i = 0; i < 1e5; i++) a = [a]; String(a).length',
      'JSON.parse("[".repeat(1e5) + "]".repeat(1e5))',
      'let o = {}; for (let i = 0; i < 1e5; i++) o = { o }; JSON.stringify(o).length',
      'eval("(".repeat(1e5) + ")".repeat(1e5))',
    ]) {
      expect((await run(code)).error).toMatchObject({ code: 'stack_overflow' });
    }
    await servesOn();
  });

  it('resolves limits: defaults, any lower value, nothing above the maximum', async () => {
    const max = { timeoutMs: 10_000, memoryLimitMb: 32, maxOutputBytes: 2048 };
    expect(resolveLimits({}, max)).toEqual({ timeoutMs: 5000, memoryLimitMb: 32, maxOutputBytes: 2048 });
    expect(resolveLimits({ timeoutMs: 10 }, max)).toMatchObject({ timeoutMs: 10 });
    expect(() => resolveLimits({ timeoutMs: 10_001 }, max)).toThrow(LimitError);
    expect(() => resolveLimits({ memoryLimitMb: 8 }, max)).toThrow(/at least 16/);
    expect(() => resolveLimits({ timeoutMs: 1.5 }, max)).toThrow(/whole number/);
    await expect(sb.run({ code: '1', timeoutMs: sb.maxLimits.timeoutMs + 1 })).rejects.toThrow(/at most 30000 ms/);
  });
});

describe('the pool', () => {
  it('runs scripts side by side, one per process, and refuses calls past its queue', async () => {
    const small = new Sandbox({ poolSize: 2, maxQueue: 1 });
    try {
      await small.start();
      while (small.stats().idle < 2) await new Promise((r) => setTimeout(r, 20));
      const slow = 'const end = Date.now() + 400; while (Date.now() < end) {} "done"';
      const started = Date.now();
      const runs = [small.run({ code: slow }), small.run({ code: slow }), small.run({ code: '"queued"' })];
      await expect(small.run({ code: '1' })).rejects.toThrow(SandboxBusyError);
      const [a, b, c] = await Promise.all(runs);
      expect([a.resultJson, b.resultJson, c.resultJson]).toEqual(['"done"', '"done"', '"queued"']);
      expect(Date.now() - started).toBeLessThan(800 + 400);
      expect(c.queuedMs).toBeGreaterThan(300);
    } finally {
      await small.close();
    }
    await expect(small.run({ code: '1' })).rejects.toThrow(SandboxClosedError);
  });

  it('serves waiting calls in turns between tenants, not in arrival order', async () => {
    const one = new Sandbox({ poolSize: 1, maxQueue: 10 });
    try {
      await one.start();
      while (one.stats().idle < 1) await new Promise((r) => setTimeout(r, 20));
      // One process: the order in which the answers come is the order in which the runs were served.
      const order: string[] = [];
      const call = (tenant: string, name: string, code = `"${name}"`) =>
        one.run({ code, tenant }).then((r) => {
          order.push(JSON.parse(r.resultJson!) as string);
        });
      const calls = [call('acct_a', 'a1', 'const end = Date.now() + 300; while (Date.now() < end) {} "a1"')];
      for (const n of ['a2', 'a3', 'a4']) calls.push(call('acct_a', n));
      calls.push(call('acct_b', 'b1'), call('acct_b', 'b2'), call('acct_c', 'c1'));
      await Promise.all(calls);
      // a1 was running; then each tenant in turn (a's turn came first, having waited longest).
      expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    } finally {
      await one.close();
    }
  });

  it("keeps a tenant to its share of the processes, so that another's call finds one free", async () => {
    const shared = new Sandbox({ poolSize: 2, maxQueue: 10, tenantShare: 1 });
    try {
      await shared.start();
      while (shared.stats().idle < 2) await new Promise((r) => setTimeout(r, 20));
      const slow = 'const end = Date.now() + 300; while (Date.now() < end) {} "a"';
      const a = [1, 2, 3].map(() => shared.run({ code: slow, tenant: 'acct_a' }));
      // One of a's runs holds a process; the other two wait although the second process is idle.
      expect(shared.stats()).toMatchObject({ busy: 1, idle: 1, queued: 2 });
      const b = shared.run({ code: '"b"', tenant: 'acct_b' });
      expect(shared.stats()).toMatchObject({ busy: 2, queued: 2 });
      expect((await b).resultJson).toBe('"b"');
      expect((await Promise.all(a)).map((r) => r.resultJson)).toEqual(['"a"', '"a"', '"a"']);
    } finally {
      await shared.close();
    }
  });

  it('kills a process that passes its resident-memory cap', async () => {
    const seen: SandboxEvent[] = [];
    // A cap tighter than twice the memory limit (idle + 28 MiB), so that the outside check can fire.
    // The script holds 40 MiB, under QuickJS's own limit of 64, and then waits: only the outside
    // check can end it early, however late its poll comes on a loaded machine (it once raced the
    // allocation to QuickJS's limit and lost).
    const tight = new Sandbox({ poolSize: 1, rssHeadroomMb: -100, onEvent: (e) => seen.push(e) });
    try {
      await tight.start();
      const r = await tight.run({
        code:
          'const b = []; for (let i = 0; i < 40; i++) b.push(new Uint8Array(1 << 20).fill(1));' +
          'const end = Date.now() + 4000; while (Date.now() < end) {} b.length',
        memoryLimitMb: 64,
        timeoutMs: 10_000,
      });
      expect(r.error).toMatchObject({ code: 'memory_limit', message: expect.stringMatching(/killed/) });
      expect(seen).toContainEqual(expect.objectContaining({ type: 'killed', reason: 'memory_limit' }));
      expect((await tight.run({ code: '"still here"' })).resultJson).toBe('"still here"');
    } finally {
      await tight.close();
    }
  });

  it('keeps a parent with nothing else to do alive until close() has seen its processes end', () => {
    // The processes do not keep the parent alive while they serve; close() must, or a script that
    // awaits it ends before it resolves (exit code 0, nothing after the await runs).
    const script = `
      const { Sandbox } = require('@svc/quickjs');
      (async () => {
        const p = new Sandbox({ poolSize: 2 });
        await p.start();
        await Promise.all([1, 2, 3, 4].map(async () => { for (let i = 0; i < 3; i++) await p.run({ code: '1 + 1' }); }));
        await p.close();
        console.log('closed');
      })();`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect([r.status, r.stdout.trim()]).toEqual([0, 'closed']);
  });

  it('an aborted run: its process is killed and replaced (a waiting one leaves the queue), the call rejects as aborted', async () => {
    const seen: SandboxEvent[] = [];
    const one = new Sandbox({ poolSize: 1, maxQueue: 4, maxLimits: { timeoutMs: 60_000 }, onEvent: (e) => seen.push(e) });
    try {
      await one.start();
      while (one.stats().idle < 1) await new Promise((r) => setTimeout(r, 20));
      const [pid] = one.stats().pids;
      const running = new AbortController();
      const waiting = new AbortController();
      const forever = 'const end = Date.now() + 60000; while (Date.now() < end) {} "finished"';
      const a = one.run({ code: forever, timeoutMs: 60_000, signal: running.signal });
      const b = one.run({ code: '"never"', signal: waiting.signal });
      expect(one.stats()).toMatchObject({ busy: 1, queued: 1 });
      waiting.abort();
      await expect(b).rejects.toThrow(SandboxAbortedError);
      expect(one.stats()).toMatchObject({ busy: 1, queued: 0 });
      running.abort();
      await expect(a).rejects.toThrow(SandboxAbortedError);
      expect(fs.existsSync(`/proc/${pid}`) && !/State:\s+Z/.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))).toBe(false);
      expect(one.stats()).toMatchObject({ aborted: 2, killed: 0, crashed: 0 });
      expect(seen).toEqual([]); // an abort is neither a limit's kill nor a crash
      expect((await one.run({ code: '"next"' })).resultJson).toBe('"next"');
      expect(one.stats().pids).not.toContain(pid);
      await expect(one.run({ code: '1', signal: running.signal })).rejects.toThrow(SandboxAbortedError);
    } finally {
      await one.close();
    }
  });

  it('leaves no process behind when closed', async () => {
    const p = new Sandbox({ poolSize: 2 });
    await p.start();
    const pids = p.stats().pids.filter((x): x is number => x !== undefined);
    await p.close();
    for (const pid of pids) expect(fs.existsSync(`/proc/${pid}`) && !/State:\s+Z/.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))).toBe(false);
  });
});

describe('CPU priority', () => {
  // A run's CPU yields to the service's own thread (SVC_HEAVY_WORK_NICE, docs/reliability.md): its
  // processes run nicer than the service.
  it('runs its processes at the nice value it was given, above the service’s own', async () => {
    if (process.platform !== 'linux') return;
    const { getPriority } = await import('node:os');
    const nicer = new Sandbox({ poolSize: 1, nice: 7 });
    await nicer.start();
    try {
      expect((await nicer.run({ code: '1' })).resultJson).toBe('1');
      const pids = nicer.stats().pids.filter((p): p is number => p !== undefined);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) expect(getPriority(pid)).toBe(Math.max(7, getPriority(process.pid)));
      for (const pid of sb.stats().pids.filter((p): p is number => p !== undefined))
        expect(getPriority(pid)).toBe(Math.max(10, getPriority(process.pid)));
    } finally {
      await nicer.close();
    }
  });
});
