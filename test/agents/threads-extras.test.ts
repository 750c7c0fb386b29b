import { startTestStack, type TestStack } from '../support/stack';

/** Account-wide and housekeeping thread operations (docs/threads.md). */

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
const err = async (method: string, path: string, key: string, body?: unknown) => {
  const res = await t.call(method as 'GET', path, { key, body });
  return [res.status, res.body?.error?.code];
};
const SLOW = '/tool run_code {"code":"const end = Date.now() + 1500; while (Date.now() < end) {} 1"}';

describe('threads: more operations', () => {
  let ada: { id: string; key: string };
  let bob: { id: string; key: string };
  let agent: { id: string };
  beforeAll(async () => {
    [ada, bob] = await Promise.all([person(), person()]);
    agent = (await ok('POST', '/agents', ada.key, { name: 'extras' })).body;
  });

  test('ask: a turn in one call; search in a thread; participants', async () => {
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, title: 'Turns' })).body;
    const first = (await ok('POST', `/threads/${th.id}/ask`, ada.key, { content: 'the blue whale', timeoutMs: 15_000 })).body;
    expect(first).toMatchObject({ status: 'started', timedOut: false, reply: { role: 'assistant', content: 'dev: the blue whale' } });
    const second = (await ok('POST', `/threads/${th.id}/ask`, ada.key, { content: 'a red fox', timeoutMs: 15_000 })).body;
    expect(second.reply.content).toBe('dev: a red fox');
    expect(await err('POST', `/threads/${th.id}/ask`, bob.key, { content: 'hi' })).toEqual([404, 'thread_not_found']);
    expect(await err('POST', `/threads/${th.id}/ask`, ada.key, { content: 'hi', timeoutMs: 50 })).toEqual([400, 'invalid_request']);

    const found = (await ok('GET', `/threads/${th.id}/search?q=WHALE`, ada.key)).body.messages;
    expect(found.map((m: any) => m.content)).toEqual(['dev: the blue whale', 'the blue whale']);
    expect((await ok('GET', `/threads/${th.id}/search?q=zebra`, ada.key)).body.messages).toEqual([]);
    expect(await err('GET', `/threads/${th.id}/search?q=whale`, bob.key)).toEqual([404, 'thread_not_found']);
    expect(await err('GET', `/threads/${th.id}/search`, ada.key)).toEqual([400, 'invalid_request']);

    const parts = (await ok('GET', `/threads/${th.id}/participants`, ada.key)).body.participants;
    expect(parts.map((x: any) => [x.kind, x.id, x.messages])).toEqual(
      [
        ['human', ada.id, 2],
        ['system', '', 0],
        ['agent', agent.id, 2],
      ].map(([k, i, m]) => (k === 'system' ? [k, expect.any(String), m] : [k, i, m])),
    );
  });

  test('metadata merge patch', async () => {
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, metadata: { a: 1, nested: { x: 1, y: 2 } } })).body;
    const patched = (await ok('PATCH', `/threads/${th.id}/metadata`, ada.key, { a: null, b: 'two', nested: { y: null, z: 3 } })).body;
    expect(patched.metadata).toEqual({ b: 'two', nested: { x: 1, z: 3 } });
    expect(await err('PATCH', `/threads/${th.id}/metadata`, ada.key, [1, 2])).toEqual([400, 'invalid_request']);
    expect(await err('PATCH', `/threads/${th.id}/metadata`, ada.key, { big: 'x'.repeat(17_000) })).toEqual([400, 'invalid_request']);
    expect(await err('PATCH', `/threads/${th.id}/metadata`, bob.key, { a: 1 })).toEqual([404, 'thread_not_found']);
  });

  test('clearing waiting messages; the account’s runs', async () => {
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, message: SLOW })).body;
    const a = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'one', mode: 'enqueue' });
    const b = await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'two', mode: 'enqueue' });
    const running = (await ok('GET', '/me/runs?status=running', ada.key)).body.runs.map((r: any) => r.id);
    const queuedOrRunning = [...running, ...(await ok('GET', '/me/runs?status=queued', ada.key)).body.runs.map((r: any) => r.id)];
    expect(queuedOrRunning).toContain(th.runId);
    const cleared = (await ok('DELETE', `/threads/${th.id}/pending-messages`, ada.key)).body.messageIds;
    expect(cleared).toEqual([a.body.messageId, b.body.messageId]);
    expect((await ok('DELETE', `/threads/${th.id}/pending-messages`, ada.key)).body.messageIds).toEqual([]);
    await ok('POST', `/threads/${th.id}/wait`, ada.key, { timeoutMs: 15_000 });
    expect((await ok('GET', `/threads/${th.id}/runs`, ada.key)).body.runs).toHaveLength(1);
    expect(await err('DELETE', `/threads/${th.id}/pending-messages`, bob.key)).toEqual([404, 'thread_not_found']);

    const all = (await ok('GET', `/me/runs?agentId=${agent.id}`, ada.key)).body.runs;
    expect(all.map((r: any) => r.id)).toContain(th.runId);
    expect((await ok('GET', '/me/runs', bob.key)).body.runs).toEqual([]);
    expect(await err('GET', '/me/runs?status=sleeping', ada.key)).toEqual([400, 'invalid_request']);
  });

  test('usage per agent; archiving idle threads', async () => {
    const usage = (await ok('GET', '/me/thread-usage', ada.key)).body;
    const line = usage.agents.find((x: any) => x.agentId === agent.id);
    expect(line.runs).toBeGreaterThanOrEqual(3);
    expect(usage.runs).toBe(usage.agents.reduce((s: number, x: any) => s + x.runs, 0));
    expect(usage.total.inputTokens).toBeGreaterThan(0);
    expect(
      (await ok('GET', `/me/thread-usage?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, ada.key)).body.agents,
    ).toEqual([]);
    expect((await ok('GET', '/me/thread-usage', bob.key)).body).toEqual({
      total: { inputTokens: 0, outputTokens: 0, cost: '0' },
      runs: 0,
      agents: [],
    });

    const other = (await ok('POST', '/agents', ada.key, { name: 'other' })).body;
    const keep = (await ok('POST', '/threads', ada.key, { agentId: other.id })).body;
    expect((await ok('POST', '/me/threads/archive-idle', ada.key, { olderThanDays: 1 })).body.threadIds).toEqual([]);
    const archived = (await ok('POST', '/me/threads/archive-idle', ada.key, { olderThanDays: 0, agentId: agent.id })).body.threadIds;
    expect(archived.length).toBeGreaterThanOrEqual(3);
    const live = (await ok('GET', '/me/threads?limit=200', ada.key)).body.threads.map((x: any) => x.id);
    expect(live).toEqual([keep.id]);
    expect(await err('POST', '/me/threads/archive-idle', ada.key, { olderThanDays: -1 })).toEqual([400, 'invalid_request']);
    expect((await ok('POST', '/me/threads/archive-idle', bob.key, { olderThanDays: 0 })).body.threadIds).toEqual([]);
  });

  test('wait-events answers as soon as an event comes; run steps', async () => {
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const last = (await ok('GET', `/threads/${th.id}`, ada.key)).body.lastSeq;
    const idle = (await ok('POST', `/threads/${th.id}/wait-events`, ada.key, { after: last, timeoutMs: 300 })).body;
    expect(idle).toEqual({ events: [], timedOut: true, lastSeq: last });
    const waiting = ok('POST', `/threads/${th.id}/wait-events`, ada.key, { after: last, types: ['run.completed'], timeoutMs: 15_000 });
    const sent = (await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: '/tool whoami {}' })).body;
    const got = (await waiting).body;
    expect(got.timedOut).toBe(false);
    expect(got.events.map((e: any) => [e.type, e.runId])).toEqual([['run.completed', sent.runId]]);
    expect(await err('POST', `/threads/${th.id}/wait-events`, ada.key, { after: 0, types: ['Bad Type'] })).toEqual([400, 'invalid_request']);
    expect(await err('POST', `/threads/${th.id}/wait-events`, bob.key, { after: 0, timeoutMs: 0 })).toEqual([404, 'thread_not_found']);

    const steps = (await ok('GET', `/threads/${th.id}/runs/${sent.runId}/steps`, ada.key)).body.steps;
    expect(steps.map((x: any) => [x.step, x.toolsCalled, x.toolErrors, x.interrupted])).toEqual([
      [1, ['whoami'], 0, false],
      [2, [], 0, false],
    ]);
    expect(steps[0].usage.inputTokens).toBeGreaterThan(0);
    expect(await err('GET', `/threads/${th.id}/runs/${sent.runId}/steps`, bob.key)).toEqual([404, 'thread_not_found']);
    expect(await err('GET', `/threads/${th.id}/runs/run_${'0'.repeat(26)}/steps`, ada.key)).toEqual([404, 'run_not_found']);
  });
});
