import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/** Threads and runs (docs/threads.md): the development model answering, calling real tools, events, isolation. */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SVC_SSE_MAX_STREAMS_PER_KEY: '3' });
});
afterAll(() => t?.stop());

let n = 0;
const ok: TestStack['ok'] = (...args) => t.ok(...args);
async function person() {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
async function agentOf(key: string, body: Record<string, unknown> = {}) {
  return (await ok('POST', '/agents', key, { name: `agent ${++n}`, ...body })).body as { id: string };
}
type Ev = { seq: number; type: string; data: any; producer: any; usage: any; runId: string | null };
async function events(key: string, threadId: string, after = 0): Promise<Ev[]> {
  const out: Ev[] = [];
  for (let a = after; ;) {
    const res = await ok('GET', `/threads/${threadId}/events?after=${a}&limit=200`, key);
    out.push(...res.body.events);
    if (res.body.nextAfter === null) return out;
    a = res.body.nextAfter;
  }
}
const settled = (key: string, id: string, runs = 1) =>
  until(async () => {
    const evs = await events(key, id);
    return evs.filter((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type)).length >= runs && evs;
  });

/** Reads a text/event-stream until `stop` says so (or `ms` pass); the connection is dropped after. */
async function readSse(
  key: string,
  path: string,
  stop: (events: SseEvent[]) => boolean,
  headers: Record<string, string> = {},
  ms = 15_000,
): Promise<{ status: number; events: SseEvent[]; contentType: string | null }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const res = await fetch(`${t.url}${path}`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  });
  const out: SseEvent[] = [];
  if (res.status !== 200) {
    clearTimeout(timer);
    return { status: res.status, events: out, contentType: res.headers.get('content-type') };
  }
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const e: SseEvent = { data: null };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
        }
        if (e.data !== null) out.push(e);
      }
      if (stop(out)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return { status: res.status, events: out, contentType: res.headers.get('content-type') };
}
type SseEvent = { id?: string; event?: string; data: any };

