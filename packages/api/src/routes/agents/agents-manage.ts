import { z } from 'zod';

import { AgentId, ListQuery, Nullable, route, type RouteInput, Timestamp } from '../../route.js';
import { Agent, agentJson, DefaultAgents, defaults } from './agents.js';
import { messageJson, Run, runJson, ThreadMessage } from './threads-messages.js';

/**
 * Agents at work (docs/threads.md): clone, export, runs, usage, tool calls, the tools an agent may
 * call, asking it something, stopping its runs, search, and the default agents one by one.
 */

const params = z.object({ id: AgentId });
const ref = (i: RouteInput<{ id: string }>) => ({ agentId: i.params.id });
const common = { tag: 'agents', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };
const Usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string().describe('Decimal, in credits.') });

export const agentOpsRoutes = [
  route({
    ...common,
    id: 'agents.search',
    method: 'get',
    path: '/agents/search',
    summary: 'Agents of the acting account whose name, description or instructions contain the text (case-insensitive); name matches first.',
    query: z.object({
      q: z.string().trim().min(1, 'must not be empty').max(200).describe('The text to find.'),
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('How many agents to return at most (1–100; default 20).'),
    }),
    response: z.object({ agents: z.array(Agent) }).meta({ id: 'AgentSearchResult' }),
    handler: {
      rpc: 'agents.searchAgents',
      request: (i) => ({ query: i.query.q, limit: i.query.limit }),
      response: (res) => ({ agents: res.agents.map(agentJson) }),
    },
  }),
  route({
    ...common,
    id: 'agents.listDeleted',
    method: 'get',
    path: '/agents/deleted',
    summary: 'Agents of the acting account deleted in the last 30 days, which agents.restore brings back; most recently deleted first.',
    query: ListQuery,
    response: z.object({ agents: z.array(Agent), nextCursor: Nullable(z.string()) }).meta({ id: 'DeletedAgentList' }),
    handler: {
      rpc: 'agents.listDeletedAgents',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ agents: res.agents.map(agentJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'agents.restore',
    method: 'post',
    effect: 'updates',
    path: '/agents/:id/restore',
    summary:
      'Undo the deletion of an agent deleted in the last 30 days: its definition and threads come back, its keys stay revoked (a live agent: no change).',
    errors: ['agent_not_found'],
    params,
    response: Agent,
    handler: { rpc: 'agents.restoreAgent', request: (i) => ({ id: i.params.id }), response: (res) => agentJson(res.agent!) },
  }),
  route({
    ...common,
    id: 'defaultAgents.add',
    method: 'put',
    effect: 'creates',
    path: '/default-agents/:agentId',
    summary: 'Add an agent of the account at the end of its default agents (already there: no change; at most 20).',
    errors: ['agent_not_found'],
    params: z.object({ agentId: AgentId }),
    response: DefaultAgents,
    handler: { rpc: 'agents.addDefaultAgent', request: (i) => ({ agentId: i.params.agentId }), response: defaults },
  }),
  route({
    ...common,
    id: 'defaultAgents.remove',
    method: 'delete',
    path: '/default-agents/:agentId',
    summary: 'Take an agent out of the account’s default agents (not there: no change).',
    errors: ['agent_not_found'],
    params: z.object({ agentId: AgentId }),
    response: DefaultAgents,
    handler: { rpc: 'agents.removeDefaultAgent', request: (i) => ({ agentId: i.params.agentId }), response: defaults },
  }),
  route({
    ...common,
    id: 'agents.clone',
    method: 'post',
    effect: 'creates',
    path: '/agents/:id/clone',
    summary: 'A new agent like this one (name, description, model, instructions, project; its tools and limits when a person asks through the API).',
    errors: ['agent_not_found'],
    params,
    body: z
      .object({ name: z.string().trim().min(1).max(100).optional().describe('The copy’s name; the source’s with " (copy)" when absent.') })
      .strict()
      .meta({ id: 'CloneAgentRequest' }),
    response: z
      .object({
        agent: Agent,
        runtimeCopied: z.boolean().describe('false: the source’s tools and limits were left out (only a person through the API sets them).'),
      })
      .meta({ id: 'ClonedAgent' }),
    status: 201,
    handler: {
      rpc: 'agents.cloneAgent',
      request: (i) => ({ agentId: i.params.id, name: i.body.name }),
      response: (res) => ({ agent: agentJson(res.agent!), runtimeCopied: res.runtimeCopied }),
    },
  }),
  route({
    ...common,
    id: 'agents.export',
    method: 'get',
    path: '/agents/:id/export',
    summary: 'The agent’s portable definition: the body of POST /agents that makes one like it (in this account or another).',
    errors: ['agent_not_found'],
    params,
    response: z
      .object({
        definition: z
          .object({
            name: z.string(),
            description: z.string().optional(),
            model: z.string().optional(),
            instructions: z.string().optional(),
            tools: z.array(z.string()).optional(),
            maxSteps: z.number().int().optional(),
            maxTokensPerRun: z.number().int().optional(),
          })
          .describe('Fields left unset on the agent are absent.'),
      })
      .meta({ id: 'AgentDefinition' }),
    handler: {
      rpc: 'agents.exportAgent',
      request: ref,
      response: (res) => ({ definition: JSON.parse(res.definitionJson) as { name: string } }),
    },
  }),
  route({
    ...common,
    id: 'agents.runs.list',
    method: 'get',
    path: '/agents/:id/runs',
    summary: 'The agent’s runs across its threads, newest first.',
    errors: ['agent_not_found'],
    params,
    query: ListQuery.extend({
      status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']).optional().describe('Only runs in this state.'),
    }),
    response: z.object({ runs: z.array(Run), nextCursor: Nullable(z.string()) }).meta({ id: 'AgentRunList' }),
    handler: {
      rpc: 'agents.listAgentRuns',
      request: (i) => ({ agentId: i.params.id, limit: i.query.limit, cursor: i.query.cursor, status: i.query.status }),
      response: (res) => ({ runs: res.runs.map(runJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'agents.usage',
    method: 'get',
    path: '/agents/:id/usage',
    summary: 'What the agent did and cost: runs by outcome, threads, tokens, cost, tool calls and errors (since a date, or all time).',
    errors: ['agent_not_found'],
    params,
    query: z.object({ since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601: only runs from then on.') }),
    response: z
      .object({
        runs: z.number().int(),
        completed: z.number().int(),
        failed: z.number().int(),
        cancelled: z.number().int(),
        active: z.number().int().describe('Queued or running now.'),
        threads: z.number().int(),
        usage: Usage,
        toolCalls: z.number().int(),
        toolErrors: z.number().int(),
        lastRunAt: Nullable(Timestamp),
      })
      .meta({ id: 'AgentUsage' }),
    handler: {
      rpc: 'agents.getAgentUsage',
      request: (i) => ({ agentId: i.params.id, since: i.query.since }),
      response: (res) => ({
        runs: res.runs,
        completed: res.completed,
        failed: res.failed,
        cancelled: res.cancelled,
        active: res.active,
        threads: res.threads,
        usage: { inputTokens: Number(res.usage?.inputTokens ?? 0), outputTokens: Number(res.usage?.outputTokens ?? 0), cost: res.usage?.cost || '0' },
        toolCalls: res.toolCalls,
        toolErrors: res.toolErrors,
        lastRunAt: res.lastRunAt ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'agents.toolCalls.list',
    method: 'get',
    path: '/agents/:id/tool-calls',
    summary: 'The tool calls the agent made across its threads, newest first: what it did, with arguments and results.',
    errors: ['agent_not_found'],
    params,
    query: ListQuery.extend({
      name: z
        .string()
        .regex(/^[a-z0-9_]{1,100}$/, 'must be a tool name')
        .optional()
        .describe('Only calls of this tool.'),
    }),
    response: z
      .object({
        toolCalls: z.array(
          z.object({
            threadId: z.string(),
            runId: z.string(),
            callId: z.string(),
            name: z.string(),
            arguments: z.unknown(),
            isError: z.boolean(),
            result: z.unknown(),
            status: z.enum(['started', 'done']),
            createdAt: Timestamp,
          }),
        ),
        nextCursor: Nullable(z.string()),
      })
      .meta({ id: 'AgentToolCallList' }),
    handler: {
      rpc: 'agents.listAgentToolCalls',
      request: (i) => ({ agentId: i.params.id, limit: i.query.limit, cursor: i.query.cursor, name: i.query.name }),
      response: (res) => ({
        toolCalls: res.toolCalls.map((c) => ({
          threadId: c.threadId,
          runId: c.call!.runId,
          callId: c.call!.callId,
          name: c.call!.name,
          arguments: JSON.parse(c.call!.argumentsJson || 'null') as unknown,
          isError: c.call!.isError,
          result: JSON.parse(c.call!.resultJson || 'null') as unknown,
          status: c.call!.status as 'started' | 'done',
          createdAt: c.call!.createdAt,
        })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'agents.tools',
    method: 'get',
    path: '/agents/:id/tools',
    summary: 'The tools the agent’s runs may call: its patterns (or the default set) resolved against the tool catalogue.',
    errors: ['agent_not_found'],
    params,
    response: z
      .object({
        patterns: z.array(z.string()),
        usesDefault: z.boolean().describe('true: the agent names no tools and gets the default set.'),
        tools: z.array(z.object({ name: z.string(), description: z.string() })),
      })
      .meta({ id: 'AgentTools' }),
    handler: {
      rpc: 'agents.getAgentTools',
      request: ref,
      response: (res) => ({ patterns: res.patterns, usesDefault: res.usesDefault, tools: res.tools }),
    },
  }),
  route({
    ...common,
    id: 'agents.ask',
    method: 'post',
    effect: 'creates',
    path: '/agents/:id/ask',
    summary: 'Ask the agent something in a new thread and wait (at most timeoutMs) for its answer: delegation in one call.',
    errors: ['agent_not_found'],
    params,
    body: z
      .object({
        message: z.string().min(1, 'must not be empty').describe('The question or task (at most 32000 characters).'),
        title: z.string().max(200).optional().describe('The new thread’s title.'),
        timeoutMs: z.number().int().min(100).max(30_000).default(20_000).describe('How long to wait for the answer (100 to 30000 ms).'),
      })
      .strict()
      .meta({ id: 'AskAgentRequest' }),
    response: z
      .object({
        threadId: z.string().describe('The thread holding the conversation: continue it with threads.inject.'),
        runId: z.string(),
        status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']).describe('The run’s status when answered.'),
        timedOut: z.boolean().describe('true: the run was still working when the time was up (threads.wait waits more).'),
        reply: Nullable(ThreadMessage).describe('The agent’s last message.'),
      })
      .meta({ id: 'AgentAnswer' }),
    handler: {
      rpc: 'agents.askAgent',
      request: (i) => ({ agentId: i.params.id, message: i.body.message, title: i.body.title, timeoutMs: i.body.timeoutMs }),
      response: (res) => ({
        threadId: res.threadId,
        runId: res.runId,
        status: res.status as 'queued' | 'running' | 'completed' | 'failed' | 'cancelled',
        timedOut: res.timedOut,
        reply: res.reply ? messageJson(res.reply) : null,
      }),
      deadlineMs: 40_000,
    },
  }),
  route({
    ...common,
    id: 'agents.cancelRuns',
    method: 'post',
    effect: 'deletes',
    path: '/agents/:id/cancel-runs',
    summary: 'Stop the agent: each of its running or queued runs is cancelled, its model turn or tool call in progress aborted (as threads.cancel).',
    errors: ['agent_not_found'],
    params,
    response: z.object({ runIds: z.array(z.string()).describe('The runs asked to stop.') }).meta({ id: 'CancelledAgentRuns' }),
    status: 202,
    handler: { rpc: 'agents.cancelAgentRuns', request: ref, response: (res) => ({ runIds: res.runIds }) },
  }),
];
