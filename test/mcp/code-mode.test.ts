import { legacyClient, type McpTestClient, modernClient, outcome } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Code mode from outside (docs/run-code.md, "Calling tools"): a run_code script calls the
 * platform's tools as its caller, through POST /code/run and through /mcp with both clients. One
 * run does the work of ten tool calls; a script reaches nothing its caller cannot (another
 * account's file answers as a direct call does; an agent's tool list binds its scripts); the
 * bounds on calls per run, the rate limit, and no script started from a script.
 */

let t: TestStack;
let person: string;
let other: string;
let limited: string;
beforeAll(async () => {
  t = await startTestStack({
    SVC_MCP_CODE_MODE_MAX_TOOL_CALLS: '30',
    // A small write bucket per key: the `limited` account's script runs into it (the others stay well under).
    SVC_RATE_LIMITS: 'write=40/600',
  });
  const account = async (name: string) => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key as string;
  person = await account('Coder');
  other = await account('Other');
  limited = await account('Limited');
}, 60_000);
afterAll(() => t?.stop());

/** A run's time on a loaded machine: a script of tens of writes takes seconds there (the operator's maximum is 30 s). */
const SLOW = 25_000;

const run = (body: Record<string, unknown>, key = person) => t.ok('POST', '/code/run', key, body).then((r) => r.body);

/** Ten tool calls in one script: nine file writes in parallel and a listing of them. */
const TEN_CALLS = (prefix: string) => `
const written = await Promise.all(Array.from({ length: 9 }, (_, i) =>
  svc.tools.write_drive_file({ name: '${prefix}-' + i + '.txt', content: 'file ' + i })));
const listed = await svc.call('list_drive', { limit: 200 });
return { written: written.map((f) => f.name).sort(), listed: listed.items.filter((f) => f.name.startsWith('${prefix}-')).length };`;

describe('one run_code call does the work of ten tool calls', () => {
  const expectTen = async (r: Record<string, any>, prefix: string) => {
    expect(r.error).toBeNull();
    expect(r.toolCalls).toBe(10);
    expect(r.result).toEqual({ written: Array.from({ length: 9 }, (_, i) => `${prefix}-${i}.txt`), listed: 9 });
    const names = (await t.ok('GET', '/drive?limit=200', person)).body.items.map((i: { name: string }) => i.name);
    for (let i = 0; i < 9; i++) expect(names).toContain(`${prefix}-${i}.txt`);
  };

  test('through POST /code/run', async () => {
    await expectTen(await run({ code: TEN_CALLS('api'), timeoutMs: SLOW }), 'api');
  });

  test.each([
    ['2025-11-25 (v1 SDK)', legacyClient, 'v1'],
    ['2026-07-28 (v2 SDK)', modernClient, 'v2'],
  ] as const)('through /mcp, a %s client', async (_era, connect, prefix) => {
    const c: McpTestClient = await connect(t.url, person);
    try {
      const r = outcome(await c.callTool({ name: 'run_code', arguments: { code: TEN_CALLS(prefix), timeoutMs: SLOW } }));
      expect(r.isError).toBe(false);
      await expectTen(r.body, prefix);
    } finally {
      await c.close();
    }
  });
});

describe('a script reaches nothing its caller cannot', () => {
  test('another account’s file: the same error as the direct call', async () => {
    const theirs = (await run({ code: `return await svc.tools.write_drive_file({ name: 'secret.txt', content: 'not yours' })` }, other)).result;
    expect(theirs.id).toMatch(/^file_/);
    const c = await legacyClient(t.url, person);
    try {
      const direct = outcome(await c.callTool({ name: 'read_drive_file', arguments: { id: theirs.id } }));
      expect(direct.isError).toBe(true);
      const code = `try { await svc.tools.read_drive_file({ id: ${JSON.stringify(theirs.id)} }); return 'read'; } catch (e) { return { name: e.name, code: e.code, message: e.message }; }`;
      const viaMcp = outcome(await c.callTool({ name: 'run_code', arguments: { code } }));
      const viaApi = await run({ code });
      for (const r of [viaMcp.body.result, viaApi.result]) {
        expect(r).toEqual({ name: 'ToolError', code: direct.body.error.code, message: direct.body.error.message });
      }
      expect(direct.body.error.code).toBe('item_not_found');
    } finally {
      await c.close();
    }
  });

  test('an agent’s key limited by its tool list cannot call other tools from a script, on /mcp or the API', async () => {
    const agent = (await t.ok('POST', '/agents', person, { name: 'scripted', tools: ['run_code', 'whoami'] })).body;
    const key = (await t.ok('POST', `/agents/${agent.id}/keys`, person, { name: 'mcp' })).body.key;
    const code = `const me = await svc.tools.whoami({});
const tried = [];
for (const name of ['list_drive', 'write_drive_file', 'call_tool']) {
  try { await svc.call(name, name === 'call_tool' ? { name: 'list_drive', arguments: {} } : { name: 'x.txt', content: 'x' }); tried.push('called'); }
  catch (e) { tried.push(e.code); }
}
return { kind: me.kind, helpers: Object.keys(svc.tools).sort(), tried };`;
    const expected = { kind: 'agent', helpers: ['search_tools', 'whoami'], tried: ['tool_not_allowed', 'tool_not_allowed', 'tool_not_allowed'] };
    const c = await modernClient(t.url, key);
    try {
      const r = outcome(await c.callTool({ name: 'run_code', arguments: { code } }));
      expect(r.body.result).toEqual(expected);
    } finally {
      await c.close();
    }
    expect((await run({ code }, key)).result).toEqual(expected);
    const names = (await t.ok('GET', '/drive?limit=200', person)).body.items.map((i: { name: string }) => i.name);
    expect(names).not.toContain('x.txt');
  });

  test('a script does not start another script', async () => {
    const r = await run({ code: `try { await svc.call('run_code', { code: '1' }); return 'ran'; } catch (e) { return e.code; }` });
    expect(r.result).toBe('tool_not_allowed');
  });
});

