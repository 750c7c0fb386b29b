import { routes } from '@svc/api';
import { ToolCatalogue } from '@svc/tools';

import { startTestStack, type TestStack } from '../support/stack';
import * as th from '../support/threads';
import { WRITE } from '../support/threads';
import { until } from '../support/wait';

// Approvals and questions to a person (docs/threads.md, "Approvals", "Questions to a person"),
// from outside through the HTTP API with the development model: a run pauses before a tool its
// policy names, a person approves (with edited arguments) or rejects it, the run resumes; an agent
// key and another account cannot decide; an unanswered request expires as rejected; the agent's
// ask_person question is answered by the next message.

let t: TestStack;
let quick: TestStack;
beforeAll(async () => {
  t = await startTestStack();
  // Requests that expire after a second (the runtime's sweep expires them within about 5 s more).
  quick = await startTestStack({ SVC_RUN_APPROVAL_TTL_SECONDS: '1' });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await quick?.stop();
});

const person = (s: TestStack = t) => th.person(s);
const eventually = (key: string, id: string, type: string, s: TestStack = t, count = 1) => th.eventually(s, key, id, type, count);
const settled = (key: string, id: string, s: TestStack = t, runs = 1) => th.settled(s, key, id, runs);
const paused = (key: string, message: string, s: TestStack = t) => th.paused(s, key, message);
const driveFile = (key: string, name: string, s: TestStack = t) => th.driveFile(s, key, name);

