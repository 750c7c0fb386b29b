import { routes } from '@svc/api';
import { ToolCatalogue } from '@svc/tools';

import { startTestStack, type TestStack } from '../support/stack';
import { events, person, settled } from '../support/threads';

// Editing one of the person's earlier messages (docs/threads.md, "Editing an earlier message"),
// from outside through the HTTP API with the development model: a new thread holding the
// conversation just before the message, then the edited text, on which a run starts and finishes;
// the thread edited from is never changed. Only the person's own message, only a person's key,
// another account's thread is 404; an Idempotency-Key makes one fork of two requests.

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 120_000);
afterAll(() => t?.stop());

/** A thread of two exchanges: "plan a trip to Lisbon", then "make it Porto". */
async function conversation(key: string) {
  const agent = (await t.ok('POST', '/agents', key, { name: 'travel' })).body as { id: string };
  const created = (await t.ok('POST', '/threads', key, { agentId: agent.id, title: 'Trip', message: 'plan a trip to Lisbon' })).body;
  await settled(t, key, created.id);
  await t.ok('POST', `/threads/${created.id}/inject`, key, { content: 'make it Porto' });
  await settled(t, key, created.id, 2);
  const messages = (await t.ok('GET', `/threads/${created.id}/messages`, key)).body.messages as any[];
  return { agentId: agent.id, threadId: created.id as string, messages };
}

/** Everything a reader sees of a thread: the thread, its events, its messages. */
async function snapshot(key: string, threadId: string) {
  const [thread, evs, messages] = await Promise.all([
    t.ok('GET', `/threads/${threadId}`, key),
    events(t, key, threadId),
    t.ok('GET', `/threads/${threadId}/messages`, key),
  ]);
  return { thread: thread.body, events: evs, messages: messages.body };
}

const edit = (key: string, threadId: string, messageId: string, body: unknown, headers?: Record<string, string>) =>
  t.call('POST', `/threads/${threadId}/messages/${messageId}/edit`, { key, body, headers });

