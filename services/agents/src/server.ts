import type { Handlers } from '@svc/kit';
import type { agents } from '@svc/proto';

import type { AgentKeys } from './agent-keys.js';
import type { AgentOps } from './agent-ops.js';
import { agentOpsHandlers } from './agent-ops-server.js';
import type { AgentsDomain } from './agents.js';
import { areaHandlers, type Areas } from './memory/areas.js';
import type { ThreadExtras } from './threads/extras.js';
import { threadExtrasHandlers } from './threads/extras-server.js';
import type { LiveEvents } from './threads/live.js';
import type { ThreadOps } from './threads/ops.js';
import { threadOpsHandlers } from './threads/ops-server.js';
import { threadHandlers } from './threads/server.js';
import type { ThreadsDomain } from './threads/threads.js';
import { toAgent } from './to-agent.js';

type Def = typeof agents.AgentsServiceService;

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
): Handlers<Def> {
  return {
    ...threadHandlers(threads, live),
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
      await agentKeys.revoke(principal, req);
      return {};
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
