import type { Handlers } from '@svc/kit';
import type { agents } from '@svc/proto';

import type { AgentKeys } from './agent-keys.js';
import type { AgentsDomain } from './agents.js';
import { areaHandlers, type Areas } from './memory/areas.js';
import type { AgentRow } from './store.js';
import type { LiveEvents } from './threads/live.js';
import { threadHandlers } from './threads/server.js';
import type { ThreadsDomain } from './threads/threads.js';

type Def = typeof agents.AgentsServiceService;

export function toAgent(a: AgentRow): agents.Agent {
  return {
    id: a.id,
    ownerAccountId: a.owner_account_id,
    name: a.name,
    description: a.description ?? undefined,
    model: a.model ?? undefined,
    instructions: a.instructions ?? undefined,
    projectId: a.project_id ?? undefined,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
    tools: a.tools ?? [],
    hasTools: a.tools !== null,
    maxSteps: a.max_steps ?? undefined,
    maxTokensPerRun: a.max_tokens_per_run ?? undefined,
  };
}

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(domain: AgentsDomain, agentKeys: AgentKeys, threads: ThreadsDomain, live: LiveEvents, areas: Areas): Handlers<Def> {
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
  };
}