describe('approval before a tool', () => {
  test('the run pauses; a person approves with edited arguments; the run resumes and the tool runs with them, once', async () => {
    const ada = await person();
    const { threadId, runId, approvalId, evs } = await paused(ada.key, WRITE('plan.txt', 'from the model'));
    const requested = evs.find((e) => e.type === 'approval.requested')!;
    expect(requested.data).toMatchObject({ runId, tool: 'write_drive_file', step: 1, arguments: { name: 'plan.txt', content: 'from the model' } });
    expect(requested.producer).toMatchObject({ kind: 'agent' });
    // Nothing ran: no tool result, no file, and the request is listed (the thread's and the account's).
    expect(evs.some((e) => e.type === 'tool.result')).toBe(false);
    expect(await driveFile(ada.key, 'plan.txt')).toBeNull();
    const pending = (await t.ok('GET', `/threads/${threadId}/approvals?status=pending`, ada.key)).body.approvals;
    expect(pending.map((a: any) => [a.id, a.kind, a.status, a.tool])).toEqual([[approvalId, 'approval', 'pending', 'write_drive_file']]);
    const mine = (await t.ok('GET', '/me/approvals?status=pending', ada.key)).body.approvals;
    expect(mine.map((a: any) => a.id)).toEqual([approvalId]);
    expect((await t.ok('GET', `/threads/${threadId}`, ada.key)).body.status).toBe('running');

    const approved = await t.ok('POST', `/threads/${threadId}/approvals/${approvalId}/approve`, ada.key, {
      arguments: { name: 'plan.txt', content: 'as the person wrote it' },
    });
    expect(approved.body).toMatchObject({ status: 'approved', editedArguments: { content: 'as the person wrote it' }, decidedBy: { kind: 'human' } });
    const done = await settled(ada.key, threadId);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    expect(await driveFile(ada.key, 'plan.txt')).toBe('as the person wrote it');
    const decision = done.find((e) => e.type === 'approval.approved')!;
    expect(decision.producer).toMatchObject({ kind: 'human' });
    expect(decision.producer.keyId).toMatch(/^key_/);
    expect(decision.data).toMatchObject({ approvalId, edited: true, arguments: { content: 'as the person wrote it' } });
    // In order: the call, the request, the decision, the run taken up again, the result.
    const order = done
      .map((e) => e.type)
      .filter((x) => ['tool.called', 'approval.requested', 'approval.approved', 'run.resumed', 'tool.result'].includes(x));
    expect(order).toEqual(['tool.called', 'approval.requested', 'approval.approved', 'run.resumed', 'tool.result']);
    const calls = (await t.ok('GET', `/threads/${threadId}/runs/${runId}/tool-calls`, ada.key)).body.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'write_drive_file', isError: false, arguments: { content: 'as the person wrote it' } });
    // Decided once: a second decision is a conflict.
    const again = await t.call('POST', `/threads/${threadId}/approvals/${approvalId}/reject`, { key: ada.key, body: {} });
    expect([again.status, again.body.error.code]).toEqual([409, 'approval_not_pending']);
    // Audited in the account's trail.
    const audit = await until(async () => {
      const r = await t.ok('GET', `/accounts/${ada.id}/audit?action=approval.approved`, ada.key);
      return r.body.events.length > 0 && r.body.events;
    });
    expect(audit[0]).toMatchObject({
      action: 'approval.approved',
      actor: { kind: 'human' },
      data: { approvalId, tool: 'write_drive_file', edited: true, name: expect.stringMatching(/^agent \d+$/) },
    });
  }, 60_000);

  test('a rejection reaches the model with its reason; the tool never runs', async () => {
    const ada = await person();
    const { threadId, approvalId } = await paused(ada.key, WRITE('secret.txt', 'x'));
    const r = await t.ok('POST', `/threads/${threadId}/approvals/${approvalId}/reject`, ada.key, { reason: 'not in that folder' });
    expect(r.body).toMatchObject({ status: 'rejected', reason: 'not in that folder' });
    const done = await settled(ada.key, threadId);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    const result = done.find((e) => e.type === 'tool.result')!;
    expect(result.data).toMatchObject({
      isError: true,
      result: { error: { code: 'tool_rejected', details: { approvalId, reason: 'not in that folder' } } },
    });
    // The development model summarises the tool results it saw: the reason is among them.
    const reply = done.filter((e) => e.type === 'message.created').pop()!.data.content as string;
    expect(reply).toContain('not in that folder');
    expect(await driveFile(ada.key, 'secret.txt')).toBeNull();
    expect((await t.ok('GET', `/threads/${threadId}`, ada.key)).body.status).toBe('idle');
  }, 60_000);

  test('an agent key cannot approve (403), not even its own request; another account sees nothing (404)', async () => {
    const ada = await person();
    const bob = await person();
    const { agentId, threadId, approvalId } = await paused(ada.key, WRITE('guarded.txt', 'x'));
    const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, ada.key, { name: 'self' })).body.key as string;
    for (const verb of ['approve', 'reject']) {
      const res = await t.call('POST', `/threads/${threadId}/approvals/${approvalId}/${verb}`, { key: agentKey, body: {} });
      expect([res.status, res.body.error.code]).toEqual([403, 'human_principal_required']);
    }
    // Nor may it loosen its own policy, or the thread's.
    const loosen = await t.call('PUT', `/agents/${agentId}/approval-policy`, { key: agentKey, body: { tools: [] } });
    expect([loosen.status, loosen.body.error.code]).toEqual([403, 'human_principal_required']);
    const override = await t.call('PUT', `/threads/${threadId}/approval-policy`, { key: agentKey, body: { tools: [] } });
    expect([override.status, override.body.error.code]).toEqual([403, 'human_principal_required']);
    // It may read what waits (it is its own thread).
    expect((await t.ok('GET', `/threads/${threadId}/approvals`, agentKey)).body.approvals).toHaveLength(1);
    // Another account: not found, everywhere.
    for (const [method, path] of [
      ['GET', `/threads/${threadId}/approvals`],
      ['GET', `/threads/${threadId}/approvals/${approvalId}`],
      ['POST', `/threads/${threadId}/approvals/${approvalId}/approve`],
      ['POST', `/threads/${threadId}/approvals/${approvalId}/reject`],
      ['GET', `/threads/${threadId}/approval-policy`],
      ['GET', `/agents/${agentId}/approval-policy`],
    ] as const) {
      const res = await t.call(method, path, { key: bob.key, ...(method === 'POST' ? { body: {} } : {}) });
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    expect((await t.ok('GET', '/me/approvals', bob.key)).body.approvals).toEqual([]);
    // Still pending: none of it decided anything.
    expect((await t.ok('GET', `/threads/${threadId}/approvals/${approvalId}`, ada.key)).body.status).toBe('pending');
  }, 60_000);

  test('the MCP channel cannot decide: approve and reject are no tools; listing is', () => {
    const catalogue = ToolCatalogue.fromRoutes(routes);
    expect(catalogue.get('threads_approvals_approve')).toBeUndefined();
    expect(catalogue.get('threads_approvals_reject')).toBeUndefined();
    expect(catalogue.get('agents_approval_policy_set')).toBeUndefined();
    expect(catalogue.get('threads_approval_policy_set')).toBeUndefined();
    expect(catalogue.get('threads_approvals_list')).toBeDefined();
    expect(catalogue.get('approvals_list')).toBeDefined();
  });

  test('a thread’s own list replaces its agent’s: with none, the same call runs at once', async () => {
    const ada = await person();
    const agent = (await t.ok('POST', '/agents', ada.key, { name: 'overridden' })).body;
    await t.ok('PUT', `/agents/${agent.id}/approval-policy`, ada.key, { tools: ['write_drive_file'] });
    const thread = (await t.ok('POST', '/threads', ada.key, { agentId: agent.id })).body;
    const set = await t.ok('PUT', `/threads/${thread.id}/approval-policy`, ada.key, { tools: [] });
    expect(set.body).toEqual({ threadId: thread.id, tools: [], threadTools: [], agentTools: ['write_drive_file'] });
    await t.ok('POST', `/threads/${thread.id}/inject`, ada.key, { content: WRITE('free.txt', 'ok') });
    const done = await settled(ada.key, thread.id);
    expect(done.some((e) => e.type === 'approval.requested')).toBe(false);
    expect(done.find((e) => e.type === 'approval_policy.updated')!.producer).toMatchObject({ kind: 'human' });
    expect(await driveFile(ada.key, 'free.txt')).toBe('ok');
    const cleared = await t.ok('PUT', `/threads/${thread.id}/approval-policy`, ada.key, { tools: null });
    expect(cleared.body).toMatchObject({ tools: ['write_drive_file'], threadTools: null });
    // Each change is audited with the thread's agent, named (the agent's own list's entry as well).
    const audit = await until(async () => {
      const r = await t.ok('GET', `/accounts/${ada.id}/audit?action=approval_policy.updated`, ada.key);
      return r.body.events.length >= 3 && r.body.events;
    });
    const byThread = audit.filter((e: any) => e.data.threadId === thread.id).map((e: any) => e.data);
    expect(byThread).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ agentId: agent.id, name: 'overridden', tools: [] }),
        expect.objectContaining({ agentId: agent.id, name: 'overridden', tools: null }),
      ]),
    );
    expect(audit.find((e: any) => e.data.threadId === null).data).toMatchObject({ agentId: agent.id, name: 'overridden' });
  }, 60_000);

  test('a cancel of a run waiting for approval ends it; the call is never run and the request is closed', async () => {
    const ada = await person();
    const { threadId, approvalId } = await paused(ada.key, WRITE('never.txt', 'x'));
    const c = await t.ok('POST', `/threads/${threadId}/cancel`, ada.key);
    expect(c.body.status).toBe('cancelling');
    const done = await settled(ada.key, threadId);
    expect(done[done.length - 1]!.type).toBe('run.cancelled');
    expect(done.find((e) => e.type === 'approval.cancelled')!.data.approvalId).toBe(approvalId);
    expect(done.find((e) => e.type === 'tool.result')!.data).toMatchObject({ aborted: true, result: { error: { code: 'tool_aborted' } } });
    expect((await t.ok('GET', `/threads/${threadId}/approvals/${approvalId}`, ada.key)).body.status).toBe('cancelled');
    expect(await driveFile(ada.key, 'never.txt')).toBeNull();
    expect((await t.ok('GET', `/threads/${threadId}`, ada.key)).body.status).toBe('idle');
  }, 60_000);

  test('an interrupting message withdraws the pending approval at once: the call is not run, the message is delivered', async () => {
    const ada = await person();
    const { threadId, runId, approvalId } = await paused(ada.key, WRITE('held.txt', 'x'));
    // No decision comes (the request would wait a day): the interrupt alone moves the run on.
    const sent = await t.ok('POST', `/threads/${threadId}/inject`, ada.key, { content: 'stop, write nothing', mode: 'interrupt' });
    expect(sent.body).toMatchObject({ status: 'pending', runId });
    const done = await settled(ada.key, threadId);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    const withdrawn = done.find((e) => e.type === 'approval.cancelled')!;
    expect(withdrawn.producer).toMatchObject({ kind: 'human' });
    expect(withdrawn.data).toMatchObject({ approvalId, reason: expect.stringContaining('interrupted') });
    // The call is recorded as never begun, stopped by the interrupt; then the message enters the context.
    expect(done.find((e) => e.type === 'tool.result')!.data).toMatchObject({
      aborted: true,
      abortedBy: 'interrupt',
      result: { error: { code: 'tool_aborted', details: { reason: 'interrupt', started: false } } },
    });
    const order = done
      .map((e) => e.type)
      .filter((x) =>
        ['approval.requested', 'message.injected', 'approval.cancelled', 'run.resumed', 'tool.result', 'injection.delivered'].includes(x),
      );
    expect(order).toEqual(['approval.requested', 'message.injected', 'approval.cancelled', 'run.resumed', 'tool.result', 'injection.delivered']);
    expect(done.find((e) => e.type === 'injection.delivered')!.data.messageId).toBe(sent.body.messageId);
    expect(done.filter((e) => e.type === 'message.created').pop()!.data.content).toContain('stop, write nothing');
    const request = (await t.ok('GET', `/threads/${threadId}/approvals/${approvalId}`, ada.key)).body;
    expect(request).toMatchObject({ status: 'cancelled', reason: withdrawn.data.reason, decidedBy: { kind: 'human' } });
    expect(await driveFile(ada.key, 'held.txt')).toBeNull();
    const late = await t.call('POST', `/threads/${threadId}/approvals/${approvalId}/approve`, { key: ada.key, body: {} });
    expect([late.status, late.body.error.code]).toEqual([409, 'approval_not_pending']);
  }, 60_000);

  test('an unanswered request expires (setting) and counts as rejected', async () => {
    const ada = await person(quick);
    const { threadId, approvalId } = await paused(ada.key, WRITE('late.txt', 'x'), quick);
    const done = await settled(ada.key, threadId, quick);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    expect(done.find((e) => e.type === 'approval.expired')!.producer).toMatchObject({ kind: 'system' });
    expect(done.find((e) => e.type === 'tool.result')!.data.result.error.code).toBe('approval_expired');
    expect(await driveFile(ada.key, 'late.txt', quick)).toBeNull();
    const late = await quick.call('POST', `/threads/${threadId}/approvals/${approvalId}/approve`, { key: ada.key, body: {} });
    expect([late.status, late.body.error.code]).toEqual([409, 'approval_not_pending']);
  }, 60_000);
});

