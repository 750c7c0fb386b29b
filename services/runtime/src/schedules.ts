import { AgentStore, LiveEvents, ScheduleFirer, ThreadsDomain } from '@svc/agents';
import type { Bus, Logger, Sql } from '@svc/kit';

/** How often a runtime replica looks for due schedules. */
export const SCHEDULE_POLL_MS = 1000;

/**
 * The runtime's scheduler (docs/memory.md): every SCHEDULE_POLL_MS each replica fires the due
 * schedules; a schedule is claimed FOR UPDATE SKIP LOCKED, so each firing happens once across
 * replicas. Returns the function that stops it.
 */
export function startScheduler(deps: { sql: Sql; bus: Bus; log: Logger }): () => void {
  const threads = new ThreadsDomain({
    sql: deps.sql,
    agents: new AgentStore(deps.sql),
    live: new LiveEvents(async () => deps.bus),
    bus: async () => deps.bus,
  });
  const firer = new ScheduleFirer(deps.sql, threads);
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    firer
      .fireDue()
      .catch((err) => deps.log.warn({ err: (err as Error).message }, 'firing schedules failed'))
      .finally(() => (running = false));
  }, SCHEDULE_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
