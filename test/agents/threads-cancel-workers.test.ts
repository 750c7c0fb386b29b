import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

import { createDatabase, randomName, REAL, tempDir } from '../support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';
import { alive, busy, sandboxChildren } from '../support/sandbox-procs';

// A cancel crosses processes (docs/threads.md, "Aborting a tool"): a run works on process A (its
// tool a 60 s script in A's sandbox); the cancel goes through process B's gateway and agents
// service, over NATS to A's runtime, which aborts the call: A's sandbox process is killed and the
// run ends cancelled long before the script would have. Two processes share one PostgreSQL and one
// NATS namespace: real backends only (CI sets DATABASE_URL and NATS_URL).
const maybe = REAL.pg && REAL.nats ? describe : describe.skip;

maybe('a cancel through another process stops a running tool', () => {
  let db: { url: string; drop(): Promise<void> };
  const bootstrap = `svc_${randomBytes(32).toString('hex')}`;
  const namespace = randomName('t');
  const dirs: string[] = [];
  const children: Array<ReturnType<typeof spawnSvc>> = [];

  async function start(): Promise<{ port: number; child: ReturnType<typeof spawnSvc> }> {
    const port = await freePort();
    const dir = tempDir('svc-cancel-');
    dirs.push(dir);
    const child = spawnSvc({
      SVC_SERVICE: 'all',
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_NAMESPACE: namespace,
      SVC_BOOTSTRAP_KEY: bootstrap,
      DATABASE_URL: db.url,
      NATS_URL: REAL.nats!,
      SVC_MCP_RUN_CODE_POOL_SIZE: '1',
      SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: '60000',
      SVC_TRADING_ALPACA_URL: 'off',
    });
    children.push(child);
    await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/ready`)).ok ? true : undefined), 60_000, 'the stack').catch((err) => {
      throw new Error(`${(err as Error).message}\n${child.output()}`);
    });
    return { port, child };
  }

  beforeAll(async () => {
    db = await createDatabase(REAL.pg!);
  });
  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGTERM');
        await exitCode(c);
      }
    }
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await db?.drop();
  });

  test('the run on A ends cancelled, its script’s process killed, after a cancel sent to B', async () => {
    const a = await start();
    const call = async (port: number, method: string, path: string, key: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await res.json()) as any;
      if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const key = (await call(a.port, 'POST', '/accounts', bootstrap, { kind: 'user', name: 'Ada' })).key as string;
    const agent = await call(a.port, 'POST', '/agents', key, { name: 'worker' });
    const [pid] = await waitFor(async () => (sandboxChildren(a.child.pid).length ? sandboxChildren(a.child.pid) : undefined), 30_000, 'A’s sandbox');
    const slow = '/tool run_code {"code":"const end = Date.now() + 60000; while (Date.now() < end) {} 1","timeoutMs":60000}';
    const thread = await call(a.port, 'POST', '/threads', key, { agentId: agent.id, message: slow });
    const events = async (port: number) => (await call(port, 'GET', `/threads/${thread.id}/events?limit=200`, key)).events as any[];
    await waitFor(async () => ((await events(a.port)).some((e) => e.type === 'tool.called') ? true : undefined), 30_000, 'the tool call');
    await busy(pid!);

    // B starts once the run is A's; the cancel goes to B.
    const b = await start();
    const cancelled = await call(b.port, 'POST', `/threads/${thread.id}/cancel`, key);
    expect(cancelled).toEqual({ runId: thread.runId, status: 'cancelling' });
    const all = await waitFor(
      async () => {
        const evs = await events(b.port);
        return evs.some((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type)) ? evs : undefined;
      },
      30_000,
      'the run to end',
    );
    await waitFor(async () => (!alive(pid!) ? true : undefined), 10_000, 'A’s sandbox process to be gone');
    expect(all[all.length - 1].type).toBe('run.cancelled');
    expect(all.find((e) => e.type === 'run.started').data.worker).toContain(`:${a.child.pid}:`);
    const results = all.filter((e) => e.type === 'tool.result');
    expect(results).toHaveLength(1);
    expect(results[0].data).toMatchObject({ name: 'run_code', aborted: true, abortedBy: 'cancel', result: { error: { code: 'tool_aborted' } } });
    // Long before the script would have ended.
    const called = all.find((e) => e.type === 'tool.called');
    expect(Date.parse(all[all.length - 1].createdAt) - Date.parse(called.createdAt)).toBeLessThan(60_000);
    expect((await call(b.port, 'GET', `/threads/${thread.id}`, key)).status).toBe('idle');
  }, 150_000);
});
