import { Sandbox } from '@svc/quickjs';

// Attempts to reach outside the interpreter: host objects, the parent's objects, Node's globals,
// another run's state. Each must find only the sandbox's own world.

let sb: Sandbox;

beforeAll(async () => {
  // One process: successive runs share it, so leaks between runs would show.
  sb = new Sandbox({ poolSize: 1 });
  await sb.start();
});
afterAll(() => sb.close());

async function value(code: string): Promise<unknown> {
  const r = await sb.run({ code, timeoutMs: 2000 });
  if (r.error) throw new Error(`${code}: ${JSON.stringify(r.error)}`);
  return JSON.parse(r.resultJson!);
}

const HOST_NAMES = [
  'require',
  'process',
  'module',
  'exports',
  'global',
  'Buffer',
  '__dirname',
  '__filename',
  'setTimeout',
  'setInterval',
  'setImmediate',
  'queueMicrotask',
  'fetch',
  'XMLHttpRequest',
  'WebSocket',
  'WebAssembly',
  'Deno',
  'Bun',
  'std',
  'os',
  'print',
  'scriptArgs',
  'importScripts',
  'postMessage',
  'sink',
];

describe('escape attempts', () => {
  it('finds none of the host names, by any route to the global object', async () => {
    for (const route of ['globalThis', 'this', 'constructor.constructor("return this")()', 'Function("return this")()', '(0, eval)("this")']) {
      const seen = await value(`const g = ${route}; ${JSON.stringify(HOST_NAMES)}.filter((n) => typeof g[n] !== 'undefined')`);
      expect({ route, seen }).toEqual({ route, seen: [] });
    }
    expect(await value(`${JSON.stringify(HOST_NAMES)}.filter((n) => { try { eval(n); return true; } catch { return false; } })`)).toEqual([]);
  });

  it('sees only the language built-ins and console on the global object', async () => {
    const names = (await value('Object.getOwnPropertyNames(globalThis)')) as string[];
    const allowed = new Set(
      'Object Function Array Number parseFloat parseInt Infinity NaN undefined Boolean String Symbol Date Promise RegExp Error AggregateError EvalError RangeError ReferenceError SyntaxError TypeError URIError InternalError globalThis JSON Math Intl ArrayBuffer SharedArrayBuffer Uint8Array Int8Array Uint16Array Int16Array Uint32Array Int32Array Float16Array Float32Array Float64Array Uint8ClampedArray BigUint64Array BigInt64Array DataView Map BigInt Set WeakMap WeakSet WeakRef FinalizationRegistry Proxy Reflect decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape eval isFinite isNaN Iterator console'.split(
        ' ',
      ),
    );
    expect(names.filter((n) => !allowed.has(n))).toEqual([]);
  });

  it('gets the sandbox global, not the host, from constructor chains', async () => {
    expect(await value('constructor.constructor("return this")() === globalThis')).toBe(true);
    expect(await value('console.log.constructor("return typeof process")()')).toBe('undefined');
    expect(await value('[].map.constructor("return this")() === globalThis')).toBe(true);
    expect(await value('(async () => {}).constructor("return typeof require")()')).toBe('undefined');
    expect(await value('Object.getPrototypeOf(function* () {}).constructor("yield typeof process")().next().value')).toBe('undefined');
    expect(await value('Reflect.getPrototypeOf(console.log) === Function.prototype')).toBe(true);
  });

  it('keeps the console to sandbox functions: no host function behind it', async () => {
    expect(await value('Object.getOwnPropertyNames(console)')).toEqual(['log', 'info', 'warn', 'error', 'debug']);
    expect(await value('(function f() { return f.caller; })()')).toBeNull();
    expect(
      await value('let c = null; try { console.log({ get x() { c = arguments.callee.caller; return 1; } }); } catch (e) { c = String(e); } typeof c'),
    ).toMatch(/object|string/);
  });

  it('runs eval and Function inside the sandbox only', async () => {
    expect(await value('eval("1 + 1") + Function("a", "return a * 2")(2)')).toBe(6);
    expect(await value('eval("typeof process") + new Function("return typeof require")()')).toBe('undefinedundefined');
  });

  it('shows no host paths in stack traces', async () => {
    const stack = (await value('try { null.x } catch (e) { e.stack }')) as string;
    expect(stack).toContain('script.js');
    expect(stack).not.toMatch(/node_modules|\/dist\/|node:/);
    const r = await sb.run({ code: 'function f() { return f() } f()' });
    expect(r.error!.stack).not.toMatch(/node_modules|\/dist\/|node:/);
  });

  it('leaves nothing of one run to the next: globals, prototypes, built-ins', async () => {
    await value(
      'globalThis.leak = "secret"; Object.prototype.polluted = 1; Array.prototype.push = null; JSON.stringify = () => "hijacked"; console.log = null; 1',
    );
    expect(await value('[typeof leak, typeof ({}).polluted, typeof [].push, JSON.stringify([1]), typeof console.log]')).toEqual([
      'undefined',
      'undefined',
      'function',
      '[1]',
      'function',
    ]);
  });

  it('keeps answering right when the script tampers with what the host uses', async () => {
    const r = await sb.run({
      code: 'JSON.stringify = () => { throw new Error("no") }; Object.prototype.toString = null; Array.prototype.join = null; console.log({ a: [1] }); ({ ok: true })',
    });
    expect(r.error).toBeUndefined();
    expect(r.logs).toEqual([{ level: 'log', message: '{ a: [1] }' }]);
    expect(JSON.parse(r.resultJson!)).toEqual({ ok: true });
  });

  it('survives hostile results: throwing proxies, getters that loop, toJSON that loops', async () => {
    const proxy = await sb.run({ code: 'new Proxy({}, { ownKeys() { throw new Error("trap") }, get() { throw new Error("trap") } })' });
    expect(proxy.error).toMatchObject({ code: 'result_not_serializable' });
    const loop = await sb.run({ code: '({ toJSON() { for (;;) {} } })', timeoutMs: 300 });
    expect(loop.error).toMatchObject({ code: 'timeout' });
    const thrownGetter = await sb.run({ code: 'throw { get message() { for (;;) {} } }', timeoutMs: 300 });
    expect(thrownGetter.error?.code).toMatch(/script_error|timeout/);
    expect(await value('"after"')).toBe('after');
  });

  it('cannot block the process on shared memory', async () => {
    const r = await sb.run({
      code: 'typeof Atomics === "undefined" ? "no Atomics" : Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1e9)',
      timeoutMs: 300,
    });
    expect(r.resultJson ?? r.error?.code).toMatch(/no Atomics|timeout|script_error/);
    expect(await value('1')).toBe(1);
  });
});
