import { z } from 'zod';

import type { agents_approvals } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, route, type RouteInput, Timestamp } from '../../route.js';
import { ThreadId } from './threads.js';

/**
 * Approvals and questions to a person (docs/threads.md, "Approvals"): which tools need a person's
 * approval (per agent, per thread), the requests a paused run waits on, and a person's decision.
 * Deciding and setting the policies change what an agent may do: a person through the API only
 * (`personOnly`: an agent key or the MCP channel answers 403 `human_principal_required`; they are
 * no MCP tools, but are in the SDKs and the `svc` command).
 */

const ApprovalId = prefixedId('apr', 'an approval id');
const Patterns = z
  .array(z.string().regex(/^[a-z0-9_*]{1,100}$/, 'must be a tool name or a pattern with * (a-z, 0-9, _)'))
  .max(200)
  .describe('Tool names, or patterns with * (host_call, trade_*, write_drive_file, delete_*…).');
const STATUS = ['pending', 'approved', 'rejected', 'expired', 'cancelled', 'answered'] as const;

export const Approval = z
  .object({
    id: z.string(),
    kind: z.enum(['approval', 'question']).describe('approval: a tool call waits for a person; question: the agent asked its person (ask_person).'),
    threadId: z.string(),
    runId: z.string(),
    agentId: z.string(),
    callId: z.string(),
    step: z.number().int(),
    tool: z.string(),
    arguments: z.unknown().describe('The call’s arguments as the model asked (a question’s: {question}).'),
    status: z.enum(STATUS),
    editedArguments: Nullable(z.record(z.string(), z.unknown())).describe('The arguments a person approved instead, if they edited them.'),
    reason: Nullable(z.string()).describe('Why it was rejected (the model sees it), or expired.'),
    answer: Nullable(z.string()).describe('A question’s answer: the person’s message.'),
    answerMessageId: Nullable(z.string()),
    decidedBy: Nullable(z.object({ kind: z.string(), id: z.string() }).loose()),
    decidedAt: Nullable(Timestamp),
    expiresAt: Timestamp.describe('Unanswered by then, it counts as rejected (SVC_RUN_APPROVAL_TTL_SECONDS).'),
    createdAt: Timestamp,
  })
  .meta({ id: 'Approval' });

export const approvalJson = (a: agents_approvals.Approval) => ({
  id: a.id,
  kind: a.kind as 'approval' | 'question',
  threadId: a.threadId,
  runId: a.runId,
  agentId: a.agentId,
  callId: a.callId,
  step: a.step,
  tool: a.tool,
  arguments: JSON.parse(a.argumentsJson || 'null') as unknown,
  status: a.status as (typeof STATUS)[number],
  editedArguments: a.editedArgumentsJson ? (JSON.parse(a.editedArgumentsJson) as Record<string, unknown>) : null,
  reason: a.reason ?? null,
  answer: a.answer ?? null,
  answerMessageId: a.answerMessageId ?? null,
  decidedBy: a.decidedByJson ? (JSON.parse(a.decidedByJson) as { kind: string; id: string }) : null,
  decidedAt: a.decidedAt ?? null,
  expiresAt: a.expiresAt,
  createdAt: a.createdAt,
});

const AgentPolicy = z.object({ agentId: z.string(), tools: z.array(z.string()), updatedAt: Nullable(Timestamp) }).meta({ id: 'AgentApprovalPolicy' });
const ThreadPolicy = z
  .object({
    threadId: z.string(),
    tools: z.array(z.string()).describe('The patterns in force: the thread’s own, or else its agent’s.'),
    threadTools: Nullable(z.array(z.string())).describe('The thread’s own list (null: its agent’s applies).'),
    agentTools: z.array(z.string()),
  })
  .meta({ id: 'ThreadApprovalPolicy' });
const threadPolicyJson = (p: agents_approvals.ThreadApprovalPolicy) => ({
  threadId: p.threadId,
  tools: p.tools,
  threadTools: p.hasThreadTools ? p.threadTools : null,
  agentTools: p.agentTools,
});

const common = { tag: 'threads', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };
/** A person's decision through the API: an agent key or the MCP channel gets 403 human_principal_required; no MCP tool. */
const person = { ...common, personOnly: true };
const refParams = z.object({ id: ThreadId, approvalId: ApprovalId });
const ref = (i: RouteInput<{ id: string; approvalId: string }>) => ({ threadId: i.params.id, approvalId: i.params.approvalId });
const Status = z.enum(STATUS).optional().describe('Only requests in this state (default: all).');
const limit = ListQuery.shape.limit;
const one = (res: agents_approvals.ApprovalResponse) => approvalJson(res.approval!);
const NOT_PENDING = {
  409: 'The request is no longer pending (`approval_not_pending`, its `status` in details) or it expired (`approval_expired`).',
};