describe('editing an earlier message', () => {
  test('forks just before it and runs on the new text; the thread edited from is not changed', async () => {
    const ada = await person(t);
    const { agentId, threadId, messages } = await conversation(ada.key);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'plan a trip to Lisbon'],
      ['assistant', 'dev: plan a trip to Lisbon'],
      ['user', 'make it Porto'],
      ['assistant', 'dev: make it Porto'],
    ]);
    const before = await snapshot(ada.key, threadId);
    const porto = messages[2];

    const res = await edit(ada.key, threadId, porto.id, { content: 'make it Madrid' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      thread: { agentId, title: 'Trip (fork)', forkedFrom: { threadId, seq: porto.seq - 1 } },
      runId: expect.stringMatching(/^run_/),
      messageId: expect.stringMatching(/^msg_/),
      replacedMessageId: porto.id,
    });
    const fork = res.body.thread.id as string;
    const done = await settled(t, ada.key, fork);
    expect(done[done.length - 1]).toMatchObject({ type: 'run.completed', runId: res.body.runId });
    // The fork: the conversation before the message, the edited message, the agent's answer to it.
    const forkMessages = (await t.ok('GET', `/threads/${fork}/messages`, ada.key)).body.messages;
    expect(forkMessages.map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'plan a trip to Lisbon'],
      ['assistant', 'dev: plan a trip to Lisbon'],
      ['user', 'make it Madrid'],
      ['assistant', 'dev: make it Madrid'],
    ]);
    // Its events name the origin and the message replaced.
    expect(done[0]).toMatchObject({ type: 'thread.created', data: { forkedFrom: { threadId, seq: porto.seq - 1, editedMessageId: porto.id } } });
    const editedEvent = done.find((e) => e.data.messageId === res.body.messageId)!;
    expect(editedEvent).toMatchObject({
      type: 'message.created',
      runId: res.body.runId,
      producer: { kind: 'human' },
      data: { role: 'user', content: 'make it Madrid', editedFrom: { threadId, messageId: porto.id, seq: porto.seq } },
    });
    // The run saw the earlier exchange and the new text, never the old one.
    const context = (await t.ok('GET', `/threads/${fork}/runs/${res.body.runId}/context`, ada.key)).body.messages;
    expect(context.filter((m: any) => m.role === 'user').map((m: any) => m.content)).toEqual(['plan a trip to Lisbon', 'make it Madrid']);
    // The thread edited from: its events, messages and state as they were.
    expect(await snapshot(ada.key, threadId)).toEqual(before);

    // The first message: the fork holds nothing before it.
    const fromStart = await edit(ada.key, threadId, messages[0].id, { content: 'plan a trip to Rome', title: 'Rome' });
    expect(fromStart.body.thread).toMatchObject({ title: 'Rome', forkedFrom: { threadId, seq: messages[0].seq - 1 } });
    await settled(t, ada.key, fromStart.body.thread.id);
    const rome = (await t.ok('GET', `/threads/${fromStart.body.thread.id}/messages`, ada.key)).body.messages;
    expect(rome.map((m: any) => m.content)).toEqual(['plan a trip to Rome', 'dev: plan a trip to Rome']);
    expect(await snapshot(ada.key, threadId)).toEqual(before);
  }, 60_000);

  test('only the person’s own message; an agent key is refused; another account sees nothing; bad input is 4xx', async () => {
    const ada = await person(t);
    const bob = await person(t);
    const { agentId, threadId, messages } = await conversation(ada.key);
    const before = await snapshot(ada.key, threadId);
    const threadsBefore = (await t.ok('GET', '/me/threads?limit=200', ada.key)).body.threads.length;
    const code = async (r: Promise<{ status: number; body: any }>) => {
      const res = await r;
      return [res.status, res.body?.error?.code];
    };
    // The agent's answer is not the person's to edit.
    const answer = await edit(ada.key, threadId, messages[1].id, { content: 'x' });
    expect([answer.status, answer.body.error.code, answer.body.error.details]).toEqual([
      422,
      'message_not_editable',
      { role: 'assistant', producer: 'agent' },
    ]);
    // A message the agent sent through its key is not either.
    const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, ada.key, { name: 'self' })).body.key as string;
    await t.ok('POST', `/threads/${threadId}/inject`, agentKey, { content: 'from the agent key' });
    const byAgent = (await settled(t, ada.key, threadId, 3)).find((e) => e.data.content === 'from the agent key')!;
    expect(await code(edit(ada.key, threadId, byAgent.data.messageId, { content: 'x' }))).toEqual([422, 'message_not_editable']);
    // An agent key may not edit, not even the person's message on its own thread.
    expect(await code(edit(agentKey, threadId, messages[0].id, { content: 'x' }))).toEqual([403, 'human_principal_required']);
    // Another account: not found, whatever the message.
    expect(await code(edit(bob.key, threadId, messages[0].id, { content: 'x' }))).toEqual([404, 'thread_not_found']);
    const bobs = (await t.ok('POST', '/threads', bob.key, { agentId: (await t.ok('POST', '/agents', bob.key, { name: 'b' })).body.id })).body;
    expect(await code(edit(bob.key, bobs.id, messages[0].id, { content: 'x' }))).toEqual([404, 'message_not_found']);
    // Input.
    const m = messages[0].id;
    expect(await code(edit(ada.key, threadId, m, { content: '' }))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, m, { content: '   ' }))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, m, {}))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, m, { content: 'x', atSeq: 2 }))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, m, { content: 'x', title: 'y'.repeat(201) }))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, m, { content: 'x'.repeat(32_001) }))).toEqual([413, 'message_too_large']);
    expect(await code(edit(ada.key, threadId, 'msg_nope', { content: 'x' }))).toEqual([400, 'invalid_request']);
    expect(await code(edit(ada.key, threadId, `msg_${'0'.repeat(26)}`, { content: 'x' }))).toEqual([404, 'message_not_found']);
    // None of it made a thread or changed this one (but for the agent key's message and its run).
    expect((await t.ok('GET', '/me/threads?limit=200', ada.key)).body.threads.length).toBe(threadsBefore);
    const after = await snapshot(ada.key, threadId);
    expect(after.events.slice(0, before.events.length)).toEqual(before.events);
  }, 60_000);

  test('the MCP channel cannot edit: it is no tool (a person’s own decision, as approving is)', () => {
    const catalogue = ToolCatalogue.fromRoutes(routes);
    expect(catalogue.get('threads_messages_edit')).toBeUndefined();
    expect(catalogue.get('threads_fork')).toBeDefined();
  });

  test('an Idempotency-Key answers the same fork to the same request, made once', async () => {
    const ada = await person(t);
    const { threadId, messages } = await conversation(ada.key);
    const headers = { 'Idempotency-Key': `edit-${threadId}` };
    const first = await edit(ada.key, threadId, messages[2].id, { content: 'make it Faro' }, headers);
    const again = await edit(ada.key, threadId, messages[2].id, { content: 'make it Faro' }, headers);
    expect(first.status).toBe(201);
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([201, first.body, 'true']);
    const other = await edit(ada.key, threadId, messages[2].id, { content: 'make it Braga' }, headers);
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    const forks = (await t.ok('GET', '/me/threads?limit=200', ada.key)).body.threads.filter((x: any) => x.forkedFrom?.threadId === threadId);
    expect(forks.map((x: any) => x.id)).toEqual([first.body.thread.id]);
    await settled(t, ada.key, first.body.thread.id);
  }, 60_000);
});
