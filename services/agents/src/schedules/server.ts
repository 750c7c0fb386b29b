import type { Handlers } from '@svc/kit';
import type { agents_schedules } from '@svc/proto';

import type { SchedulesDomain, TimingInput } from './schedules.js';
import type { FiringRow, ScheduleRow } from './store.js';

type Def = typeof agents_schedules.SchedulesServiceService;
type ScheduleHandlers = Pick<
  Handlers<Def>,
  | 'listSchedules'
  | 'createSchedule'
  | 'getSchedule'
  | 'updateSchedule'
  | 'deleteSchedule'
  | 'pauseSchedule'
  | 'resumeSchedule'
  | 'skipSchedule'
  | 'triggerSchedule'
  | 'previewSchedule'
  | 'listScheduleFirings'
>;

export function toSchedule(s: ScheduleRow): agents_schedules.Schedule {
  return {
    id: s.id,
    name: s.name,
    message: s.message,
    threadId: s.thread_id ?? undefined,
    agentId: s.agent_id ?? undefined,
    cron: s.cron ?? undefined,
    intervalSeconds: s.interval_seconds ?? undefined,
    at: s.at?.toISOString(),
    endsAt: s.ends_at?.toISOString(),
    status: s.status,
    nextFireAt: s.next_fire_at?.toISOString(),
    lastFiredAt: s.last_fired_at?.toISOString(),
    fireCount: s.fire_count,
    createdAt: s.created_at.toISOString(),
    updatedAt: s.updated_at.toISOString(),
  };
}

const toFiring = (f: FiringRow): agents_schedules.ScheduleFiring => ({
  id: f.id,
  scheduleId: f.schedule_id,
  scheduledFor: f.scheduled_for?.toISOString(),
  firedAt: f.fired_at.toISOString(),
  trigger: f.trigger,
  status: f.status,
  threadId: f.thread_id ?? undefined,
  runId: f.run_id ?? undefined,
  error: f.error ?? undefined,
});

const timing = (t: agents_schedules.ScheduleTiming | undefined): TimingInput | undefined =>
  t && { cron: t.cron, intervalSeconds: t.intervalSeconds, at: t.at };

/** gRPC handlers of schedules: translate messages, let the domain decide. */
export function scheduleHandlers(d: SchedulesDomain): ScheduleHandlers {
  return {
    async listSchedules(req, { principal }) {
      const { rows, nextCursor } = await d.list(principal, req);
      return { schedules: rows.map(toSchedule), nextCursor };
    },
    async createSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.create(principal, { ...req, timing: timing(req.timing) })) };
    },
    async getSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.get(principal, req.id)) };
    },
    async updateSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.update(principal, { ...req, timing: timing(req.timing) })) };
    },
    async deleteSchedule(req, { principal }) {
      return { deleted: await d.remove(principal, req.id) };
    },
    async pauseSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.pause(principal, req.id)) };
    },
    async resumeSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.resume(principal, req.id)) };
    },
    async skipSchedule(req, { principal }) {
      return { schedule: toSchedule(await d.skip(principal, req.id)) };
    },
    async triggerSchedule(req, { principal }) {
      return { firing: toFiring(await d.trigger(principal, req.id)) };
    },
    async previewSchedule(req) {
      return { times: d.preview({ ...req, timing: timing(req.timing) }).map((t) => t.toISOString()) };
    },
    async listScheduleFirings(req, { principal }) {
      const { rows, nextCursor } = await d.firings(principal, req.id, req.limit, req.cursor);
      return { firings: rows.map(toFiring), nextCursor };
    },
  };
}