describe('threads', () => {
  test('a first message starts a run the development model answers; events are numbered and carry producer and usage', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const created = await t.call('POST', '/threads', { key: ada.key, body: { agentId: agent.id, title: 'Hello', message: 'hello there' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ agentId: agent.id, title: 'Hello', accountId: ada.id, runId: expect.stringMatching(/^run_/) });
    const evs = await settled(ada.key, created.body.id);
    expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    expect(evs.map((e) => e.type)).toEqual([
      'thread.created',
      'message.created',
      'run.queued',
      'run.started',
      'message.created',
      'run.step',
      'run.completed',
    ]);
    const answer = evs[4]!;
    expect(answer.data).toMatchObject({ role: 'assistant', content: 'dev: hello there' });
    expect(answer.producer).toMatchObject({ kind: 'agent', id: agent.id });
    expect(answer.usage).toMatchObject({ model: 'svc/dev', inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
    expect(evs[1]!.producer).toMatchObject({ kind: 'human' });
    const thread = (await ok('GET', `/threads/${created.body.id}`, ada.key)).body;
    expect(thread).toMatchObject({ status: 'idle', currentRunId: null, lastSeq: evs.length });
    expect(thread.usage.outputTokens).toBeGreaterThan(0);
  });

  test('the model calls a real platform tool as the agent, and answers from its result', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    await ok('POST', '/drive/folders', ada.key, { name: 'reports' });
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool list_drive {}' });
    const evs = await settled(ada.key, created.body.id);
    const called = evs.find((e) => e.type === 'tool.called')!;
    expect(called.data).toMatchObject({ name: 'list_drive', step: 1 });
    const result = evs.find((e) => e.type === 'tool.result')!;
    expect([result.data.isError, result.data.result.items?.map((i: any) => i.name)]).toEqual([false, ['reports']]);
    expect(result.producer).toMatchObject({ kind: 'tool', id: 'list_drive' });
    const last = evs.filter((e) => e.type === 'message.created').pop()!;
    expect(last.data.content).toContain('list_drive');
    expect(last.data.step).toBe(2);
    expect(evs[evs.length - 1]!.type).toBe('run.completed');
  });

  test('whoami as the agent: the agent principal, never more', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool whoami {}' });
    const evs = await settled(ada.key, created.body.id);
    const result = evs.find((e) => e.type === 'tool.result')!;
    expect([result.data.isError, result.data.result]).toEqual([
      false,
      expect.objectContaining({ kind: 'agent', agentId: agent.id, accountId: ada.id }),
    ]);
  });

  test('a message injected while the run works is delivered at the next step boundary, in order, with its acknowledgement', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    // run_code keeps the first step's tool busy long enough for the injections to arrive during the run.
    const slow = '/tool run_code {"code":"const end = Date.now() + 1500; while (Date.now() < end) {} 1"}';
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow });
    await until(async () => (await events(ada.key, created.body.id)).some((e) => e.type === 'tool.called'));
    const first = await ok('POST', `/threads/${created.body.id}/inject`, ada.key, { content: 'first aside' });
    const second = await ok('POST', `/threads/${created.body.id}/inject`, ada.key, { content: 'second aside' });
    expect([first.status, first.body.status, first.body.runId]).toEqual([202, 'pending', created.body.runId]);
    expect(second.body.status).toBe('pending');
    const busy = await t.call('POST', `/threads/${created.body.id}/inject`, { key: ada.key, body: { content: 'no', mode: 'reject' } });
    expect([busy.status, busy.body.error.code]).toEqual([409, 'thread_busy']);
    const evs = await settled(ada.key, created.body.id);
    const delivered = evs.filter((e) => e.type === 'injection.delivered');
    expect(delivered.map((e) => e.data.messageId)).toEqual([first.body.messageId, second.body.messageId]);
    expect(delivered.every((e) => e.data.runId === created.body.runId && e.data.step === 1)).toBe(true);
    // Delivered after the tool result, before the next model turn, which sees the last message.
    const at = (type: string) => evs.findIndex((e) => e.type === type);
    expect(at('tool.result')).toBeLessThan(at('injection.delivered'));
    const answers = evs.filter((e) => e.type === 'message.created' && e.data.role === 'assistant');
    expect(answers[answers.length - 1]!.data.content).toBe('dev: second aside');
    expect(evs.filter((e) => e.type === 'run.completed')).toHaveLength(1);
  });

  test('enqueue runs the message after the current run', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const slow = '/tool run_code {"code":"const end = Date.now() + 1000; while (Date.now() < end) {} 1"}';
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow });
    await until(async () => (await events(ada.key, created.body.id)).some((e) => e.type === 'tool.called'));
    const later = await ok('POST', `/threads/${created.body.id}/inject`, ada.key, { content: 'afterwards', mode: 'enqueue' });
    expect(later.body.status).toBe('queued');
    const evs = await settled(ada.key, created.body.id, 2);
    const runs = [...new Set(evs.filter((e) => e.type === 'run.completed').map((e) => e.data.runId))];
    expect(runs).toHaveLength(2);
    const answers = evs.filter((e) => e.type === 'message.created' && e.data.role === 'assistant');
    expect(answers[answers.length - 1]).toMatchObject({ runId: runs[1], data: { content: 'dev: afterwards' } });
  });

  test('cancel stops the run at the next step boundary', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const slow = '/tool run_code {"code":"const end = Date.now() + 1000; while (Date.now() < end) {} 1"}';
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow });
    await until(async () => (await events(ada.key, created.body.id)).some((e) => e.type === 'tool.called'));
    const c = await ok('POST', `/threads/${created.body.id}/cancel`, ada.key);
    expect(c.body).toEqual({ runId: created.body.runId, status: 'cancelling' });
    const evs = await settled(ada.key, created.body.id);
    expect(evs[evs.length - 1]!.type).toBe('run.cancelled');
    expect(evs.some((e) => e.type === 'tool.result')).toBe(true);
    expect((await ok('GET', `/threads/${created.body.id}`, ada.key)).body.status).toBe('idle');
  });

  test('SSE: persisted events then live ones with deltas; a dropped stream resumes after Last-Event-ID with nothing lost or repeated', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, title: 'live' })).body;
    // First connection: read until the run's first step, then drop it mid-run.
    const reader = readSse(ada.key, `/threads/${th.id}/events`, (evs) => evs.some((e) => e.event === 'tool.called'));
    await new Promise((r) => setTimeout(r, 300));
    const slow = '/tool run_code {"code":"const end = Date.now() + 800; while (Date.now() < end) {} 1"}';
    await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: slow });
    const first = await reader;
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^text\/event-stream/);
    expect(first.events[0]).toMatchObject({ id: '1', event: 'thread.created' });
    const lastId = first.events.filter((e) => e.id).pop()!.id!;
    // Second connection resumes after the last id it saw, while the run goes on.
    const rest = await readSse(ada.key, `/threads/${th.id}/events`, (evs) => evs.some((e) => e.event === 'run.completed'), {
      'last-event-id': lastId,
    });
    const persisted = [...first.events, ...rest.events].filter((e) => e.id);
    const all = await events(ada.key, th.id);
    expect(persisted.map((e) => Number(e.id))).toEqual(all.map((e) => e.seq));
    expect(persisted.map((e) => e.event)).toEqual(all.map((e) => e.type));
    expect(persisted.map((e) => e.data.id)).toEqual(all.map((e: any) => e.id));
    // Text deltas stream live (no id), and the finished message is one persisted event.
    const deltas = [...first.events, ...rest.events].filter((e) => e.event === 'message.delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.every((e) => e.id === undefined && typeof e.data.data.text === 'string')).toBe(true);
    // ?after= works the same way; another account gets 404 before any stream.
    const after = await readSse(ada.key, `/threads/${th.id}/events?after=${all.length - 1}`, (evs) => evs.length >= 1);
    expect(after.events.map((e) => Number(e.id))).toEqual([all.length]);
    const bob = await person();
    const other = await readSse(bob.key, `/threads/${th.id}/events`, () => true);
    expect(other.status).toBe(404);
  });

  test('SSE: the stream ends when the thread is deleted', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const reading = readSse(ada.key, `/threads/${th.id}/events`, () => false);
    await new Promise((r) => setTimeout(r, 300));
    await ok('DELETE', `/threads/${th.id}`, ada.key);
    const started = Date.now();
    const res = await reading;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(res.events.map((e) => e.event)).toEqual(['thread.created']);
  });

  test('SSE: one key holds a bounded number of live streams (429 with Retry-After), and a closed one frees its place', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const acs = [new AbortController(), new AbortController(), new AbortController()];
    const open = (ac?: AbortController) =>
      fetch(`${t.url}/threads/${th.id}/events`, { headers: { authorization: `Bearer ${ada.key}`, accept: 'text/event-stream' }, signal: ac?.signal });
    const held = await Promise.all(acs.map((ac) => open(ac)));
    expect(held.map((r) => r.status)).toEqual([200, 200, 200]);
    const refused = await open();
    expect([refused.status, refused.headers.get('retry-after'), ((await refused.json()) as any).error.code]).toEqual([429, '5', 'too_many_streams']);
    acs[0]!.abort();
    await until(async () => {
      const ac = new AbortController();
      const again = await open(ac);
      ac.abort();
      return again.status === 200;
    });
    for (const ac of acs) ac.abort();
  });

  test('a project-scoped key sees its project’s threads only', async () => {
    const ada = await person();
    const scoped = (await ok('POST', '/me/api-keys', ada.key, { name: 'scoped', projectId: 'alpha' })).body.key as string;
    const inProject = await agentOf(scoped);
    const outside = await agentOf(ada.key);
    const mine = (await ok('POST', '/threads', scoped, { agentId: inProject.id })).body;
    expect(mine.projectId).toBe('alpha');
    const theirs = (await ok('POST', '/threads', ada.key, { agentId: outside.id })).body;
    expect((await ok('GET', '/me/threads', scoped)).body.threads.map((x: any) => x.id)).toEqual([mine.id]);
    expect((await t.call('GET', `/threads/${theirs.id}`, { key: scoped })).status).toBe(404);
    expect((await t.call('POST', '/threads', { key: scoped, body: { agentId: outside.id } })).body.error.code).toBe('agent_not_found');
    expect((await ok('GET', '/me/threads', ada.key)).body.threads.map((x: any) => x.id).sort()).toEqual([mine.id, theirs.id].sort());
  });

  test('a tool the agent may not call, or a bad argument, is a tool error the run survives', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key, { tools: ['whoami'] });
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool list_drive {}\n/tool whoami {"nope": 1}' });
    const evs = await settled(ada.key, created.body.id);
    const results = evs.filter((e) => e.type === 'tool.result');
    expect(results.map((r) => [r.data.name, r.data.isError, r.data.result.error.code])).toEqual([
      ['list_drive', true, 'tool_not_allowed'],
      ['whoami', true, 'invalid_request'],
    ]);
    expect(evs[evs.length - 1]!.type).toBe('run.completed');
  });

  test('another account’s thread is 404 everywhere; bad input is a clear error', async () => {
    const ada = await person();
    const bob = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    for (const [m, p, body] of [
      ['GET', `/threads/${th.id}`],
      ['GET', `/threads/${th.id}/events`],
      ['PATCH', `/threads/${th.id}`, { title: 'x' }],
      ['POST', `/threads/${th.id}/inject`, { content: 'hi' }],
      ['POST', `/threads/${th.id}/cancel`],
      ['DELETE', `/threads/${th.id}`],
    ] as const) {
      const res = await t.call(m, p, { key: bob.key, body });
      expect([m, p, res.status, res.body.error?.code]).toEqual([m, p, 404, 'thread_not_found']);
    }
    expect((await t.call('POST', '/threads', { key: bob.key, body: { agentId: agent.id } })).body.error.code).toBe('agent_not_found');
    const big = await t.call('POST', `/threads/${th.id}/inject`, { key: ada.key, body: { content: 'x'.repeat(32_001) } });
    expect([big.status, big.body.error.code]).toEqual([413, 'message_too_large']);
    const bigFirst = await t.call('POST', '/threads', { key: ada.key, body: { agentId: agent.id, message: 'x'.repeat(32_001) } });
    expect([bigFirst.status, bigFirst.body.error.code]).toEqual([413, 'message_too_large']);
    const none = await t.call('POST', '/threads', { key: bob.key, body: {} });
    expect([none.status, none.body.error.code]).toEqual([422, 'no_default_agent']);
    expect((await ok('GET', '/me/threads', bob.key)).body.threads).toEqual([]);
    expect((await ok('GET', '/me/threads', ada.key)).body.threads.map((x: any) => x.id)).toEqual([th.id]);
    const del = await ok('DELETE', `/threads/${th.id}`, ada.key);
    expect(del.body.success).toBe(true);
    expect((await t.call('POST', `/threads/${th.id}/inject`, { key: ada.key, body: { content: 'hi' } })).status).toBe(404);
  });

  test('the same clientMessageId twice is one message', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const a = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'once', clientMessageId: 'c-1' });
    const b = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'once', clientMessageId: 'c-1' });
    // The replay answers as the first did: the same message, and the seq of its event (not 0).
    expect(b.body).toEqual(a.body);
    expect(a.body.seq).toBeGreaterThan(0);
    const evs = await settled(ada.key, th.id);
    expect(evs.filter((e) => e.type === 'message.created' && e.data.role === 'user')).toHaveLength(1);
    // The same clientMessageId with other content is a conflict, as trading answers a reused clientOrderId.
    const other = await t.call('POST', `/threads/${th.id}/inject`, { key: ada.key, body: { content: 'twice', clientMessageId: 'c-1' } });
    expect([other.status, other.body.error.code]).toEqual([409, 'client_message_id_conflict']);
  });

  test('a message waiting for a run shows the seq of its event in the pending list, as on the thread', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const slow = '/tool run_code {"code":"const end = Date.now() + 1500; while (Date.now() < end) {} 1"}';
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow })).body;
    const queued = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'after that', mode: 'enqueue', clientMessageId: 'q-1' });
    expect(queued.body.status).toBe('queued');
    const pending = (await ok('GET', `/threads/${th.id}/pending-messages`, ada.key)).body.messages as Array<{ id: string; seq: number }>;
    expect(pending.find((m) => m.id === queued.body.messageId)?.seq).toBe(queued.body.seq);
    expect(queued.body.seq).toBeGreaterThan(0);
    const again = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'after that', mode: 'enqueue', clientMessageId: 'q-1' });
    expect(again.body).toEqual(queued.body);
  });
});
