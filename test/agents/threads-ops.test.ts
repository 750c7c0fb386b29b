import { startTestStack, type TestStack } from '../support/stack';

/** Thread operations (docs/threads.md): messages, runs, tool calls, fork, archive, tags, search, export, wait, retry, restore. */

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
async function agentOf(key: string) {
  return (await ok('POST', '/agents', key, { name: `agent ${++n}` })).body as { id: string };
}
async function idleThread(key: string, agentId: string, message: string, title?: string) {
  const created = await ok('POST', '/threads', key, { agentId, message, ...(title ? { title } : {}) });
  const waited = await ok('POST', `/threads/${created.body.id}/wait`, key, { timeoutMs: 15_000 });
  expect(waited.body.timedOut).toBe(false);
  return { id: created.body.id as string, runId: created.body.runId as string, waited: waited.body };
}
const err = async (method: string, path: string, key: string, body?: unknown) => {
  const res = await t.call(method as 'GET', path, { key, body });
  return [res.status, res.body?.error?.code];
};

describe('thread operations', () => {
  let ada: { id: string; key: string };
  let bob: { id: string; key: string };
  let agent: { id: string };
  beforeAll(async () => {
    [ada, bob] = await Promise.all([person(), person()]);
    agent = await agentOf(ada.key);
  });

  test('wait answers with the last reply; messages, one message, runs, one run, its context, event by seq, last reply, summary, usage', async () => {
    const th = await idleThread(ada.key, agent.id, 'hello there', 'Greeting');
    expect(th.waited.lastReply).toMatchObject({ role: 'assistant', content: 'dev: hello there', runId: th.runId });
    const msgs = (await ok('GET', `/threads/${th.id}/messages`, ada.key)).body;
    expect(msgs.messages.map((m: any) => [m.role, m.content, m.status])).toEqual([
      ['user', 'hello there', 'started'],
      ['assistant', 'dev: hello there', ''],
    ]);
    const onlyUser = (await ok('GET', `/threads/${th.id}/messages?role=user&limit=1`, ada.key)).body;
    expect(onlyUser.messages).toHaveLength(1);
    const one = (await ok('GET', `/threads/${th.id}/messages/${msgs.messages[1].id}`, ada.key)).body;
    expect(one).toEqual(msgs.messages[1]);
    const ev = (await ok('GET', `/threads/${th.id}/events/1`, ada.key)).body;
    expect(ev).toMatchObject({ seq: 1, type: 'thread.created' });
    expect(await err('GET', `/threads/${th.id}/events/9999`, ada.key)).toEqual([404, 'event_not_found']);
    const runs = (await ok('GET', `/threads/${th.id}/runs`, ada.key)).body;
    expect(runs.runs).toHaveLength(1);
    expect(runs.runs[0]).toMatchObject({ id: th.runId, status: 'completed', steps: 1, toolCalls: 0, error: null });
    const run = (await ok('GET', `/threads/${th.id}/runs/${th.runId}`, ada.key)).body;
    expect(run.usage.inputTokens + run.usage.outputTokens).toBeGreaterThan(0);
    const ctx = (await ok('GET', `/threads/${th.id}/runs/${th.runId}/context`, ada.key)).body;
    expect(ctx.messages.filter((m: any) => m.role !== 'system').map((m: any) => m.content)).toEqual(['hello there', 'dev: hello there']);
    const last = (await ok('GET', `/threads/${th.id}/last-reply`, ada.key)).body;
    expect(last.message.content).toBe('dev: hello there');
    const sum = (await ok('GET', `/threads/${th.id}/summary`, ada.key)).body;
    expect(sum).toMatchObject({ userMessages: 1, agentMessages: 1, runs: 1, failedRuns: 0, toolCalls: 0, lastError: null });
    expect(sum.firstMessage.content).toBe('hello there');
    const usage = (await ok('GET', `/threads/${th.id}/usage`, ada.key)).body;
    expect(usage.byModel).toHaveLength(1);
    expect(usage.byModel[0].turns).toBe(1);
    expect(usage.total.inputTokens).toBe(run.usage.inputTokens);
    // Another account sees none of it.
    for (const path of ['messages', `messages/${one.id}`, 'events/1', 'runs', `runs/${th.runId}`, 'last-reply', 'summary', 'usage', 'export']) {
      expect(await err('GET', `/threads/${th.id}/${path}`, bob.key)).toEqual([404, 'thread_not_found']);
    }
    expect(await err('GET', `/threads/${th.id}/runs/run_00000000000000000000000000`, ada.key)).toEqual([404, 'run_not_found']);
    expect(await err('GET', `/threads/${th.id}/messages?role=system`, ada.key)).toEqual([400, 'invalid_request']);
    expect(await err('POST', `/threads/${th.id}/wait`, ada.key, { timeoutMs: 60_000 })).toEqual([400, 'invalid_request']);
  });

  test('tool calls of a run and their summary', async () => {
    const th = await idleThread(ada.key, agent.id, '/tool whoami {}');
    const calls = (await ok('GET', `/threads/${th.id}/runs/${th.runId}/tool-calls`, ada.key)).body.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'whoami', status: 'done', isError: false, arguments: {} });
    const sum = (await ok('GET', `/threads/${th.id}/tool-calls/summary`, ada.key)).body;
    expect(sum).toMatchObject({ calls: 1, errors: 0, tools: [{ name: 'whoami', calls: 1, errors: 0 }] });
  });

  test('a waiting message can be listed, edited and retracted until a run takes it', async () => {
    const slow = '/tool run_code {"code":"const end = Date.now() + 1500; while (Date.now() < end) {} 1"}';
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow });
    const id = created.body.id;
    const a = await ok('POST', `/threads/${id}/inject`, ada.key, { content: 'later one', mode: 'enqueue' });
    const b = await ok('POST', `/threads/${id}/inject`, ada.key, { content: 'later two', mode: 'enqueue' });
    const pending = (await ok('GET', `/threads/${id}/pending-messages`, ada.key)).body.messages;
    expect(pending.map((m: any) => [m.id, m.status])).toEqual([
      [a.body.messageId, 'queued'],
      [b.body.messageId, 'queued'],
    ]);
    const edited = (await ok('PATCH', `/threads/${id}/messages/${a.body.messageId}`, ada.key, { content: 'edited one' })).body;
    expect([edited.content, edited.editedAt !== null]).toEqual(['edited one', true]);
    const r = await ok('DELETE', `/threads/${id}/messages/${b.body.messageId}`, ada.key);
    expect(r.body).toEqual({ messageId: b.body.messageId, status: 'retracted' });
    expect((await ok('DELETE', `/threads/${id}/messages/${b.body.messageId}`, ada.key)).body.status).toBe('retracted');
    expect(await err('PATCH', `/threads/${id}/messages/${a.body.messageId}`, ada.key, {})).toEqual([400, 'invalid_request']);
    expect(await err('PATCH', `/threads/${id}/messages/${a.body.messageId}`, bob.key, { content: 'x' })).toEqual([404, 'thread_not_found']);
    // Wait until both runs are done: the edited message ran, the retracted one never did.
    await t.call('POST', `/threads/${id}/wait`, { key: ada.key, body: { timeoutMs: 15_000 } });
    const w = await ok('POST', `/threads/${id}/wait`, ada.key, { timeoutMs: 15_000 });
    expect(w.body.timedOut).toBe(false);
    expect(w.body.lastReply.content).toBe('dev: edited one');
    const runs = (await ok('GET', `/threads/${id}/runs`, ada.key)).body.runs;
    expect(runs).toHaveLength(2);
    expect(await err('PATCH', `/threads/${id}/messages/${a.body.messageId}`, ada.key, { content: 'too late' })).toEqual([409, 'message_not_waiting']);
    expect(await err('DELETE', `/threads/${id}/messages/${a.body.messageId}`, ada.key)).toEqual([409, 'message_not_waiting']);
    const exported = (await ok('GET', `/threads/${id}/export?format=json`, ada.key)).body;
    const doc = JSON.parse(exported.content);
    expect(doc.messages.map((m: any) => m.content)).not.toContain('later two');
  });

  test('fork keeps the conversation up to an event; the fork’s next run sees it', async () => {
    const th = await idleThread(ada.key, agent.id, 'first question', 'Origin');
    await ok('POST', `/threads/${th.id}/inject`, ada.key, { content: 'second question' });
    await ok('POST', `/threads/${th.id}/wait`, ada.key, { timeoutMs: 15_000 });
    const msgs = (await ok('GET', `/threads/${th.id}/messages`, ada.key)).body.messages;
    const fork = await ok('POST', `/threads/${th.id}/fork`, ada.key, { atSeq: msgs[1].seq });
    expect(fork.status).toBe(201);
    expect(fork.body).toMatchObject({ title: 'Origin (fork)', agentId: agent.id, forkedFrom: { threadId: th.id, seq: msgs[1].seq }, status: 'idle' });
    const forkMsgs = (await ok('GET', `/threads/${fork.body.id}/messages`, ada.key)).body.messages;
    expect(forkMsgs.map((m: any) => m.content)).toEqual(['first question', 'dev: first question']);
    const inj = await ok('POST', `/threads/${fork.body.id}/inject`, ada.key, { content: 'another direction' });
    await ok('POST', `/threads/${fork.body.id}/wait`, ada.key, { timeoutMs: 15_000 });
    const ctx = (await ok('GET', `/threads/${fork.body.id}/runs/${inj.body.runId}/context`, ada.key)).body.messages;
    expect(ctx.filter((m: any) => m.role === 'user').map((m: any) => m.content)).toEqual(['first question', 'another direction']);
    expect(await err('POST', `/threads/${th.id}/fork`, ada.key, { atSeq: 99_999 })).toEqual([400, 'invalid_request']);
    expect(await err('POST', `/threads/${th.id}/fork`, bob.key, {})).toEqual([404, 'thread_not_found']);
  });

  test('archive, tags, search, export, set agent', async () => {
    const th = await idleThread(ada.key, agent.id, 'the quarterly zebra report', 'Reports');
    const archived = (await ok('POST', `/threads/${th.id}/archive`, ada.key)).body;
    expect(archived.archivedAt).not.toBeNull();
    const live = (await ok('GET', '/me/threads?limit=200', ada.key)).body.threads.map((x: any) => x.id);
    expect(live).not.toContain(th.id);
    const arch = (await ok('GET', '/me/threads?archived=true', ada.key)).body.threads.map((x: any) => x.id);
    expect(arch).toEqual([th.id]);
    expect((await ok('POST', `/threads/${th.id}/unarchive`, ada.key)).body.archivedAt).toBeNull();

    await ok('PUT', `/threads/${th.id}/tags/finance`, ada.key);
    const tagged = (await ok('PUT', `/threads/${th.id}/tags/q3`, ada.key)).body;
    expect(tagged.tags).toEqual(['finance', 'q3']);
    expect((await ok('PUT', `/threads/${th.id}/tags/q3`, ada.key)).body.tags).toEqual(['finance', 'q3']);
    expect((await ok('DELETE', `/threads/${th.id}/tags/q3`, ada.key)).body.tags).toEqual(['finance']);
    expect((await ok('GET', '/me/thread-tags', ada.key)).body.tags).toEqual([{ tag: 'finance', threads: 1 }]);
    expect((await ok('GET', '/me/threads?tag=finance', ada.key)).body.threads.map((x: any) => x.id)).toEqual([th.id]);
    expect(await err('PUT', `/threads/${th.id}/tags/Bad%20Tag`, ada.key)).toEqual([400, 'invalid_request']);
    expect((await ok('GET', '/me/thread-tags', bob.key)).body.tags).toEqual([]);

    const found = (await ok('GET', '/me/threads/search?q=ZEBRA', ada.key)).body.matches;
    expect(found.map((m: any) => [m.thread.id, m.snippet])).toEqual([[th.id, 'dev: the quarterly zebra report']]);
    expect((await ok('GET', '/me/threads/search?q=reports', ada.key)).body.matches[0]).toMatchObject({ snippet: null });
    expect((await ok('GET', '/me/threads/search?q=zebra', bob.key)).body.matches).toEqual([]);
    expect((await ok('GET', '/me/threads/search?q=100%25', ada.key)).body.matches).toEqual([]);
    expect(await err('GET', '/me/threads/search', ada.key)).toEqual([400, 'invalid_request']);

    const md = (await ok('GET', `/threads/${th.id}/export`, ada.key)).body;
    expect(md.format).toBe('markdown');
    expect(md.content).toContain('# Reports');
    expect(md.content).toContain('dev: the quarterly zebra report');
    expect(await err('GET', `/threads/${th.id}/export?format=pdf`, ada.key)).toEqual([400, 'invalid_request']);

    const other = await agentOf(ada.key);
    const moved = (await ok('PUT', `/threads/${th.id}/agent`, ada.key, { agentId: other.id })).body;
    expect(moved.agentId).toBe(other.id);
    const bobAgent = await agentOf(bob.key);
    expect(await err('PUT', `/threads/${th.id}/agent`, ada.key, { agentId: bobAgent.id })).toEqual([404, 'agent_not_found']);
  });

  test('retry runs a failed or cancelled run’s message again; deleted threads are listed and restored', async () => {
    const slow = '/tool run_code {"code":"const end = Date.now() + 1000; while (Date.now() < end) {} 1"}';
    const created = await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow });
    const id = created.body.id;
    expect(await err('POST', `/threads/${id}/retry`, ada.key)).toEqual([409, 'thread_busy']);
    await ok('POST', `/threads/${id}/cancel`, ada.key);
    await ok('POST', `/threads/${id}/wait`, ada.key, { timeoutMs: 15_000 });
    const retried = await ok('POST', `/threads/${id}/retry`, ada.key);
    expect(retried.status).toBe(202);
    expect(retried.body.retriedRunId).toBe(created.body.runId);
    const w = await ok('POST', `/threads/${id}/wait`, ada.key, { timeoutMs: 15_000 });
    expect(w.body.timedOut).toBe(false);
    const run = (await ok('GET', `/threads/${id}/runs/${retried.body.runId}`, ada.key)).body;
    expect(run.status).toBe('completed');
    expect(await err('POST', `/threads/${id}/retry`, ada.key)).toEqual([409, 'nothing_to_retry']);

    await ok('DELETE', `/threads/${id}`, ada.key);
    expect(await err('GET', `/threads/${id}`, ada.key)).toEqual([404, 'thread_not_found']);
    const deleted = (await ok('GET', '/me/threads/deleted', ada.key)).body.threads;
    expect(deleted.map((d: any) => d.thread.id)).toContain(id);
    expect((await ok('GET', '/me/threads/deleted', bob.key)).body.threads).toEqual([]);
    expect(await err('POST', `/threads/${id}/restore`, bob.key)).toEqual([404, 'thread_not_found']);
    const restored = (await ok('POST', `/threads/${id}/restore`, ada.key)).body;
    expect(restored.id).toBe(id);
    expect((await ok('GET', `/threads/${id}`, ada.key)).body.id).toBe(id);
    expect((await ok('POST', `/threads/${id}/restore`, ada.key)).body.id).toBe(id);
  });
});
