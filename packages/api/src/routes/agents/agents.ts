import { z } from 'zod';

import type { agents } from '@svc/proto';

import { AccountId, AgentId, ListQuery, Nullable, ProjectId, route, type RouteInput, Timestamp } from '../../route.js';
import { AgentDescription, AgentInstructions, AgentModel, AgentName } from '../../schemas/agents.js';

/**
 * Agents as principals (issue 4): an agent acts inside its owner's account. Its keys live at
 * /agents/:id/keys (routes/keys/keys.ts). Moving an agent to another owner (`ownerAccountId` in PATCH)
 * is an authority change: the agents service answers 403 human_principal_required to an agent key.
 */

const Name = AgentName;
const Description = AgentDescription;
const Model = AgentModel;
const Instructions = AgentInstructions;
const Tools = z
  .array(z.string().regex(/^[a-z0-9_*]{1,100}$/, 'must be a tool name or a pattern with * (a-z, 0-9, _)'))
  .max(200)
  .describe('Tools its runs may call: names or patterns with * (set by a person).');
const MaxSteps = z.number().int().min(1).max(1000).describe('Steps per run (set by a person).');
const MaxTokens = z.number().int().min(100).max(100_000_000).describe('Input plus output tokens per run (set by a person).');

export const Agent = z
  .object({
    id: z.string(),
    ownerAccountId: z.string().describe('The account the agent acts in.'),
    name: z.string(),
    description: Nullable(z.string()),
    model: Nullable(z.string()),
    instructions: Nullable(z.string()),
    projectId: Nullable(z.string()),
    tools: Nullable(z.array(z.string())).describe('The tools its runs may call (names or * patterns); null: the default set (docs/threads.md).'),
    maxSteps: Nullable(z.number().int()).describe('Steps per run; null: the platform default.'),
    maxTokensPerRun: Nullable(z.number().int()).describe('Input plus output tokens per run; null: the platform default.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Agent' });

/** An agent as the API shows it. */
export const agentJson = (a: agents.Agent) => ({
  id: a.id,
  ownerAccountId: a.ownerAccountId,
  name: a.name,
  description: a.description ?? null,
  model: a.model ?? null,
  instructions: a.instructions ?? null,
  projectId: a.projectId ?? null,
  tools: a.hasTools ? a.tools : null,
  maxSteps: a.maxSteps ?? null,
  maxTokensPerRun: a.maxTokensPerRun ?? null,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});

const CreateAgentBody = z
  .object({
    name: Name,
    description: Description.optional(),
    model: Model.optional(),
    instructions: Instructions.optional(),
    projectId: ProjectId.optional().describe('A project-scoped key creates agents in its own project.'),
    tools: Tools.optional(),
    maxSteps: MaxSteps.optional(),
    maxTokensPerRun: MaxTokens.optional(),
  })
  .strict()
  .meta({ id: 'CreateAgentRequest' });

const UpdateAgentBody = z
  .object({
    name: Name.optional(),
    description: Description.nullable().optional(),
    model: Model.nullable().optional(),
    instructions: Instructions.nullable().optional(),
    ownerAccountId: AccountId.optional().describe('Move the agent to another account (a person managing both; its keys are revoked).'),
    tools: Tools.nullable().optional(),
    maxSteps: MaxSteps.nullable().optional(),
    maxTokensPerRun: MaxTokens.nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
  .meta({ id: 'UpdateAgentRequest' });

const params = z.object({ id: AgentId });
const byId = (i: RouteInput<{ id: string }>) => ({ id: i.params.id });

function updateReq(i: RouteInput<{ id: string }, unknown, z.output<typeof UpdateAgentBody>>) {
  const b = i.body;
  const clearFields = (['description', 'model', 'instructions', 'tools', 'maxSteps', 'maxTokensPerRun'] as const).filter((f) => b[f] === null);
  const set = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== null));
  return { id: i.params.id, ...set, hasTools: Array.isArray(b.tools), tools: Array.isArray(b.tools) ? b.tools : [], clearFields };
}

export const DefaultAgents = z
  .object({ agentIds: z.array(z.string()), agents: z.array(Agent) })
  .meta({ id: 'DefaultAgents', description: 'The account’s default agents, in order.' });
export const defaults = (res: agents.GetDefaultAgentsResponse | agents.SetDefaultAgentsResponse) => ({
  agentIds: res.agents.map((a) => a.id),
  agents: res.agents.map(agentJson),
});

export const agentsRoutes = [
  route({
    id: 'agents.list',
    method: 'get',
    path: '/agents',
    summary: 'Agents of the acting account (of its project, for a project-scoped key), newest first.',
    errors: ['project_scope'],
    tag: 'agents',
    query: ListQuery.extend({ projectId: ProjectId.optional() }),
    response: z.object({ agents: z.array(Agent), nextCursor: Nullable(z.string()) }).meta({ id: 'AgentList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.listAgents',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor, projectId: i.query.projectId }),
      response: (res) => ({ agents: res.agents.map(agentJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'agents.create',
    method: 'post',
    effect: 'creates',
    path: '/agents',
    summary: 'Create an agent in the acting account: its name, model, instructions and the tools its runs may call. Returns the agent.',
    errors: ['project_scope'],
    tag: 'agents',
    body: CreateAgentBody,
    response: Agent,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.createAgent',
      request: (i) => ({ ...i.body, hasTools: Array.isArray(i.body.tools), tools: i.body.tools ?? [] }),
      response: (res) => agentJson(res.agent!),
    },
  }),
  route({
    id: 'defaultAgents.get',
    method: 'get',
    path: '/default-agents',
    summary: "The acting account's default agents, in order.",
    tag: 'agents',
    response: DefaultAgents,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { rpc: 'agents.getDefaultAgents', request: () => ({}), response: defaults },
  }),
  route({
    id: 'defaultAgents.set',
    method: 'put',
    effect: 'overwrites',
    path: '/default-agents',
    summary: "Replace the acting account's default agents (ordered agent ids of the account, at most 20).",
    errors: ['agent_not_found'],
    tag: 'agents',
    body: z
      .object({
        agentIds: z.array(AgentId).max(20, 'may hold at most 20 agents').describe('The account’s default agents from now on, in order (at most 20).'),
      })
      .strict()
      .meta({ id: 'SetDefaultAgentsRequest' }),
    response: DefaultAgents,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.setDefaultAgents',
      request: (i) => ({ agentIds: i.body.agentIds }),
      response: defaults,
    },
  }),
  route({
    id: 'agents.get',
    method: 'get',
    path: '/agents/:id',
    summary: 'An agent of the acting account (404 for any other).',
    errors: ['agent_not_found'],
    tag: 'agents',
    params,
    response: Agent,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { rpc: 'agents.getAgent', request: byId, response: (res) => agentJson(res.agent!) },
  }),
  route({
    id: 'agents.update',
    method: 'patch',
    effect: 'updates',
    path: '/agents/:id',
    summary: 'Change an agent (null clears description, model, instructions); a new ownerAccountId moves it (a person only).',
    errors: ['account_not_found', 'agent_not_found', 'human_principal_required'],
    tag: 'agents',
    params,
    body: UpdateAgentBody,
    response: Agent,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.updateAgent',
      request: updateReq,
      response: (res) => agentJson(res.agent!),
    },
  }),
  route({
    id: 'agents.delete',
    method: 'delete',
    path: '/agents/:id',
    summary: 'Delete an agent; its keys are revoked at once.',
    errors: ['agent_not_found'],
    tag: 'agents',
    params,
    response: z.object({ success: z.literal(true), revokedKeys: z.number().int() }).meta({ id: 'DeletedAgent' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.deleteAgent',
      request: byId,
      response: (res) => ({ success: true as const, revokedKeys: res.revokedKeys }),
    },
  }),
];
