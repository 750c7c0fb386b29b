import type { Handlers } from '@svc/kit';
import type { agents } from '@svc/proto';

import { toMessage, toRun, toToolCall } from '../threads/manage-server.js';
import type { AgentOps } from './manage.js';
import { toAgent } from './views.js';

type Def = typeof agents.AgentsServiceService;
type AgentOpsHandlers = Pick<
  Handlers<Def>,
  | 'cloneAgent'
  | 'exportAgent'
  | 'listAgentRuns'
  | 'getAgentUsage'
  | 'listAgentToolCalls'
  | 'getAgentTools'
  | 'askAgent'
  | 'cancelAgentRuns'
  | 'searchAgents'
  | 'addDefaultAgent'
  | 'removeDefaultAgent'
>;

/** gRPC handlers of the agent operations: translate messages, let AgentOps decide. */
export function agentOpsHandlers(ops: AgentOps): AgentOpsHandlers {
  return {
    async cloneAgent(req, { principal }) {
      const r = await ops.clone(principal, req.agentId, req.name);
      return { agent: toAgent(r.agent), runtimeCopied: r.runtimeCopied };
    },
    async exportAgent(req, { principal }) {
      return { definitionJson: JSON.stringify(await ops.export(principal, req.agentId)) };
    },
    async listAgentRuns(req, { principal }) {
      const r = await ops.runs(principal, req.agentId, req);
      return { runs: r.runs.map(toRun), nextCursor: r.nextCursor };
    },
    async getAgentUsage(req, { principal }) {
      const u = await ops.usage(principal, req.agentId, req.since);
      return {
        runs: u.runs,
        completed: u.completed,
        failed: u.failed,
        cancelled: u.cancelled,
        active: u.active,
        threads: u.threads,
        usage: { inputTokens: Number(u.input_tokens), outputTokens: Number(u.output_tokens), cost: String(u.cost) },
        toolCalls: u.tool_calls,
        toolErrors: u.tool_errors,
        lastRunAt: u.last_run_at ? new Date(u.last_run_at).toISOString() : undefined,
      };
    },
    async listAgentToolCalls(req, { principal }) {
      const r = await ops.toolCalls(principal, req.agentId, req);
      return { toolCalls: r.calls.map((c) => ({ call: toToolCall(c), threadId: c.thread_id })), nextCursor: r.nextCursor };
    },
    async getAgentTools(req, { principal }) {
      return ops.tools(principal, req.agentId);
    },
    async askAgent(req, { principal }) {
      const r = await ops.ask(principal, req.agentId, req);
      return { threadId: r.threadId, runId: r.runId, timedOut: r.timedOut, reply: r.reply ? toMessage(r.reply) : undefined, status: r.status };
    },
    async cancelAgentRuns(req, { principal }) {
      return { runIds: await ops.cancelRuns(principal, req.agentId) };
    },
    async searchAgents(req, { principal }) {
      return { agents: (await ops.search(principal, req.query, req.limit)).map(toAgent) };
    },
    async addDefaultAgent(req, { principal }) {
      return { agents: (await ops.addDefault(principal, req.agentId)).map(toAgent) };
    },
    async removeDefaultAgent(req, { principal }) {
      return { agents: (await ops.removeDefault(principal, req.agentId)).map(toAgent) };
    },
  };
}
