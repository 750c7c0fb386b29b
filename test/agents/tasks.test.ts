import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/** Tasks (docs/memory.md): lists, tasks, order, blockers, assignment, comments, activity, isolation. */

let t: TestStack;
let key: string;
let other: string;
let agentId: string;
const events: Array<{ subject: string; data: any }> = [];
beforeAll(async () => {
  t = await startTestStack();
  const bus = await t.stack.backends.bus();
  await bus.subscribe(
    'agents.task.>',
    async (event, meta) => void events.push({ subject: meta.subject.slice(meta.subject.indexOf('agents.')), data: event.data }),
  );
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Tess' })).body.key;
  other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Oto' })).body.key;
  agentId = (await t.ok('POST', '/agents', key, { name: 'helper' })).body.id;
}, 60_000);
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, k = key) => t.call(method, p, { key: k, body });
const list = async (name = 'home') => (await t.ok('POST', '/task-lists', key, { name })).body as { id: string };
const task = async (listId: string, body: Record<string, unknown> = {}) =>
  (await t.ok('POST', '/tasks', key, { listId, title: 'a task', ...body })).body as { id: string; position: number };

test('lists: create, get with counts, rename, list, delete with their tasks', async () => {
  const created = await call('POST', '/task-lists', { name: 'Groceries', description: 'weekly' });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ name: 'Groceries', description: 'weekly', openTasks: 0, doneTasks: 0 });
  const id = created.body.id;
  const a = await task(id);
  await task(id);
  await call('POST', `/tasks/${a.id}/complete`);
  expect((await call('GET', `/task-lists/${id}`)).body).toMatchObject({ openTasks: 1, doneTasks: 1 });
  const renamed = await call('PATCH', `/task-lists/${id}`, { name: 'Food', description: null });
  expect(renamed.body).toMatchObject({ name: 'Food', description: null });
  expect((await call('PATCH', `/task-lists/${id}`, {})).status).toBe(400);
  expect((await call('GET', '/task-lists')).body.lists.map((l: any) => l.id)).toContain(id);
  expect((await call('POST', `/task-lists/${id}/clear-completed`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `/task-lists/${id}`)).body).toEqual({ deleted: 1 });
  expect((await call('GET', `/task-lists/${id}`)).status).toBe(404);
  expect((await call('GET', `/tasks/${a.id}`)).status).toBe(404);
});

test('tasks: fields, validation, update, filters, and another account sees nothing', async () => {
  const l = await list();
  const bad = await call('POST', '/tasks', { listId: l.id, title: 'x', priority: 'someday' });
  expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_request']);
  expect((await call('POST', '/tasks', { listId: l.id, title: 'x', labels: ['Bad Label'] })).status).toBe(400);
  const t1 = await call('POST', '/tasks', {
    listId: l.id,
    title: 'file taxes',
    priority: 'urgent',
    dueAt: '2030-04-15T12:00:00Z',
    labels: ['money', 'money'],
    assigneeAgentId: agentId,
  });
  expect(t1.status).toBe(201);
  expect(t1.body).toMatchObject({
    status: 'open',
    priority: 'urgent',
    dueAt: '2030-04-15T12:00:00.000Z',
    labels: ['money'],
    assigneeAgentId: agentId,
  });
  const up = await call('PATCH', `/tasks/${t1.body.id}`, { notes: 'receipts in the drive', dueAt: null, labels: ['money', 'home'] });
  expect(up.body).toMatchObject({ notes: 'receipts in the drive', dueAt: null, labels: ['money', 'home'] });
  await task(l.id, { title: 'water plants', labels: ['home'] });
  const byLabel = await call('GET', `/tasks?listId=${l.id}&label=money`);
  expect(byLabel.body.tasks.map((x: any) => x.title)).toEqual(['file taxes']);
  expect((await call('GET', `/tasks?listId=${l.id}&q=PLANTS`)).body.tasks.map((x: any) => x.title)).toEqual(['water plants']);
  expect((await call('GET', `/tasks?assigneeAgentId=${agentId}`)).body.tasks.map((x: any) => x.id)).toEqual([t1.body.id]);
  const p1 = await call('GET', `/tasks?listId=${l.id}&limit=1`);
  const p2 = await call('GET', `/tasks?listId=${l.id}&limit=1&cursor=${p1.body.nextCursor}`);
  expect([p1.body.tasks[0].title, p2.body.tasks[0].title, p2.body.nextCursor]).toEqual(['file taxes', 'water plants', null]);
  // Another account: 404 everywhere, its own lists and task list empty of ours.
  expect((await call('GET', `/tasks/${t1.body.id}`, undefined, other)).status).toBe(404);
  expect((await call('GET', `/task-lists/${l.id}`, undefined, other)).body.error.code).toBe('task_list_not_found');
  expect((await call('POST', '/tasks', { listId: l.id, title: 'mine now' }, other)).status).toBe(404);
  expect((await call('POST', `/tasks/${t1.body.id}/complete`, undefined, other)).status).toBe(404);
  // Another account's real task and a made-up id answer alike: no existence oracle.
  const foreign = await call('DELETE', `/tasks/${t1.body.id}`, undefined, other);
  const madeUp = await call('DELETE', `/tasks/tsk_${'0'.repeat(26)}`, undefined, other);
  expect([foreign.status, foreign.body.error.code, Object.keys(foreign.body.error).sort()]).toEqual([
    404,
    'task_not_found',
    ['code', 'message', 'requestId'],
  ]);
  expect([madeUp.status, madeUp.body.error.code, madeUp.body.error.message]).toEqual([404, 'task_not_found', foreign.body.error.message]);
  expect((await call('GET', '/tasks', undefined, other)).body.tasks).toEqual([]);
  const otherAgent = (await t.ok('POST', '/agents', other, { name: 'theirs' })).body.id;
  expect((await call('PUT', `/tasks/${t1.body.id}/assignee`, { agentId: otherAgent })).body.error.code).toBe('agent_not_found');
  expect((await call('PUT', `/tasks/${t1.body.id}/assignee`, { agentId: null })).body.assigneeAgentId).toBeNull();
  expect((await call('DELETE', `/tasks/${t1.body.id}`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `/tasks/${t1.body.id}`)).body.error.code).toBe('task_not_found');
});

