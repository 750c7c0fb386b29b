import type { Route } from './route.js';
import { accountsRoutes } from './routes/accounts/index.js';
import { agentsRoutes } from './routes/agents/agents.js';
import { agentOpsRoutes } from './routes/agents/agents-manage.js';
import { approvalsRoutes } from './routes/agents/approvals.js';
import { memoryRoutes } from './routes/agents/memory.js';
import { schedulesRoutes } from './routes/agents/schedules.js';
import { tasksRoutes } from './routes/agents/tasks.js';
import { taskListsRoutes } from './routes/agents/tasks-lists.js';
import { threadsRoutes } from './routes/agents/threads.js';
import { threadExtrasRoutes } from './routes/agents/threads-activity.js';
import { threadOpsRoutes } from './routes/agents/threads-manage.js';
import { threadMessagesRoutes } from './routes/agents/threads-messages.js';
import { driveRoutes } from './routes/drive/files.js';
import { driveFindRoutes } from './routes/drive/files-find.js';
import { driveJsonRoutes } from './routes/drive/files-json.js';
import { driveMoreRoutes } from './routes/drive/files-more.js';
import { driveOrganizeRoutes } from './routes/drive/files-organize.js';
import { driveTextRoutes } from './routes/drive/files-text.js';
import { driveInternalRoutes } from './routes/drive/internal.js';
import { sitesRoutes } from './routes/drive/sites.js';
import { sitesDomainsRoutes } from './routes/drive/sites-domains.js';
import { sitesManageRoutes } from './routes/drive/sites-manage.js';
import { identityRoutes } from './routes/gateway/identity.js';
import { systemRoutes } from './routes/gateway/system.js';
import { keysRoutes } from './routes/keys/keys.js';
import { keyOpsRoutes } from './routes/keys/keys-manage.js';
import { codeRoutes } from './routes/mcp/run-code.js';
import { creditsRoutes } from './routes/models/credits.js';
import { creditsAlertRoutes } from './routes/models/credits-alerts.js';
import { creditsViewRoutes } from './routes/models/credits-views.js';
import { modelsRoutes } from './routes/models/models.js';
import { modelsUsageRoutes } from './routes/models/models-usage.js';
import { profilesInternalRoutes } from './routes/profiles/internal.js';
import { profilesRoutes } from './routes/profiles/profiles.js';
import { profilesOpsRoutes } from './routes/profiles/profiles-manage.js';
import { tradingJournalRoutes } from './routes/trading/journal.js';
import { tradingListRoutes } from './routes/trading/lists.js';
import { tradingMarketRoutes } from './routes/trading/market.js';
import { tradingPortfolioRoutes } from './routes/trading/portfolio.js';
import { tradingRoutes } from './routes/trading/trading.js';

export * from './openapi.js';
export * from './route.js';
export * from './routes/agents/memory.js';
export * from './routes/agents/schedules.js';
export * from './routes/agents/tasks.js';
export * from './routes/agents/tasks-lists.js';
export * from './routes/agents/threads.js';
export * from './routes/drive/files.js';
export type { DriveInternalMethod } from './routes/drive/internal.js';
export * from './routes/drive/sites.js';
export * from './routes/gateway/identity.js';
export * from './routes/internal.js';
export * from './routes/keys/keys.js';
export * from './routes/mcp/run-code.js';
export * from './routes/models/credits.js';
export * from './routes/models/models.js';
export type { ProfilesInternalMethod } from './routes/profiles/internal.js';
export { tradingEventJson } from './routes/trading/trading.js';
export * from './rpc.js';
export * from '@svc/contract';

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
  ...approvalsRoutes,
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

/**
 * The internal operations (Route.internal): the drive and profile calls of the protocol fronts
 * (WebDAV, Git, public sites), invoked through the dispatcher; no HTTP route, no tool.
 */
export const internalRoutes: Route[] = [...driveInternalRoutes, ...profilesInternalRoutes];

/** Every operation a dispatcher serves: the public API's and the internal ones. */
export const allOperations: Route[] = [...routes, ...internalRoutes];
