import type { OutboxRelay, Sql } from '@svc/kit';

import { AgentStore } from '../agents/store.js';
import { SchedulesDomain } from '../schedules/schedules.js';
import { scheduleHandlers } from '../schedules/server.js';
import { taskHandlers } from '../tasks/server.js';
import { TasksDomain } from '../tasks/tasks.js';
import type { ThreadsDomain } from '../threads/threads.js';
import { MemoryDomain } from './memory.js';
import { memoryHandlers } from './server.js';

/** The memory helper's areas of the agents service: memory, tasks and schedules, wired once. */
export interface Areas {
  memory: MemoryDomain;
  tasks: TasksDomain;
  schedules: SchedulesDomain;
}

export function createAreas(sql: Sql, threads: ThreadsDomain, outbox: () => OutboxRelay | undefined): Areas {
  const agents = new AgentStore(sql);
  return { memory: new MemoryDomain(sql), tasks: new TasksDomain(sql, agents, outbox), schedules: new SchedulesDomain(sql, threads, agents, outbox) };
}

export function areaHandlers(a: Areas) {
  return { ...memoryHandlers(a.memory), ...taskHandlers(a.tasks), ...scheduleHandlers(a.schedules) };
}
