import { randomUUID } from 'node:crypto';
import http from 'node:http';

import { SERVICE_NAMES } from '@svc/kit';

import { freePort, spawnSvc, waitFor } from '../support/process';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

// A rolling restart of the gateway under load, with processes: two gateway replicas
// (SVC_SERVICE=gateway) in front of the services (this process's stack, on loopback TCP), a steady
// keep-alive load spread over both by a client that follows the contract's retry rule
// (docs/reliability.md, "Stopping and restarting"), and SIGTERM to one of them mid-load.

let t: TestStack;
const children: Array<ReturnType<typeof spawnSvc>> = [];
beforeAll(async () => {
  t = await startTestStack({ GRPC_HOST: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await t?.stop();
});

/** A gateway process in front of the test stack's services (its secret, backends and namespace). */
async function startGateway(): Promise<{ child: ReturnType<typeof spawnSvc>; port: number }> {
  const port = await freePort();
  const addresses = Object.fromEntries(SERVICE_NAMES.map((n) => [`SVC_${n.toUpperCase()}_ADDR`, t.stack.registry.address(n)!]));
  const pass = ['SVC_INTERNAL_SECRET', 'SVC_NAMESPACE', 'REDIS_URL', 'NATS_URL', 'SVC_SHUTDOWN_GRACE_MS'];
  const child = spawnSvc({
    ...Object.fromEntries(pass.filter((k) => t.env[k]).map((k) => [k, t.env[k]!])),
    ...addresses,
    SVC_SERVICE: 'gateway',
    HOST: '127.0.0.1',
    PORT: String(port),
    SVC_SHUTDOWN_GRACE_MS: '8000',
    LOG_LEVEL: 'info',
  });
  children.push(child);
  await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/health`)).ok ? true : undefined), 60_000, 'gateway').catch((err) => {
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  });
  return { child, port };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One request on a keep-alive agent; rejects when no answer came (refused, reset, closed). */
function send(agent: http.Agent, port: number, method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const json = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          authorization: `Bearer ${t.bootstrapKey}`,
          ...(json ? { 'content-type': 'application/json' } : {}),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(json);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGTERM to one of two gateways under keep-alive load: no failed request, in-flight answered with Connection: close, no write lost', async () => {
  const [g1, g2] = [await startGateway(), await startGateway()];
  const replicas = [g1, g2].map((g) => ({ ...g, agent: new http.Agent({ keepAlive: true, maxSockets: 4 }), stopping: false }));
  // Answers g1 gave to requests sent after it logged `shutting down` (its drain had begun).
  const afterSigterm: Answer[] = [];
  let retried = 0;
  let next = 0;

  /**
   * The contract's retry rule: a GET, or a POST with its Idempotency-Key, whose connection gave no
   * answer is sent again (on the next replica, as a Service would); so is a 503 with Retry-After
   * and a 409 `idempotency_key_in_use`, after the wait it asks for. Anything else is the answer.
   */
  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const key = method === 'POST' ? randomUUID() : undefined;
    for (let attempt = 1; ; attempt++) {
      const r = replicas[next++ % replicas.length]!;
      const draining = r.stopping;
      try {
        const a = await send(r.agent, r.port, method, path, body, key);
        if (draining) afterSigterm.push(a);
        const again = (a.status === 503 && a.headers['retry-after']) || (a.status === 409 && a.body?.error?.code === 'idempotency_key_in_use');
        if (!again || attempt >= 30) return a;
        retried++;
        await sleep(Math.min(1000, Number(a.headers['retry-after'] ?? 1) * 1000));
      } catch (err) {
        if (attempt >= 30) throw err;
        retried++;
        await sleep(20);
      }
    }
  }

  // A steady mix of reads and acknowledged writes from four clients.
  const answers: Answer[] = [];
  const written: string[] = [];
  let loading = true;
  const loops = Array.from({ length: 4 }, async (_, i) => {
    for (let n = 0; loading; n++) {
      const a = n % 2 ? await call('GET', '/v1/me') : await call('POST', '/v1/profiles', { name: `drain ${i}.${n}` });
      answers.push(a);
      if (a.status === 201) written.push(a.body.id);
    }
  });
  await until(async () => (answers.length >= 40 ? true : undefined), 60_000, { what: 'load under way' });

  // Requests in flight on g1 when SIGTERM comes (a code run that takes a while), sent to g1 alone.
  // Their connections are opened first; an answer g1 gives on another one after they were sent
  // means it has read them (one event loop), so that they are in flight, not idle, at SIGTERM.
  const slowAgent = new http.Agent({ keepAlive: true });
  await Promise.all([1, 2].map(() => send(slowAgent, g1.port, 'GET', '/health')));
  const slow = [1, 2].map(() =>
    send(slowAgent, g1.port, 'POST', '/v1/code/run', { code: 'const t = Date.now(); while (Date.now() - t < 1500) {} 1' }, randomUUID()),
  );
  await sleep(100);
  await send(new http.Agent(), g1.port, 'GET', '/health');
  g1.child.kill('SIGTERM');
  await waitFor(async () => (g1.child.output().includes('shutting down') ? true : undefined), 10_000, 'g1 stopping');
  replicas[0]!.stopping = true;
  const exit = await new Promise<number | null>((resolve) =>
    g1.child.exitCode !== null ? resolve(g1.child.exitCode) : g1.child.once('exit', (code) => resolve(code)),
  );
  const atExit = answers.length;
  await until(async () => (answers.length >= atExit + 20 ? true : undefined), 60_000, { what: 'load after the restart' });
  loading = false;
  await Promise.all(loops);

  expect(exit).toBe(0);
  // Answered, and told to close the connection: the client's next request goes elsewhere.
  for (const a of await Promise.all(slow)) {
    expect(a.status).toBe(200);
    expect(a.headers.connection).toBe('close');
  }
  for (const a of afterSigterm) expect(a.headers.connection).toBe('close');
  expect(answers.filter((a) => a.status >= 300).map((a) => [a.status, a.body])).toEqual([]);
  // Every acknowledged write is there, read through the other replica.
  expect(written.length).toBeGreaterThan(10);
  for (const id of written) expect((await send(replicas[1]!.agent, g2.port, 'GET', `/v1/profiles/${id}`)).status).toBe(200);
  for (const agent of [slowAgent, ...replicas.map((r) => r.agent)]) agent.destroy();
  process.stdout.write(`drain: ${answers.length} requests, ${retried} retried, ${afterSigterm.length} answered by the stopping gateway\n`);
}, 120_000);

/** A live event stream read as text: `done` settles when it ends by itself (true) or breaks (false). */
function openStream(port: number, path: string, lastEventId?: string) {
  let text = '';
  let res!: http.IncomingMessage;
  const done = new Promise<boolean>((resolve) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port,
        path,
        headers: { authorization: `Bearer ${t.bootstrapKey}`, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      },
      (r) => {
        res = r;
        r.setEncoding('utf8');
        r.on('data', (d) => (text += d));
        r.on('end', () => resolve(true));
        r.on('error', () => resolve(false));
        r.on('aborted', () => resolve(false));
      },
    );
    req.on('error', () => resolve(false));
  });
  const ids = () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  return { done, text: () => text, ids, close: () => res?.destroy() };
}

test('SIGTERM ends a gateway’s live event streams at once, with a retry and no error; the client resumes on the other replica with nothing lost', async () => {
  const [g1, g2] = [await startGateway(), await startGateway()];
  const agent = (await t.ok('POST', '/agents', t.bootstrapKey, { name: 'drain stream agent' })).body as { id: string };
  const thread = (await t.ok('POST', '/threads', t.bootstrapKey, { agentId: agent.id })).body as { id: string };
  const path = `/v1/threads/${thread.id}/events`;
  const stream = openStream(g1.port, path);
  await t.ok('POST', `/threads/${thread.id}/inject`, t.bootstrapKey, { content: 'before the restart' });
  await until(async () => (stream.ids().length >= 1 ? true : undefined), 30_000, { what: 'events on the first stream' });

  const exited = new Promise<void>((resolve) => g1.child.once('exit', () => resolve()));
  g1.child.kill('SIGTERM');
  // Ended by the gateway, not cut when its grace ran out: a retry field, no error event.
  expect(await stream.done).toBe(true);
  expect(stream.text()).toMatch(/^retry: \d+$/m);
  expect(stream.text()).not.toContain('event: error');
  await exited;

  // The client resumes on the other replica after its last event: the rest arrive, none twice.
  const last = Math.max(...stream.ids());
  await t.ok('POST', `/threads/${thread.id}/inject`, t.bootstrapKey, { content: 'after the restart' });
  const resumed = openStream(g2.port, path, String(last));
  const all = (await t.ok('GET', `/threads/${thread.id}/events?limit=200`, t.bootstrapKey)).body.events as Array<{ seq: number }>;
  const want = all.map((e) => e.seq).filter((s) => s > last);
  await until(async () => (want.every((s) => resumed.ids().includes(s)) ? true : undefined), 30_000, { what: 'the resumed stream' });
  resumed.close();
  expect(want.length).toBeGreaterThan(0);
  expect(resumed.ids().slice(0, want.length)).toEqual(want);
  expect(new Set([...stream.ids(), ...resumed.ids()]).size).toBe(stream.ids().length + resumed.ids().length);
}, 120_000);