describe('questions to a person (ask_person)', () => {
  test('the run pauses on the agent’s question; the next message answers it and the run goes on with the answer', async () => {
    const ada = await person();
    const agent = (await t.ok('POST', '/agents', ada.key, { name: 'curious' })).body;
    const created = (await t.ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool ask_person {"question":"Which file?"}' })).body;
    const evs = await eventually(ada.key, created.id, 'question.asked');
    const asked = evs.find((e) => e.type === 'question.asked')!;
    expect(asked.data).toMatchObject({ runId: created.runId, tool: 'ask_person', question: 'Which file?' });
    const pending = (await t.ok('GET', `/threads/${created.id}/approvals?status=pending`, ada.key)).body.approvals;
    expect(pending.map((a: any) => [a.kind, a.arguments])).toEqual([['question', { question: 'Which file?' }]]);
    // A question is answered by a message, not approved.
    const approve = await t.call('POST', `/threads/${created.id}/approvals/${asked.data.approvalId}/approve`, { key: ada.key, body: {} });
    expect([approve.status, approve.body.error.code]).toEqual([404, 'approval_not_found']);
    const sent = await t.ok('POST', `/threads/${created.id}/inject`, ada.key, { content: 'the plan, please' });
    expect(sent.body).toMatchObject({ status: 'answered', runId: created.runId });
    const done = await settled(ada.key, created.id);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    expect(done.filter((e) => e.type === 'run.completed')).toHaveLength(1);
    const answered = done.find((e) => e.type === 'question.answered')!;
    expect(answered.data).toMatchObject({ answer: 'the plan, please', messageId: sent.body.messageId });
    expect(answered.producer).toMatchObject({ kind: 'human' });
    expect(done.find((e) => e.type === 'tool.result')!.data).toMatchObject({
      name: 'ask_person',
      isError: false,
      result: { answer: 'the plan, please' },
    });
    // The model saw the answer as the call's result.
    expect(done.filter((e) => e.type === 'message.created').pop()!.data.content).toContain('the plan, please');
    const msg = (await t.ok('GET', `/threads/${created.id}/messages/${sent.body.messageId}`, ada.key)).body;
    expect(msg.status).toBe('delivered');
  }, 60_000);

  test('an interrupting message to a run waiting on its question is the answer, at once', async () => {
    const ada = await person();
    const agent = (await t.ok('POST', '/agents', ada.key, { name: 'asks, interrupted' })).body;
    const created = (await t.ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool ask_person {"question":"Which one?"}' })).body;
    await eventually(ada.key, created.id, 'question.asked');
    const sent = await t.ok('POST', `/threads/${created.id}/inject`, ada.key, { content: 'the blue one', mode: 'interrupt' });
    expect(sent.body).toMatchObject({ status: 'answered', runId: created.runId });
    const done = await settled(ada.key, created.id);
    expect(done[done.length - 1]!.type).toBe('run.completed');
    expect(done.find((e) => e.type === 'tool.result')!.data).toMatchObject({ isError: false, result: { answer: 'the blue one' } });
  }, 60_000);

  test('threads.ask answers the question and waits for the reply', async () => {
    const ada = await person();
    const agent = (await t.ok('POST', '/agents', ada.key, { name: 'asks back' })).body;
    const created = (await t.ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool ask_person {"question":"Yes or no?"}' })).body;
    await eventually(ada.key, created.id, 'question.asked');
    const asked = await t.ok('POST', `/threads/${created.id}/ask`, ada.key, { content: 'yes', timeoutMs: 20_000 });
    expect(asked.body).toMatchObject({ status: 'answered', timedOut: false });
    expect(asked.body.reply.content).toContain('yes');
  }, 60_000);

  test('an unanswered question expires; the model is told nobody answered', async () => {
    const ada = await person(quick);
    const agent = (await quick.ok('POST', '/agents', ada.key, { name: 'waits' })).body;
    const created = (await quick.ok('POST', '/threads', ada.key, { agentId: agent.id, message: '/tool ask_person {"question":"Anyone?"}' })).body;
    const done = await settled(ada.key, created.id, quick);
    expect(done.map((e) => e.type)).toEqual(expect.arrayContaining(['question.asked', 'question.expired', 'run.completed']));
    expect(done.find((e) => e.type === 'tool.result')!.data.result.error.code).toBe('question_expired');
  }, 60_000);
});
