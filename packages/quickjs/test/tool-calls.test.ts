import { Sandbox } from '@svc/quickjs';

// Code mode in the sandbox (docs/run-code.md, "Calling tools"): a script's svc.call goes out of the
// child to the pool's caller and its answer settles the script's promise; the bounds on how many
// calls a run makes and how many are in flight; a run's end giving up the calls still in flight.

let sb: Sandbox;

beforeAll(async () => {
  sb = new Sandbox({ poolSize: 1 });
  await sb.start();
});
afterAll(() => sb.close());

interface Seen {
  calls: Array<{ name: string; args: unknown }>;
  maxInFlight: number;
  aborted: number;
}

/** Tools that echo their arguments (`fail` answers a tool error, `never` never answers). */
function echoTools(seen: Seen, bounds: { maxCalls?: number; maxConcurrent?: number } = {}) {
  let inFlight = 0;
  return {
    names: ['echo', 'fail', 'never'],
    maxCalls: bounds.maxCalls ?? 50,
    maxConcurrent: bounds.maxConcurrent ?? 4,
    async call(name: string, argsJson: string, signal: AbortSignal) {
      const args = JSON.parse(argsJson) as Record<string, unknown>;
      seen.calls.push({ name, args });
      inFlight++;
      seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
      signal.addEventListener('abort', () => seen.aborted++);
      try {
        if (name === 'never') return await new Promise<never>(() => {});
        await new Promise((r) => setTimeout(r, 5));
        if (name === 'fail')
          return { json: JSON.stringify({ error: { code: 'not_found', message: 'No such thing.', requestId: 'req_1' } }), isError: true };
        return { json: JSON.stringify({ echoed: args }), isError: false };
      } finally {
        inFlight--;
      }
    },
  };
}

const fresh = (): Seen => ({ calls: [], maxInFlight: 0, aborted: 0 });

it('a script awaits tool calls: svc.call and the typed helpers, results as objects', async () => {
  const seen = fresh();
  const r = await sb.run({
    code: `const a = await svc.call('echo', { n: 1 });
const b = await svc.tools.echo({ n: 2 });
const all = await Promise.all([3, 4, 5, 6, 7, 8, 9, 10].map((n) => svc.tools.echo({ n })));
return [a.echoed.n, b.echoed.n, ...all.map((x) => x.echoed.n)];`,
    tools: echoTools(seen),
  });
  expect(r.error).toBeUndefined();
  expect(JSON.parse(r.resultJson!)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(r.toolCalls).toBe(10);
  expect(seen.calls).toHaveLength(10);
  expect(seen.maxInFlight).toBeLessThanOrEqual(4);
});

it('a tool error rejects with a ToolError carrying the code', async () => {
  const r = await sb.run({
    code: `try { await svc.tools.fail({}); return 'no'; } catch (e) { return [e.name, e.code, e.message, e.requestId, e instanceof Error]; }`,
    tools: echoTools(fresh()),
  });
  expect(JSON.parse(r.resultJson!)).toEqual(['ToolError', 'not_found', 'No such thing.', 'req_1', true]);
  const bad = await sb.run({ code: `try { await svc.call('echo', [1]); } catch (e) { return e.name; }`, tools: echoTools(fresh()) });
  expect(JSON.parse(bad.resultJson!)).toBe('TypeError');
});

it('a run makes at most maxCalls calls; past it tool_call_limit, which the script may catch', async () => {
  const seen = fresh();
  const r = await sb.run({
    code: `const out = [];
for (let i = 0; i < 5; i++) { try { await svc.tools.echo({ i }); out.push('ok'); } catch (e) { out.push(e.code); } }
return out;`,
    tools: echoTools(seen, { maxCalls: 3 }),
  });
  expect(JSON.parse(r.resultJson!)).toEqual(['ok', 'ok', 'ok', 'tool_call_limit', 'tool_call_limit']);
  expect(seen.calls).toHaveLength(3);
  expect(r.toolCalls).toBe(3);
});

it('calls past maxConcurrent wait inside the sandbox: a fan-out of 20 has at most 2 in flight', async () => {
  const seen = fresh();
  const r = await sb.run({
    code: `const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => svc.tools.echo({ i }))); return rs.length;`,
    tools: echoTools(seen, { maxConcurrent: 2 }),
  });
  expect(JSON.parse(r.resultJson!)).toBe(20);
  expect(seen.maxInFlight).toBe(2);
});

it('the run’s time limit holds while it waits for a call, and the call is given up', async () => {
  const seen = fresh();
  const started = Date.now();
  const r = await sb.run({ code: `await svc.tools.never({}); return 1;`, timeoutMs: 300, tools: echoTools(seen) });
  expect(r.error?.code).toBe('timeout');
  expect(Date.now() - started).toBeLessThan(5000);
  expect(seen.aborted).toBe(1);
});

it('a call the script did not wait for is given up when the run ends', async () => {
  const seen = fresh();
  const r = await sb.run({ code: `svc.tools.never({}); return 'done';`, tools: echoTools(seen) });
  expect(JSON.parse(r.resultJson!)).toBe('done');
  expect(r.toolCalls).toBe(1);
  await new Promise((res) => setTimeout(res, 50));
  expect(seen.aborted).toBe(1);
});

it('a run without tools has no svc, and svc cannot be replaced', async () => {
  const r = await sb.run({ code: 'typeof svc' });
  expect(JSON.parse(r.resultJson!)).toBe('undefined');
  expect(r.toolCalls).toBeUndefined();
  const frozen = await sb.run({
    code: `'use strict'; try { svc.call = null; return 'changed'; } catch (e) { return e.name; }`,
    tools: echoTools(fresh()),
  });
  expect(JSON.parse(frozen.resultJson!)).toBe('TypeError');
});