test('blockers: completing waits for them, cycles are refused, next picks a ready task', async () => {
  const l = await list();
  const shop = await task(l.id, { title: 'shop' });
  const cook = await task(l.id, { title: 'cook', priority: 'high' });
  const eat = await task(l.id, { title: 'eat', priority: 'urgent' });
  await t.ok('PUT', `/tasks/${cook.id}/blockers/${shop.id}`, key);
  const waits = await call('PUT', `/tasks/${eat.id}/blockers/${cook.id}`);
  expect(waits.body.blockedBy).toEqual([cook.id]);
  expect((await call('PUT', `/tasks/${shop.id}/blockers/${eat.id}`)).body.error.code).toBe('dependency_cycle');
  expect((await call('PUT', `/tasks/${shop.id}/blockers/${shop.id}`)).status).toBe(400);
  const blocked = await call('POST', `/tasks/${cook.id}/complete`);
  expect([blocked.status, blocked.body.error.code]).toEqual([409, 'task_blocked']);
  // Only shop is ready, though eat and cook rank higher.
  expect((await call('GET', `/task-lists/${l.id}/next`)).body.task.id).toBe(shop.id);
  expect((await call('POST', `/tasks/${shop.id}/complete`)).body.status).toBe('done');
  expect((await call('GET', `/task-lists/${l.id}/next`)).body.task.id).toBe(cook.id);
  expect((await call('POST', `/tasks/${cook.id}/complete`)).body.completedAt).not.toBeNull();
  expect((await call('GET', `/task-lists/${l.id}/next`)).body.task.id).toBe(eat.id);
  expect((await call('POST', `/tasks/${cook.id}/reopen`)).body).toMatchObject({ status: 'open', completedAt: null });
  expect((await call('DELETE', `/tasks/${eat.id}/blockers/${cook.id}`)).body.blockedBy).toEqual([]);
  // Deleting a blocker frees those waiting for it.
  await call('DELETE', `/tasks/${shop.id}`);
  expect((await call('GET', `/tasks/${cook.id}`)).body.blockedBy).toEqual([]);
  await call('POST', `/tasks/${cook.id}/complete`);
  await call('POST', `/tasks/${eat.id}/complete`);
  expect((await call('GET', `/task-lists/${l.id}/next`)).body.task).toBeNull();
});

test('order: reorder a list, move before a task and to another list', async () => {
  const l = await list();
  const [a, b, c] = [await task(l.id, { title: 'a' }), await task(l.id, { title: 'b' }), await task(l.id, { title: 'c' })];
  const titles = async (id: string) => (await call('GET', `/tasks?listId=${id}`)).body.tasks.map((x: any) => x.title);
  const re = await call('PUT', `/task-lists/${l.id}/order`, { taskIds: [c.id, a.id, b.id] });
  expect(re.body.tasks.map((x: any) => x.title)).toEqual(['c', 'a', 'b']);
  expect((await call('PUT', `/task-lists/${l.id}/order`, { taskIds: [c.id, a.id] })).body.error.code).toBe('order_mismatch');
  await call('POST', `/tasks/${b.id}/move`, { beforeTaskId: a.id });
  expect(await titles(l.id)).toEqual(['c', 'b', 'a']);
  await call('POST', `/tasks/${c.id}/move`, { beforeTaskId: a.id });
  expect(await titles(l.id)).toEqual(['b', 'c', 'a']);
  const l2 = await list('later');
  const moved = await call('POST', `/tasks/${a.id}/move`, { listId: l2.id });
  expect(moved.body.listId).toBe(l2.id);
  expect(await titles(l.id)).toEqual(['b', 'c']);
  const wrong = await call('POST', `/tasks/${b.id}/move`, { listId: l2.id, beforeTaskId: c.id });
  expect([wrong.status, wrong.body.error.code]).toEqual([409, 'task_not_in_list']);
  expect((await call('POST', `/tasks/${b.id}/move`, {})).status).toBe(400);
});

