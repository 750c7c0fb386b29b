import { startTestStack, type TestStack } from './support/stack';

/** Threads and runs (docs/threads.md): the development model answering, calling real tools, events, isolation. */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
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
async function until<T>(probe: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
const settled = (key: string, id: string, runs = 1) =>
  until(async () => {
    const evs = await events(key, id);
    return evs.filter((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type)).length >= runs && evs;
  });

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
    expect(big.status).toBe(400);
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
    expect(b.body.messageId).toBe(a.body.messageId);
    const evs = await settled(ada.key, th.id);
    expect(evs.filter((e) => e.type === 'message.created' && e.data.role === 'user')).toHaveLength(1);
  });
});
