import WebSocket from 'ws';

import { routes } from '@svc/api';
import { ToolCatalogue } from '@svc/tools';

import { alive, busyChild } from '../support/sandbox-procs';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

// Cancel, interrupt and rollback reach a running tool (docs/threads.md, "Aborting a tool",
// "Rollback"): the development model calls run_code with a script that would busy-loop for 60 s;
// the sandbox has one process, so the test sees which process runs it and that it is killed.

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SVC_MCP_RUN_CODE_POOL_SIZE: '1', SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: '60000' });
});
afterAll(() => t?.stop());

const SLOW = '/tool run_code {"code":"const end = Date.now() + 60000; while (Date.now() < end) {} \\"finished\\"","timeoutMs":60000}';
const ENDS = ['run.completed', 'run.failed', 'run.cancelled'];

let n = 0;
const ok: TestStack['ok'] = (...args) => t.ok(...args);
async function person() {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
async function agentOf(key: string, body: Record<string, unknown> = {}) {
  return (await ok('POST', '/agents', key, { name: `agent ${++n}`, ...body })).body as { id: string };
}
type Ev = { seq: number; type: string; data: any; runId: string | null; createdAt: string };
async function events(key: string, threadId: string): Promise<Ev[]> {
  const out: Ev[] = [];
  for (let a = 0; ;) {
    const res = await ok('GET', `/threads/${threadId}/events?after=${a}&limit=200`, key);
    out.push(...res.body.events);
    if (res.body.nextAfter === null) return out;
    a = res.body.nextAfter;
  }
}
const settled = (key: string, id: string, runs = 1) =>
  until(async () => {
    const evs = await events(key, id);
    return evs.filter((e) => ENDS.includes(e.type)).length >= runs && evs;
  }, 30_000);

/** A thread whose run is busy in the slow script now: the thread, its run and the sandbox process running the script. */
async function slowRun(key: string, agentId: string, message = SLOW) {
  const created = (await ok('POST', '/threads', key, { agentId, message })).body;
  await until(async () => (await events(key, created.id)).some((e) => e.type === 'tool.called'));
  const pid = await busyChild();
  return { threadId: created.id as string, runId: created.runId as string, pid };
}

const msBetween = (a: Ev, b: Ev) => Date.parse(b.createdAt) - Date.parse(a.createdAt);

describe('cancel and interrupt reach a running tool', () => {
  test('a cancel during a 60 s script kills its process; the call is recorded aborted once and the run ends cancelled', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const { threadId, runId, pid } = await slowRun(ada.key, agent.id);
    const c = await ok('POST', `/threads/${threadId}/cancel`, ada.key);
    expect(c.body).toEqual({ runId, status: 'cancelling' });
    const evs = await settled(ada.key, threadId);
    await until(() => !alive(pid), 10_000, { what: 'the sandbox process to be gone' });
    expect(evs[evs.length - 1]!.type).toBe('run.cancelled');
    const results = evs.filter((e) => e.type === 'tool.result');
    expect(results).toHaveLength(1);
    expect(results[0]!.data).toMatchObject({
      name: 'run_code',
      isError: true,
      aborted: true,
      abortedBy: 'cancel',
      result: { error: { code: 'tool_aborted', details: { reason: 'cancel', started: true, effect: 'none' } } },
    });
    // Ended long before the script would have (it loops for 60 s).
    const called = evs.find((e) => e.type === 'tool.called')!;
    expect(msBetween(called, evs[evs.length - 1]!)).toBeLessThan(60_000);
    const calls = (await ok('GET', `/threads/${threadId}/runs/${runId}/tool-calls`, ada.key)).body.toolCalls;
    expect(calls.map((x: any) => [x.name, x.status, x.aborted])).toEqual([['run_code', 'done', true]]);
    // What the model would see next: the aborted result as the call's tool message.
    const ctx = (await ok('GET', `/threads/${threadId}/runs/${runId}/context`, ada.key)).body.messages;
    expect(ctx[ctx.length - 1]).toMatchObject({ role: 'tool', name: 'run_code' });
    expect(JSON.parse(ctx[ctx.length - 1].content).error.code).toBe('tool_aborted');
    const run = (await ok('GET', `/threads/${threadId}/runs/${runId}`, ada.key)).body;
    expect([run.status, run.rolledBackSeq]).toEqual(['cancelled', null]);
    expect((await ok('GET', `/threads/${threadId}`, ada.key)).body.status).toBe('idle');
    // The sandbox replaced its process and runs the next script.
    const again = await ok('POST', '/code/run', ada.key, { code: '6 * 7' });
    expect(again.body.result).toBe(42);
  }, 60_000);

  test('the calls of the step not begun when the cancel came are not run: a later write never happens', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const write = '/tool write_drive_file {"name":"after-cancel.txt","content":"should not exist"}';
    const { threadId } = await slowRun(ada.key, agent.id, `${SLOW}\n${write}`);
    await ok('POST', `/threads/${threadId}/cancel`, ada.key);
    const evs = await settled(ada.key, threadId);
    const results = evs.filter((e) => e.type === 'tool.result');
    expect(results.map((r) => [r.data.name, r.data.aborted, r.data.result.error.details.started])).toEqual([
      ['run_code', true, true],
      ['write_drive_file', true, false],
    ]);
    expect(results[1]!.data.result.error.message).toMatch(/^Not run/);
    expect(evs[evs.length - 1]!.type).toBe('run.cancelled');
    const drive = (await ok('GET', '/drive', ada.key)).body.items as { name: string }[];
    expect(drive.map((i) => i.name)).not.toContain('after-cancel.txt');
    // A message after the cancel starts from the cancelled run's conversation, every call of it answered.
    await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'and now?' });
    const next = await settled(ada.key, threadId, 2);
    expect(next[next.length - 1]!.type).toBe('run.completed');
    expect(next.filter((e) => e.type === 'message.created').pop()!.data.content).toBe('dev: and now?');
  }, 60_000);

  test('an interrupt aborts the running script and delivers the message at once; the model answers it', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const { threadId, runId, pid } = await slowRun(ada.key, agent.id);
    const sent = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'stop that', mode: 'interrupt' });
    expect([sent.body.status, sent.body.runId, sent.body.rolledBackRunId]).toEqual(['pending', runId, null]);
    const evs = await settled(ada.key, threadId);
    await until(() => !alive(pid), 10_000, { what: 'the sandbox process to be gone' });
    const at = (type: string) => evs.findIndex((e) => e.type === type);
    const result = evs[at('tool.result')]!;
    expect(result.data).toMatchObject({ aborted: true, abortedBy: 'interrupt', result: { error: { code: 'tool_aborted' } } });
    expect(at('tool.result')).toBeLessThan(at('injection.delivered'));
    expect(evs[at('injection.delivered')]!.data).toMatchObject({ messageId: sent.body.messageId, runId, step: 1 });
    const answer = evs.filter((e) => e.type === 'message.created' && e.data.role === 'assistant').pop()!;
    expect(answer.data.content).toBe('dev: stop that');
    expect(evs[evs.length - 1]).toMatchObject({ type: 'run.completed', runId });
    expect(msBetween(evs[at('tool.called')]!, result)).toBeLessThan(60_000);
  }, 60_000);

  test('a cancel during a host call stops the wait at once and tells the host; the result says its effect is unknown', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key, { tools: ['host_call'] });
    const paired = (await ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'slow machine' })).body;
    // The host: a socket that takes calls and never answers them (a tool that runs on and on).
    const frames: any[] = [];
    const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/v1/hosts/connect`, { headers: { authorization: `Bearer ${paired.credential}` } });
    ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
    try {
      await until(() => frames.some((f) => f.type === 'hello'));
      const args = { hostId: paired.host.id, tool: 'long_job', arguments: {}, timeoutMs: 8000 };
      const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, message: `/tool host_call ${JSON.stringify(args)}` })).body;
      const call = await until(() => frames.find((f) => f.type === 'call'));
      expect(call).toMatchObject({ tool: 'long_job' });
      await ok('POST', `/threads/${th.id}/cancel`, ada.key);
      const evs = await settled(ada.key, th.id);
      expect(evs[evs.length - 1]!.type).toBe('run.cancelled');
      expect(evs.find((e) => e.type === 'tool.result')!.data).toMatchObject({
        name: 'host_call',
        aborted: true,
        result: { error: { code: 'tool_aborted', details: { reason: 'cancel', started: true, effect: 'unknown' } } },
      });
      expect(await until(() => frames.find((f) => f.type === 'abort'))).toEqual({ type: 'abort', id: call.id });
      // Its late answer is dropped; the host goes on serving calls.
      ws.send(JSON.stringify({ type: 'result', id: call.id, result: { content: [] } }));
      const next = t.call('POST', `/hosts/${paired.host.id}/call`, { key: ada.key, body: { tool: 'quick' } });
      const second = await until(() => frames.filter((f) => f.type === 'call')[1]);
      ws.send(JSON.stringify({ type: 'result', id: second.id, result: { structuredContent: { ok: true } } }));
      expect((await next).body.result).toEqual({ structuredContent: { ok: true } });
    } finally {
      ws.close();
    }
  }, 60_000);
});

describe('rollback', () => {
  test('a message with mode rollback cancels the run, discards its progress and starts a new run on the message', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const { threadId, runId, pid } = await slowRun(ada.key, agent.id);
    const aside = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'an aside for that run' });
    const sent = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'instead, hello', mode: 'rollback' });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ status: 'started', rolledBackRunId: runId, runId: expect.stringMatching(/^run_/) });
    const next = sent.body.runId as string;
    expect(next).not.toBe(runId);
    const evs = await settled(ada.key, threadId, 2);
    await until(() => !alive(pid), 10_000, { what: 'the sandbox process to be gone' });
    const rolled = evs.find((e) => e.type === 'run.rolled_back')!;
    const first = evs.find((e) => e.runId === runId)!;
    expect(rolled).toMatchObject({ runId, data: { runId, fromSeq: first.seq, messageIds: expect.arrayContaining([aside.body.messageId]) } });
    expect(evs.find((e) => e.type === 'run.cancelled')).toMatchObject({ runId, data: { reason: 'rollback' } });
    // The new run starts right after the rollback, from the conversation before the rolled-back run.
    const created = evs.find((e) => e.type === 'message.created' && e.runId === next)!;
    expect(created.seq).toBe(rolled.seq + 1);
    expect(created.data).toMatchObject({ content: 'instead, hello', mode: 'rollback', rolledBackRunId: runId });
    const ctx = (await ok('GET', `/threads/${threadId}/runs/${next}/context`, ada.key)).body.messages;
    expect(ctx.map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'instead, hello'],
      ['assistant', 'dev: instead, hello'],
    ]);
    // The aborted call of the rolled-back run is still recorded, once; the aside was never delivered.
    const oldResult = await until(async () => (await events(ada.key, threadId)).find((e) => e.type === 'tool.result' && e.runId === runId));
    expect(oldResult.data).toMatchObject({ aborted: true, abortedBy: 'rollback' });
    expect(evs.some((e) => e.type === 'injection.delivered')).toBe(false);
    const old = (await ok('GET', `/threads/${threadId}/runs/${runId}`, ada.key)).body;
    expect([old.status, old.rolledBackSeq, old.error.code]).toEqual(['cancelled', rolled.seq, 'rolled_back']);
    const messages = (await ok('GET', `/threads/${threadId}/messages`, ada.key)).body.messages;
    expect(messages.map((m: any) => [m.content.slice(0, 12), m.status])).toEqual([
      ['/tool run_co', 'rolled_back'],
      ['', 'rolled_back'],
      ['an aside for', 'rolled_back'],
      ['instead, hel', 'started'],
      ['dev: instead', ''],
    ]);
    const exported = (await ok('GET', `/threads/${threadId}/export?format=json`, ada.key)).body;
    expect(JSON.parse(exported.content).messages.map((m: any) => m.content)).toEqual(['instead, hello', 'dev: instead, hello']);
    // The runs after it go on from the new run's conversation.
    await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'again' });
    const all = await settled(ada.key, threadId, 3);
    const third = all[all.length - 1]!.runId!;
    const ctx3 = (await ok('GET', `/threads/${threadId}/runs/${third}/context`, ada.key)).body.messages;
    expect(ctx3.map((m: any) => m.content)).toEqual(['instead, hello', 'dev: instead, hello', 'again', 'dev: again']);
    // A message to an idle thread with mode rollback just starts a run (nothing to roll back).
    const idle = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'idle now', mode: 'rollback' });
    expect([idle.body.status, idle.body.rolledBackRunId]).toEqual(['started', null]);
    await settled(ada.key, threadId, 4);
  }, 60_000);

  test('a message queued for after the rolled-back run stays queued and runs after the new one', async () => {
    const ada = await person();
    const agent = await agentOf(ada.key);
    const { threadId, runId } = await slowRun(ada.key, agent.id);
    const later = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'later', mode: 'enqueue' });
    expect(later.body.status).toBe('queued');
    const now = await ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'now', mode: 'rollback' });
    expect(now.body.rolledBackRunId).toBe(runId);
    const evs = await settled(ada.key, threadId, 3);
    const completed = evs.filter((e) => e.type === 'run.completed').map((e) => e.runId);
    expect(completed).toHaveLength(2);
    expect(completed[0]).toBe(now.body.runId);
    const ctx = (await ok('GET', `/threads/${threadId}/runs/${completed[1]}/context`, ada.key)).body.messages;
    expect(ctx.map((m: any) => m.content)).toEqual(['now', 'dev: now', 'later', 'dev: later']);
    const msg = (await ok('GET', `/threads/${threadId}/messages/${later.body.messageId}`, ada.key)).body;
    expect([msg.status, msg.runId]).toEqual(['started', completed[1]]);
  }, 60_000);

  test('the MCP tool send_message offers the rollback mode', () => {
    const tool = ToolCatalogue.fromRoutes(routes).get('send_message')!;
    expect((tool.inputSchema as any).properties.mode.enum).toEqual(['boundary', 'interrupt', 'enqueue', 'reject', 'rollback']);
  });

  test('another account cannot roll back a thread it does not see; a bad mode is a 400', async () => {
    const ada = await person();
    const bob = await person();
    const agent = await agentOf(ada.key);
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const theirs = await t.call('POST', `/threads/${th.id}/inject`, { key: bob.key, body: { content: 'x', mode: 'rollback' } });
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'thread_not_found']);
    const bad = await t.call('POST', `/threads/${th.id}/inject`, { key: ada.key, body: { content: 'x', mode: 'undo' } });
    expect(bad.status).toBe(400);
    expect((await ok('GET', `/threads/${th.id}/events`, ada.key)).body.events.map((e: any) => e.type)).toEqual(['thread.created']);
  });
});