test('comments: author-only edits, and the activity log records each change', async () => {
  const l = await list();
  const x = await task(l.id, { title: 'write report' });
  const c = await call('POST', `/tasks/${x.id}/comments`, { body: 'draft is in the drive' });
  expect(c.status).toBe(201);
  expect(c.body.author.kind).toBe('human');
  const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, key, { name: 'k' })).body.key;
  const byAgent = await call('POST', `/tasks/${x.id}/comments`, { body: 'I will review it' }, agentKey);
  expect(byAgent.body.author).toMatchObject({ kind: 'agent', id: agentId });
  const notMine = await call('PATCH', `/tasks/${x.id}/comments/${byAgent.body.id}`, { body: 'changed' });
  expect([notMine.status, notMine.body.error.code]).toEqual([403, 'not_comment_author']);
  expect((await call('PATCH', `/tasks/${x.id}/comments/${c.body.id}`, { body: 'final is in the drive' })).body.body).toBe('final is in the drive');
  expect((await call('GET', `/tasks/${x.id}/comments`)).body.comments.map((k: any) => k.body)).toEqual(['final is in the drive', 'I will review it']);
  expect((await call('GET', `/tasks/${x.id}`)).body.comments).toBe(2);
  expect((await call('DELETE', `/tasks/${x.id}/comments/${c.body.id}`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `/tasks/${x.id}/comments/${c.body.id}`)).body).toEqual({ deleted: 0 });
  expect((await call('GET', `/tasks/${x.id}/comments`, undefined, other)).status).toBe(404);
  await call('PATCH', `/tasks/${x.id}`, { priority: 'high' });
  await call('POST', `/tasks/${x.id}/complete`, undefined, agentKey);
  const log = (await call('GET', `/tasks/${x.id}/activity`)).body.activity;
  expect(log.map((a: any) => a.type)).toEqual([
    'task.created',
    'comment.created',
    'comment.created',
    'comment.updated',
    'comment.deleted',
    'task.updated',
    'task.completed',
  ]);
  expect(log[5].data).toEqual({ priority: 'high' });
  expect(log[6].actor).toMatchObject({ kind: 'agent', id: agentId });
  // Each change is also an event on the bus, from the outbox.
  const done = await until(() => events.find((e) => e.subject === 'agents.task.completed' && e.data.taskId === x.id));
  expect(done.data.actor).toMatchObject({ kind: 'agent', id: agentId });
  await call('DELETE', `/tasks/${x.id}`);
  await until(() => events.find((e) => e.subject === 'agents.task.deleted' && e.data.taskId === x.id));
});

test('duplicates: a task into another list, a list as a template with its blockers', async () => {
  const l = await list('template');
  const pack = await task(l.id, { title: 'pack', priority: 'high', labels: ['trip'], notes: 'passport' });
  const go = await task(l.id, { title: 'go' });
  await t.ok('PUT', `/tasks/${go.id}/blockers/${pack.id}`, key);
  await call('POST', `/tasks/${pack.id}/complete`);
  const l2 = await list('other');
  const copy = await call('POST', `/tasks/${pack.id}/duplicate`, { listId: l2.id });
  expect(copy.status).toBe(201);
  expect(copy.body).toMatchObject({
    listId: l2.id,
    title: 'pack',
    status: 'open',
    priority: 'high',
    labels: ['trip'],
    notes: 'passport',
    blockedBy: [],
  });
  expect(copy.body.id).not.toBe(pack.id);
  expect((await call('POST', `/tasks/${pack.id}/duplicate`, { listId: l2.id }, other)).status).toBe(404);
  expect((await call('POST', `/tasks/${pack.id}/duplicate`, { title: '' })).status).toBe(400);
  const openOnly = await call('POST', `/task-lists/${l.id}/duplicate`, {});
  expect(openOnly.body).toMatchObject({ name: 'template (copy)', openTasks: 1, doneTasks: 0 });
  const all = await call('POST', `/task-lists/${l.id}/duplicate`, { name: 'trip 2', includeDone: true });
  expect(all.body).toMatchObject({ name: 'trip 2', openTasks: 2, doneTasks: 0 });
  const copied = (await call('GET', `/tasks?listId=${all.body.id}`)).body.tasks;
  expect(copied.map((x: any) => x.title)).toEqual(['pack', 'go']);
  expect(copied[1].blockedBy).toEqual([copied[0].id]);
  expect((await call('POST', `/task-lists/${l.id}/duplicate`, {}, other)).status).toBe(404);
});
