import { z } from 'zod';

import type { agents_schedules } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, type Route, type RouteInput, routeWith, Timestamp } from '../../route.js';
import { ThreadId } from './threads.js';

/**
 * Schedules (docs/memory.md): a message sent on a timetable (cron in UTC, an interval, or once) to
 * a thread of the account, or to one of its agents in a new thread each time. The runtime fires
 * them; each firing is recorded.
 */

export const ScheduleId = prefixedId('sch', 'a schedule id');

const TimingFields = {
  cron: z
    .string()
    .min(9)
    .max(200)
    .optional()
    .describe('Five-field cron in UTC: minute hour day-of-month month day-of-week (e.g. "0 9 * * MON-FRI": weekdays at 09:00 UTC).'),
  intervalSeconds: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .optional()
    .describe('Every so many seconds.'),
  at: z.iso.datetime({ offset: true }).optional().describe('Once, at this time.'),
};
const oneTiming = (b: { cron?: string; intervalSeconds?: number; at?: string }) =>
  [b.cron, b.intervalSeconds, b.at].filter((x) => x !== undefined).length === 1;
const timingOf = (b: { cron?: string; intervalSeconds?: number; at?: string }) => ({ cron: b.cron, intervalSeconds: b.intervalSeconds, at: b.at });

export const Schedule = z
  .object({
    id: z.string(),
    name: z.string(),
    message: z.string().describe('The message each firing sends.'),
    threadId: Nullable(z.string()).describe('The thread it sends to (or null: agentId).'),
    agentId: Nullable(z.string()).describe('The agent it starts a new thread with each time (or null: threadId).'),
    cron: Nullable(z.string()),
    intervalSeconds: Nullable(z.number().int()),
    at: Nullable(Timestamp),
    endsAt: Nullable(Timestamp),
    status: z.enum(['active', 'paused', 'completed']),
    nextFireAt: Nullable(Timestamp),
    lastFiredAt: Nullable(Timestamp),
    fireCount: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Schedule' });

const ScheduleFiring = z
  .object({
    id: z.string(),
    scheduleId: z.string(),
    scheduledFor: Nullable(Timestamp).describe('The timetable’s time (null for a manual trigger).'),
    firedAt: Timestamp,
    trigger: z.enum(['schedule', 'manual']),
    status: z.enum(['pending', 'sent', 'failed']),
    threadId: Nullable(z.string()),
    runId: Nullable(z.string()).describe('The run the message started (null when it was queued or injected into a running run).'),
    error: Nullable(z.string()),
  })
  .meta({ id: 'ScheduleFiring' });

export const scheduleJson = (s: agents_schedules.Schedule) => ({
  id: s.id,
  name: s.name,
  message: s.message,
  threadId: s.threadId ?? null,
  agentId: s.agentId ?? null,
  cron: s.cron ?? null,
  intervalSeconds: s.intervalSeconds ?? null,
  at: s.at ?? null,
  endsAt: s.endsAt ?? null,
  status: s.status as 'active' | 'paused' | 'completed',
  nextFireAt: s.nextFireAt ?? null,
  lastFiredAt: s.lastFiredAt ?? null,
  fireCount: s.fireCount,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});
const firingJson = (f: agents_schedules.ScheduleFiring) => ({
  id: f.id,
  scheduleId: f.scheduleId,
  scheduledFor: f.scheduledFor ?? null,
  firedAt: f.firedAt,
  trigger: f.trigger as 'schedule' | 'manual',
  status: f.status as 'pending' | 'sent' | 'failed',
  threadId: f.threadId ?? null,
  runId: f.runId ?? null,
  error: f.error ?? null,
});

const params = z.object({ id: ScheduleId });
const byId = (i: RouteInput<{ id: string }>) => ({ id: i.params.id });
const one = (res: agents_schedules.ScheduleResponse) => scheduleJson(res.schedule!);

const base: Pick<Route, 'tag' | 'auth' | 'principals' | 'authority'> = {
  tag: 'schedules',
  auth: 'key',
  principals: ['human', 'agent'],
  authority: false,
};
const scheduleRoute = routeWith(base);

export const schedulesRoutes: Route[] = [
  scheduleRoute({
    id: 'schedules.list',
    method: 'get',
    path: '/schedules',
    summary: 'The account’s schedules, oldest first, optionally by status.',
    query: ListQuery.extend({ status: z.enum(['active', 'paused', 'completed']).optional().describe('Only schedules in this state.') }),
    response: z.object({ schedules: z.array(Schedule), nextCursor: Nullable(z.string()) }).meta({ id: 'ScheduleList' }),
    handler: {
      rpc: 'agents.listSchedules',
      request: (i) => ({ status: i.query.status, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ schedules: res.schedules.map(scheduleJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  scheduleRoute({
    id: 'schedules.create',
    method: 'post',
    effect: 'creates',
    path: '/schedules',
    summary: 'Schedule a message to a thread, or to an agent in a new thread each time: by cron (UTC), every N seconds, or once at a time.',
    errors: ['never_fires', 'thread_not_found'],
    body: z
      .object({
        name: z.string().min(1).max(100).describe('The schedule’s name (1–100 characters).'),
        message: z.string().min(1).max(32_000).describe('The message sent each time it fires.'),
        threadId: ThreadId.optional().describe('Send into this thread (queued after a running run).'),
        agentId: AgentId.optional().describe('Or: start a new thread with this agent each time.'),
        ...TimingFields,
        endsAt: z.iso.datetime({ offset: true }).optional().describe('No firing after this time.'),
      })
      .strict()
      .refine((b) => (b.threadId === undefined) !== (b.agentId === undefined), 'give exactly one of threadId and agentId')
      .refine(oneTiming, 'give exactly one of cron, intervalSeconds and at')
      .meta({ id: 'CreateScheduleRequest' }),
    response: Schedule,
    status: 201,
    handler: {
      rpc: 'agents.createSchedule',
      request: (i) => ({
        name: i.body.name,
        message: i.body.message,
        threadId: i.body.threadId,
        agentId: i.body.agentId,
        timing: timingOf(i.body),
        endsAt: i.body.endsAt,
      }),
      response: one,
    },
  }),
  scheduleRoute({
    id: 'schedules.preview',
    method: 'post',
    effect: 'reads',
    path: '/schedules/preview',
    summary: 'Check a timetable and list its next firing times (nothing is created).',
    errors: ['invalid_cron'],
    body: z
      .object({
        ...TimingFields,
        count: z.number().int().min(1).max(50).default(5).describe('How many upcoming times to list (1–50; default 5).'),
        from: z.iso.datetime({ offset: true }).optional().describe('Start after this time (default: now).'),
      })
      .strict()
      .refine(oneTiming, 'give exactly one of cron, intervalSeconds and at')
      .meta({ id: 'PreviewScheduleRequest' }),
    response: z.object({ times: z.array(Timestamp) }).meta({ id: 'SchedulePreview' }),
    handler: { rpc: 'agents.previewSchedule', request: (i) => ({ timing: timingOf(i.body), count: i.body.count, from: i.body.from }) },
  }),
  scheduleRoute({
    id: 'schedules.get',
    method: 'get',
    path: '/schedules/:id',
    summary: 'A schedule with its status, next firing time and firing count.',
    errors: ['schedule_not_found'],
    params,
    response: Schedule,
    handler: { rpc: 'agents.getSchedule', request: byId, response: one },
  }),
  scheduleRoute({
    id: 'schedules.update',
    method: 'patch',
    effect: 'updates',
    path: '/schedules/:id',
    summary: 'Rename a schedule, change its message, give it a new timetable (from now) or end (null: none).',
    errors: ['schedule_not_found'],
    params,
    body: z
      .object({
        name: z.string().min(1).max(100).optional().describe('The schedule’s name (1–100 characters).'),
        message: z.string().min(1).max(32_000).optional().describe('The message sent each time it fires.'),
        ...TimingFields,
        endsAt: z.iso.datetime({ offset: true }).nullable().optional().describe('When it stops firing (ISO 8601); null: never.'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
      .refine((b) => [b.cron, b.intervalSeconds, b.at].filter((x) => x !== undefined).length <= 1, 'give at most one of cron, intervalSeconds and at')
      .meta({ id: 'UpdateScheduleRequest' }),
    response: Schedule,
    handler: {
      rpc: 'agents.updateSchedule',
      request: (i) => ({
        id: i.params.id,
        name: i.body.name,
        message: i.body.message,
        timing: oneTiming(i.body) ? timingOf(i.body) : undefined,
        endsAt: i.body.endsAt ?? undefined,
        clearEndsAt: i.body.endsAt === null,
      }),
      response: one,
    },
  }),
  scheduleRoute({
    id: 'schedules.delete',
    method: 'delete',
    path: '/schedules/:id',
    summary: 'Delete a schedule and its firing history (idempotent).',
    errors: ['schedule_not_found'],
    params,
    response: z.object({ deleted: z.number().int() }).meta({ id: 'DeletedSchedule' }),
    handler: { rpc: 'agents.deleteSchedule', request: byId },
  }),
  scheduleRoute({
    id: 'schedules.pause',
    method: 'post',
    effect: 'updates',
    path: '/schedules/:id/pause',
    summary: 'Pause a schedule: it does not fire until resumed.',
    errors: ['schedule_not_found'],
    params,
    response: Schedule,
    handler: { rpc: 'agents.pauseSchedule', request: byId, response: one },
  }),
  scheduleRoute({
    id: 'schedules.resume',
    method: 'post',
    effect: 'updates',
    path: '/schedules/:id/resume',
    summary: 'Resume a paused schedule from now (missed times are not fired).',
    errors: ['schedule_completed', 'schedule_not_found'],
    params,
    response: Schedule,
    handler: { rpc: 'agents.resumeSchedule', request: byId, response: one },
  }),
  scheduleRoute({
    id: 'schedules.skip',
    method: 'post',
    effect: 'updates',
    path: '/schedules/:id/skip',
    summary: 'Skip the next firing of an active schedule: it moves on to the time after.',
    errors: ['schedule_not_active', 'schedule_not_found'],
    params,
    response: Schedule,
    handler: { rpc: 'agents.skipSchedule', request: byId, response: one },
  }),
  scheduleRoute({
    id: 'schedules.trigger',
    method: 'post',
    effect: 'creates',
    path: '/schedules/:id/trigger',
    summary: 'Fire a schedule now, outside its timetable (which is unchanged); answers the firing.',
    errors: ['schedule_not_found'],
    params,
    response: ScheduleFiring,
    handler: { rpc: 'agents.triggerSchedule', request: byId, response: (res) => firingJson(res.firing!) },
  }),
  scheduleRoute({
    id: 'schedules.firings.list',
    method: 'get',
    path: '/schedules/:id/firings',
    summary: 'A schedule’s firings, newest first: when, by timetable or by hand, delivered or why not, the thread and run.',
    errors: ['schedule_not_found'],
    params,
    query: ListQuery,
    response: z.object({ firings: z.array(ScheduleFiring), nextCursor: Nullable(z.string()) }).meta({ id: 'ScheduleFiringList' }),
    handler: {
      rpc: 'agents.listScheduleFirings',
      request: (i) => ({ id: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ firings: res.firings.map(firingJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
];
