import type { Sql } from '@svc/kit';

import { MemoryDomain } from './memory.js';
import { memoryHandlers } from './server.js';

/** The memory helper's areas of the agents service: memory, tasks and schedules, wired once. */
export interface Areas {
  memory: MemoryDomain;
}

export function createAreas(sql: Sql): Areas {
  return { memory: new MemoryDomain(sql) };
}

export function areaHandlers(a: Areas) {
  return { ...memoryHandlers(a.memory) };
}