export const approvalsRoutes = [
  route({
    ...common,
    id: 'approvals.list',
    method: 'get',
    path: '/me/approvals',
    summary: 'The acting account’s requests for a person (tool calls to approve, questions of agents), oldest first; `?status=pending`.',
    query: z.object({ status: Status, limit }),
    response: z.object({ approvals: z.array(Approval) }).meta({ id: 'ApprovalList' }),
    handler: {
      rpc: 'agents.listApprovals',
      request: (i) => ({ status: i.query.status, limit: i.query.limit }),
      response: (res) => ({ approvals: res.approvals.map(approvalJson) }),
    },
  }),
  route({
    ...common,
    id: 'threads.approvals.list',
    method: 'get',
    path: '/threads/:id/approvals',
    summary: 'The thread’s requests for a person, oldest first; `?status=pending` lists what its paused run waits on.',
    errors: ['thread_not_found'],
    params: z.object({ id: ThreadId }),
    query: z.object({ status: Status, limit }),
    response: z.object({ approvals: z.array(Approval) }).meta({ id: 'ThreadApprovalList' }),
    handler: {
      rpc: 'agents.listApprovals',
      request: (i) => ({ threadId: i.params.id, status: i.query.status, limit: i.query.limit }),
      response: (res) => ({ approvals: res.approvals.map(approvalJson) }),
    },
  }),
  route({
    ...common,
    id: 'threads.approvals.get',
    method: 'get',
    path: '/threads/:id/approvals/:approvalId',
    summary: 'One request of the thread (404 approval_not_found).',
    errors: ['thread_not_found'],
    params: refParams,
    response: Approval,
    handler: { rpc: 'agents.getApproval', request: ref, response: one },
  }),
  route({
    ...person,
    id: 'threads.approvals.approve',
    method: 'post',
    effect: 'updates',
    statuses: NOT_PENDING,
    path: '/threads/:id/approvals/:approvalId/approve',
    summary:
      'Approve a tool call the paused run waits on, as asked or with edited `arguments`; the run resumes from its checkpoint on any worker. A person through the API only.',
    errors: ['approval_not_found', 'approval_not_pending', 'thread_not_found'],
    params: refParams,
    body: z
      .object({ arguments: z.record(z.string(), z.unknown()).optional().describe('Run the call with these arguments instead of the model’s.') })
      .strict()
      .meta({ id: 'ApproveRequest' }),
    response: Approval,
    handler: {
      rpc: 'agents.approveToolCall',
      request: (i) => ({ ...ref(i), argumentsJson: i.body.arguments === undefined ? undefined : JSON.stringify(i.body.arguments) }),
      response: one,
    },
  }),
  route({
    ...person,
    id: 'threads.approvals.reject',
    method: 'post',
    effect: 'updates',
    statuses: NOT_PENDING,
    path: '/threads/:id/approvals/:approvalId/reject',
    summary: 'Reject a tool call the paused run waits on: it is not run, and the model sees the `reason` as the call’s error (tool_rejected).',
    errors: ['approval_not_pending', 'thread_not_found'],
    params: refParams,
    body: z
      .object({ reason: z.string().max(2000).optional().describe('Why; the model reads it.') })
      .strict()
      .meta({ id: 'RejectRequest' }),
    response: Approval,
    handler: { rpc: 'agents.rejectToolCall', request: (i) => ({ ...ref(i), reason: i.body.reason }), response: one },
  }),
  route({
    ...common,
    id: 'agents.approvalPolicy.get',
    tag: 'agents',
    method: 'get',
    path: '/agents/:id/approval-policy',
    summary: 'The tools whose calls by this agent wait for a person’s approval (empty: none).',
    errors: ['agent_not_found'],
    params: z.object({ id: AgentId }),
    response: AgentPolicy,
    handler: {
      rpc: 'agents.getAgentApprovalPolicy',
      request: (i) => ({ agentId: i.params.id }),
      response: (res) => ({ agentId: res.agentId, tools: res.tools, updatedAt: res.updatedAt ?? null }),
    },
  }),
  route({
    ...person,
    id: 'agents.approvalPolicy.set',
    tag: 'agents',
    method: 'put',
    effect: 'overwrites',
    path: '/agents/:id/approval-policy',
    summary:
      'Set which tools need a person’s approval before this agent’s runs call them (replaces the list; [] for none). A person through the API only.',
    errors: ['agent_not_found'],
    params: z.object({ id: AgentId }),
    body: z.object({ tools: Patterns }).strict().meta({ id: 'SetAgentApprovalPolicyRequest' }),
    response: AgentPolicy,
    handler: {
      rpc: 'agents.setAgentApprovalPolicy',
      request: (i) => ({ agentId: i.params.id, tools: i.body.tools }),
      response: (res) => ({ agentId: res.agentId, tools: res.tools, updatedAt: res.updatedAt ?? null }),
    },
  }),
  route({
    ...common,
    id: 'threads.approvalPolicy.get',
    method: 'get',
    path: '/threads/:id/approval-policy',
    summary: 'The tools whose calls in this thread wait for a person: the thread’s own list, or its agent’s.',
    errors: ['thread_not_found'],
    params: z.object({ id: ThreadId }),
    response: ThreadPolicy,
    handler: { rpc: 'agents.getThreadApprovalPolicy', request: (i) => ({ threadId: i.params.id }), response: threadPolicyJson },
  }),
  route({
    ...person,
    id: 'threads.approvalPolicy.set',
    method: 'put',
    effect: 'overwrites',
    path: '/threads/:id/approval-policy',
    summary: 'Override the agent’s approval list for this thread (`tools`), or drop the override (`tools: null`). A person through the API only.',
    errors: ['thread_not_found'],
    params: z.object({ id: ThreadId }),
    body: z.object({ tools: Patterns.nullable() }).strict().meta({ id: 'SetThreadApprovalPolicyRequest' }),
    response: ThreadPolicy,
    handler: {
      rpc: 'agents.setThreadApprovalPolicy',
      request: (i) => ({ threadId: i.params.id, tools: i.body.tools ?? [], clear: i.body.tools === null }),
      response: threadPolicyJson,
    },
  }),
];
