import type { agentsDefinition } from '@svc/clients';
import type { Handlers } from '@svc/kit';

import type { AgentsDomain } from './agents/agents.js';
import type { AgentKeys } from './agents/keys.js';
import type { AgentOps } from './agents/manage.js';
import { agentOpsHandlers } from './agents/manage-server.js';
import { toAgent } from './agents/views.js';
import { areaHandlers, type Areas } from './memory/areas.js';
import type { ThreadExtras } from './threads/activity.js';
import { threadExtrasHandlers } from './threads/activity-server.js';
import type { ApprovalsDomain } from './threads/approvals.js';
import { approvalHandlers } from './threads/approvals-server.js';
import type { LiveEvents } from './threads/live.js';
import type { ThreadOps } from './threads/manage.js';
import { threadOpsHandlers } from './threads/manage-server.js';
import { threadHandlers } from './threads/server.js';
import type { ThreadsDomain } from './threads/threads.js';

/** Every method of the agents service's areas (AgentsService, ThreadsService, MemoryService, ...). */
type Def = typeof agentsDefinition;

export { toAgent };

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(
  domain: AgentsDomain,
  agentKeys: AgentKeys,
  threads: ThreadsDomain,
  live: LiveEvents,
  ops: ThreadOps,
  agentOps: AgentOps,
  extras: ThreadExtras,
  areas: Areas,
  approvals: ApprovalsDomain,
): Handlers<Def> {
  return {
    ...threadHandlers(threads, live),
    ...approvalHandlers(approvals),
    ...areaHandlers(areas),
    async createAgent(req, { principal }) {
      const { tools, hasTools, ...rest } = req;
      return { agent: toAgent(await domain.create(principal, { ...rest, tools: hasTools ? tools : undefined })) };
    },
    async listAgents(req, { principal }) {
      const { rows, nextCursor } = await domain.list(principal, req);
      return { agents: rows.map(toAgent), nextCursor };
    },
    async getAgent(req, { principal }) {
      return { agent: toAgent(await domain.get(principal, req.id)) };
    },
    async updateAgent(req, { principal }) {
      const { tools, hasTools, ...rest } = req;
      return { agent: toAgent(await domain.update(principal, req.id, { ...rest, tools: hasTools ? tools : undefined })) };
    },
    async deleteAgent(req, { principal }) {
      return { revokedKeys: await domain.remove(principal, req.id) };
    },
    async getDefaultAgents(_req, { principal }) {
      return { agents: (await domain.getDefaults(principal)).map(toAgent) };
    },
    async setDefaultAgents(req, { principal }) {
      return { agents: (await domain.setDefaults(principal, req.agentIds)).map(toAgent) };
    },
    async createAgentKey(req, { principal }) {
      return agentKeys.create(principal, req);
    },
    async listAgentKeys(req, { principal }) {
      return agentKeys.list(principal, req);
    },
    async revokeAgentKey(req, { principal }) {
      return agentKeys.revoke(principal, req);
    },
    ...threadOpsHandlers(ops),
    ...agentOpsHandlers(agentOps),
    ...threadExtrasHandlers(extras),
    async listDeletedAgents(req, { principal }) {
      const { rows, nextCursor } = await domain.listDeleted(principal, req);
      return { agents: rows.map(toAgent), nextCursor };
    },
    async restoreAgent(req, { principal }) {
      return { agent: toAgent(await domain.restore(principal, req.id)) };
    },
    async getAgentKey(req, { principal }) {
      return agentKeys.get(principal, { agentId: req.agentId, id: req.id });
    },
    async renameAgentKey(req, { principal }) {
      return agentKeys.rename(principal, req);
    },
  };
}
