import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/** Schedules (docs/memory.md): timetables checked and previewed, firings by the runtime (once each), pause, skip, trigger, isolation. */

let t: TestStack;
let key: string;
let other: string;
let agentId: string;
const events: Array<{ subject: string; data: any }> = [];
beforeAll(async () => {
  t = await startTestStack();
  const bus = await t.stack.backends.bus();
  await bus.subscribe(
    'agents.schedule.>',
    async (event, meta) => void events.push({ subject: meta.subject.slice(meta.subject.indexOf('agents.')), data: event.data }),
  );
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Sol' })).body.key;
  other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ona' })).body.key;
  agentId = (await t.ok('POST', '/agents', key, { name: 'clock' })).body.id;
}, 60_000);
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, k = key) => t.call(method, p, { key: k, body });
const thread = async () => (await t.ok('POST', '/threads', key, { agentId, title: 'standup' })).body.id as string;
const future = (s: number) => new Date(Date.now() + s * 1000).toISOString();

test('preview: cron in UTC with names, steps and both day fields; intervals; bad timetables are 400', async () => {
  // 2026-11-27 is a Friday.
  const wk = await call('POST', '/schedules/preview', { cron: '0 9 * * MON-FRI', from: '2026-11-27T10:00:00Z', count: 3 });
  expect(wk.body.times).toEqual(['2026-11-30T09:00:00.000Z', '2026-12-01T09:00:00.000Z', '2026-12-02T09:00:00.000Z']);
  const steps = await call('POST', '/schedules/preview', { cron: '*/20 8-9 1 * *', from: '2026-12-01T08:30:00Z', count: 4 });
  expect(steps.body.times).toEqual(['2026-12-01T08:40:00.000Z', '2026-12-01T09:00:00.000Z', '2026-12-01T09:20:00.000Z', '2026-12-01T09:40:00.000Z']);
  const leap = await call('POST', '/schedules/preview', { cron: '0 0 29 feb *', from: '2026-01-01T00:00:00Z', count: 1 });
  expect(leap.body.times).toEqual(['2028-02-29T00:00:00.000Z']);
  const every = await call('POST', '/schedules/preview', { intervalSeconds: 90, from: '2026-01-01T00:00:00Z', count: 2 });
  expect(every.body.times).toEqual(['2026-01-01T00:01:30.000Z', '2026-01-01T00:03:00.000Z']);
  const badCron = await call('POST', '/schedules/preview', { cron: '61 * * * *' });
  expect([badCron.status, badCron.body.error.code]).toEqual([400, 'invalid_cron']);
  expect((await call('POST', '/schedules/preview', { cron: '* * *' })).status).toBe(400);
  expect((await call('POST', '/schedules/preview', { cron: '0 9 * * *', intervalSeconds: 60 })).status).toBe(400);
});

test('create: target and timetable checked; another account’s thread or schedule is 404', async () => {
  const th = await thread();
  const both = await call('POST', '/schedules', { name: 'x', message: 'hi', threadId: th, agentId, intervalSeconds: 60 });
  expect(both.status).toBe(400);
  expect((await call('POST', '/schedules', { name: 'x', message: 'hi', threadId: th, at: '2020-01-01T00:00:00Z' })).status).toBe(400);
  const never = await call('POST', '/schedules', { name: 'x', message: 'hi', threadId: th, cron: '0 0 30 2 *' });
  expect([never.status, never.body.error.code]).toEqual([422, 'never_fires']);
  const theirs = await call('POST', '/schedules', { name: 'x', message: 'hi', threadId: th, intervalSeconds: 60 }, other);
  expect([theirs.status, theirs.body.error.code]).toEqual([404, 'thread_not_found']);
  const s = await call('POST', '/schedules', { name: 'standup', message: 'status?', threadId: th, cron: '0 9 * * MON-FRI' });
  expect(s.status).toBe(201);
  expect(s.body).toMatchObject({ status: 'active', cron: '0 9 * * MON-FRI', fireCount: 0, threadId: th, agentId: null });
  expect(new Date(s.body.nextFireAt).getUTCHours()).toBe(9);
  for (const [m, p] of [
    ['GET', ''],
    ['POST', '/pause'],
    ['POST', '/trigger'],
    ['GET', '/firings'],
  ] as const) {
    expect((await call(m, `/schedules/${s.body.id}${p}`, undefined, other)).status).toBe(404);
  }
  // Another account's real schedule and a made-up id answer alike: no existence oracle.
  const foreign = await call('DELETE', `/schedules/${s.body.id}`, undefined, other);
  const madeUp = await call('DELETE', `/schedules/sch_${'0'.repeat(26)}`, undefined, other);
  expect([foreign.status, foreign.body.error.code]).toEqual([404, 'schedule_not_found']);
  expect([madeUp.status, madeUp.body.error.code, madeUp.body.error.message]).toEqual([404, 'schedule_not_found', foreign.body.error.message]);
  expect((await call('GET', '/schedules', undefined, other)).body.schedules).toEqual([]);
  // Skip moves to the next weekday; an update to a new timetable applies from now.
  const skipped = await call('POST', `/schedules/${s.body.id}/skip`);
  expect(Date.parse(skipped.body.nextFireAt)).toBeGreaterThan(Date.parse(s.body.nextFireAt));
  const retimed = await call('PATCH', `/schedules/${s.body.id}`, { intervalSeconds: 3600, name: 'hourly' });
  expect(retimed.body).toMatchObject({ name: 'hourly', cron: null, intervalSeconds: 3600 });
  expect(Math.abs(Date.parse(retimed.body.nextFireAt) - Date.now() - 3_600_000)).toBeLessThan(10_000);
  expect((await call('DELETE', `/schedules/${s.body.id}`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `/schedules/${s.body.id}`)).body.error.code).toBe('schedule_not_found');
  expect((await call('GET', `/schedules/${s.body.id}`)).body.error.code).toBe('schedule_not_found');
});