describe('bounds', () => {
  test('a run makes at most maxToolCalls calls (the caller’s, within the operator’s); past it tool_call_limit', async () => {
    const code = (n: number) =>
      `let ok = 0, refused = 0; for (let i = 0; i < ${n}; i++) { try { await svc.tools.whoami({}); ok++; } catch (e) { if (e.code === 'tool_call_limit') refused++; } } return [ok, refused];`;
    const asked = await run({ code: code(8), maxToolCalls: 5 });
    expect([asked.result, asked.toolCalls]).toEqual([[5, 3], 5]);
    // The operator's maximum (SVC_MCP_CODE_MODE_MAX_TOOL_CALLS=30) holds whatever the caller asks.
    const capped = await run({ code: code(40) });
    expect([capped.result, capped.toolCalls]).toEqual([[30, 10], 30]);
    expect((await t.call('POST', '/code/run', { key: person, body: { code: '1', maxToolCalls: 100_000 } })).status).toBe(400);
  });

  test('each call takes a rate-limit token of its class, as the direct call would: past the bucket, rate_limited', async () => {
    const r = await run(
      {
        code: `const codes = await Promise.all(Array.from({ length: 30 }, (_, i) =>
  svc.tools.write_drive_file({ name: 'w' + i + '.txt', content: 'x' }).then(() => 'ok', (e) => e.code)));
return codes;`,
        timeoutMs: SLOW,
      },
      limited,
    );
    expect(r.error).toBeNull();
    const codes: string[] = r.result;
    expect(codes).toHaveLength(30);
    expect(codes.filter((c) => c !== 'ok' && c !== 'rate_limited')).toEqual([]);
    // A bucket of 40 writes per key: a second run of 30 more empties it.
    const again = await run(
      {
        code: `return await Promise.all(Array.from({ length: 30 }, (_, i) => svc.tools.write_drive_file({ name: 'v' + i + '.txt', content: 'x' }).then(() => 'ok', (e) => e.code)));`,
        timeoutMs: SLOW,
      },
      limited,
    );
    const all: string[] = [...codes, ...again.result];
    expect(all.filter((c) => c === 'rate_limited').length).toBeGreaterThanOrEqual(15);
    // What was refused was not written.
    const written = (await t.ok('GET', '/drive?limit=200', limited)).body.items.length;
    expect(written).toBe(all.filter((c) => c === 'ok').length);
  });

  test('the run’s time limit holds over a script that keeps calling tools: timeout', async () => {
    const r = await run({ code: `for (;;) { try { await svc.tools.whoami({}); } catch { /* past the call limit */ } }`, timeoutMs: 1000 });
    expect(r.error).toMatchObject({ code: 'timeout' });
    expect(r.toolCalls).toBeGreaterThan(0);
    expect(r.toolCalls).toBeLessThanOrEqual(100);
  });

  // A known QuickJS fault, left open (docs/run-code.md, "Calling tools"): this loop with an unused
  // catch binding fails inside the interpreter (a shape reference count assertion, or memory out of
  // bounds) before its first call. It stays contained: the run ends as sandbox_error, nothing was
  // called, and the next script runs.
  test('a script that trips the interpreter’s known fault ends as sandbox_error, and the sandbox goes on', async () => {
    const r = await run({ code: `for (;;) { try { await svc.tools.whoami({}); } catch (e) {} }`, timeoutMs: 1000 });
    expect(['timeout', 'sandbox_error']).toContain(r.error?.code);
    const next = await run({ code: '6 * 7' });
    expect(next.result).toBe(42);
  });
});
