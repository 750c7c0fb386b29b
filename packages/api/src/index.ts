import type { Route } from './route.js';
import { accountsRoutes } from './routes/accounts/index.js';
import { agentsRoutes } from './routes/agents.js';
import { codeRoutes } from './routes/code.js';
import { creditsRoutes } from './routes/credits.js';
import { driveRoutes } from './routes/drive.js';
import { identityRoutes } from './routes/identity.js';
import { keysRoutes } from './routes/keys.js';
import { memoryRoutes } from './routes/memory.js';
import { modelsRoutes } from './routes/models.js';
import { profilesRoutes } from './routes/profiles.js';
import { profilesOpsRoutes } from './routes/profiles-ops.js';
import { schedulesRoutes } from './routes/schedules.js';
import { sitesRoutes } from './routes/sites.js';
import { systemRoutes } from './routes/system.js';
import { taskListsRoutes } from './routes/task-lists.js';
import { tasksRoutes } from './routes/tasks.js';
import { threadsRoutes } from './routes/threads.js';
import { tradingRoutes } from './routes/trading.js';

export * from './openapi.js';
export * from './route.js';
export * from './routes/code.js';
export * from './routes/credits.js';
export * from './routes/drive.js';
export * from './routes/identity.js';
export * from './routes/keys.js';
export * from './routes/memory.js';
export * from './routes/models.js';
export * from './routes/schedules.js';
export * from './routes/sites.js';
export * from './routes/task-lists.js';
export * from './routes/tasks.js';
export * from './routes/threads.js';
export * from './rpc.js';
export * from './schemas/accounts.js';
export * from './schemas/agents.js';
export * from './schemas/models.js';
export * from './schemas/profiles.js';
export * from './schemas/trading.js';

/** Every operation of the public API, in matching order (static paths before parameters). */
export const routes: Route[] = [
  ...systemRoutes,
  ...identityRoutes,
  ...accountsRoutes,
  ...agentsRoutes,
  ...threadsRoutes,
  ...memoryRoutes,
  ...taskListsRoutes,
  ...tasksRoutes,
  ...schedulesRoutes,
  ...keysRoutes,
  ...driveRoutes,
  ...sitesRoutes,
  ...profilesRoutes,
  ...profilesOpsRoutes,
  ...modelsRoutes,
  ...creditsRoutes,
  ...tradingRoutes,
  ...codeRoutes,
];