test('the runtime fires an interval schedule into its thread, once per time; pause stops it, resume goes on', async () => {
  const th = await thread();
  const s = (await t.ok('POST', '/schedules', key, { name: 'tick', message: 'tick', threadId: th, intervalSeconds: 1 })).body;
  const fired = await until(async () => {
    const f = (await call('GET', `/schedules/${s.id}/firings`)).body.firings;
    return f.length >= 2 && f.every((x: any) => x.status === 'sent') && f;
  });
  expect(fired[0]).toMatchObject({ trigger: 'schedule', threadId: th });
  // Each timetable time fired once.
  const times = fired.map((f: any) => f.scheduledFor);
  expect(new Set(times).size).toBe(times.length);
  const events = (await call('GET', `/threads/${th}/events?limit=200`)).body.events;
  expect(events.filter((e: any) => e.type === 'message.created' && e.data.content === 'tick').length).toBeGreaterThanOrEqual(1);
  expect(events.find((e: any) => e.type === 'message.created').producer.kind).toBe('system');
  const paused = await call('POST', `/schedules/${s.id}/pause`);
  expect(paused.body).toMatchObject({ status: 'paused', nextFireAt: null });
  const count = (await call('GET', `/schedules/${s.id}`)).body.fireCount;
  await new Promise((r) => setTimeout(r, 2500));
  expect((await call('GET', `/schedules/${s.id}`)).body.fireCount).toBe(count);
  expect((await call('POST', `/schedules/${s.id}/skip`)).body.error.code).toBe('schedule_not_active');
  const resumed = await call('POST', `/schedules/${s.id}/resume`);
  expect(resumed.body.status).toBe('active');
  await until(async () => (await call('GET', `/schedules/${s.id}`)).body.fireCount > count);
  await call('POST', `/schedules/${s.id}/pause`);
  expect((await call('GET', '/schedules?status=paused')).body.schedules.map((x: any) => x.id)).toContain(s.id);
});

test('a one-time schedule to an agent starts a new thread, then completes; trigger fires by hand', async () => {
  const s = (await t.ok('POST', '/schedules', key, { name: 'reminder', message: 'water the plants', agentId, at: future(1.5) })).body;
  const done = await until(async () => {
    const g = (await call('GET', `/schedules/${s.id}`)).body;
    return g.status === 'completed' && g;
  });
  expect(done).toMatchObject({ fireCount: 1, nextFireAt: null });
  // The firing is recorded when claimed, then marked sent once the message is delivered.
  const firing = await until(async () => {
    const [f] = (await call('GET', `/schedules/${s.id}/firings`)).body.firings;
    return f.status !== 'pending' && f;
  });
  expect(firing).toMatchObject({ status: 'sent', trigger: 'schedule' });
  expect(firing.runId).toMatch(/^run_/);
  const th = (await call('GET', `/threads/${firing.threadId}`)).body;
  expect(th).toMatchObject({ title: 'reminder', agentId });
  expect((await call('POST', `/schedules/${s.id}/resume`)).body.error.code).toBe('schedule_completed');
  const manual = await call('POST', `/schedules/${s.id}/trigger`);
  expect(manual.body).toMatchObject({ trigger: 'manual', status: 'sent', scheduledFor: null });
  expect(manual.body.threadId).not.toBe(firing.threadId);
  expect((await call('GET', `/schedules/${s.id}`)).body).toMatchObject({ fireCount: 2, status: 'completed' });
  const fired = await until(async () => {
    const mine = events.filter((e) => e.subject === 'agents.schedule.fired' && e.data.scheduleId === s.id);
    return mine.length === 2 && mine;
  });
  expect(fired.map((e) => e.data.trigger).sort()).toEqual(['manual', 'schedule']);
  expect(events.some((e) => e.subject === 'agents.schedule.created' && e.data.scheduleId === s.id)).toBe(true);
  // A new timetable makes it active again.
  expect((await call('PATCH', `/schedules/${s.id}`, { at: future(3600) })).body.status).toBe('active');
  await call('DELETE', `/schedules/${s.id}`);
});
