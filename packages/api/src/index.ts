import type { Route } from './route.js';
import { accountsRoutes } from './routes/accounts/index.js';
import { agentOpsRoutes } from './routes/agent-ops.js';
import { agentsRoutes } from './routes/agents.js';
import { codeRoutes } from './routes/code.js';
import { creditsRoutes } from './routes/credits.js';
import { creditsAlertRoutes } from './routes/credits-alerts.js';
import { creditsViewRoutes } from './routes/credits-views.js';
import { driveRoutes } from './routes/drive.js';
import { driveFindRoutes } from './routes/drive/find.js';
import { driveJsonRoutes } from './routes/drive/json.js';
import { driveMoreRoutes } from './routes/drive/more.js';
import { driveOrganizeRoutes } from './routes/drive/organize.js';
import { driveTextRoutes } from './routes/drive/text.js';
import { identityRoutes } from './routes/identity.js';
import { keyOpsRoutes } from './routes/key-ops.js';
import { keysRoutes } from './routes/keys.js';
import { memoryRoutes } from './routes/memory.js';
import { modelsRoutes } from './routes/models.js';
import { modelsUsageRoutes } from './routes/models-usage.js';
import { profilesRoutes } from './routes/profiles.js';
import { profilesOpsRoutes } from './routes/profiles-ops.js';
import { schedulesRoutes } from './routes/schedules.js';
import { sitesRoutes } from './routes/sites.js';
import { sitesDomainsRoutes } from './routes/sites-domains.js';
import { sitesManageRoutes } from './routes/sites-manage.js';
import { systemRoutes } from './routes/system.js';
import { taskListsRoutes } from './routes/task-lists.js';
import { tasksRoutes } from './routes/tasks.js';
import { threadExtrasRoutes } from './routes/thread-extras.js';
import { threadMessagesRoutes } from './routes/thread-messages.js';
import { threadOpsRoutes } from './routes/thread-ops.js';
import { threadsRoutes } from './routes/threads.js';
import { tradingRoutes } from './routes/trading.js';
import { tradingJournalRoutes } from './routes/trading-journal.js';
import { tradingListRoutes } from './routes/trading-lists.js';
import { tradingMarketRoutes } from './routes/trading-market.js';
import { tradingPortfolioRoutes } from './routes/trading-portfolio.js';

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
export * from './schemas/trading-market.js';

/** Every operation of the public API, in matching order (static paths before parameters). */
export const routes: Route[] = [
  ...systemRoutes,
  ...identityRoutes,
  ...accountsRoutes,
  ...agentOpsRoutes,
  ...agentsRoutes,
  ...threadsRoutes,
  ...threadExtrasRoutes,
  ...threadOpsRoutes,
  ...threadMessagesRoutes,
  ...keyOpsRoutes,
  ...memoryRoutes,
  ...taskListsRoutes,
  ...tasksRoutes,
  ...schedulesRoutes,
  ...keysRoutes,
  ...driveFindRoutes,
  ...driveTextRoutes,
  ...driveJsonRoutes,
  ...driveOrganizeRoutes,
  ...driveMoreRoutes,
  ...driveRoutes,
  ...sitesRoutes,
  ...sitesManageRoutes,
  ...sitesDomainsRoutes,
  ...profilesRoutes,
  ...profilesOpsRoutes,
  ...modelsRoutes,
  ...modelsUsageRoutes,
  ...creditsRoutes,
  ...creditsViewRoutes,
  ...creditsAlertRoutes,
  ...tradingRoutes,
  ...tradingMarketRoutes,
  ...tradingPortfolioRoutes,
  ...tradingListRoutes,
  ...tradingJournalRoutes,
  ...codeRoutes,
];
