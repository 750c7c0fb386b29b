import type { Sql } from '@svc/kit';

import { AgentStore } from '../store.js';
import { taskHandlers } from '../tasks/server.js';
import { TasksDomain } from '../tasks/tasks.js';
import { MemoryDomain } from './memory.js';
import { memoryHandlers } from './server.js';

/** The memory helper's areas of the agents service: memory, tasks and schedules, wired once. */
export interface Areas {
  memory: MemoryDomain;
  tasks: TasksDomain;
}

export function createAreas(sql: Sql): Areas {
  return { memory: new MemoryDomain(sql), tasks: new TasksDomain(sql, new AgentStore(sql)) };
}

export function areaHandlers(a: Areas) {
  return { ...memoryHandlers(a.memory), ...taskHandlers(a.tasks) };
}
