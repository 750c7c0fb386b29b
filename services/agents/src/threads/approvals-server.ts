import { DomainError, type Handlers } from '@svc/kit';
import type { agents_approvals } from '@svc/proto';

import type { ApprovalsDomain } from './approvals.js';
import type { ApprovalRow } from './approvals-store.js';

type Def = typeof agents_approvals.ApprovalsServiceService;
type ApprovalHandlers = Pick<
  Handlers<Def>,
  | 'listApprovals'
  | 'getApproval'
  | 'approveToolCall'
  | 'rejectToolCall'
  | 'getAgentApprovalPolicy'
  | 'setAgentApprovalPolicy'
  | 'getThreadApprovalPolicy'
  | 'setThreadApprovalPolicy'
>;

export function toApproval(a: ApprovalRow): agents_approvals.Approval {
  return {
    id: a.id,
    kind: a.kind,
    threadId: a.thread_id,
    runId: a.run_id,
    agentId: a.agent_id,
    callId: a.call_id,
    step: a.step,
    tool: a.tool,
    argumentsJson: JSON.stringify(a.arguments ?? null),
    status: a.status,
    editedArgumentsJson: a.edited_arguments === null || a.edited_arguments === undefined ? undefined : JSON.stringify(a.edited_arguments),
    reason: a.reason ?? undefined,
    answer: a.answer ?? undefined,
    answerMessageId: a.answer_message_id ?? undefined,
    decidedByJson: a.decided_by ? JSON.stringify(a.decided_by) : undefined,
    decidedAt: a.decided_at?.toISOString(),
    expiresAt: a.expires_at.toISOString(),
    createdAt: a.created_at.toISOString(),
  };
}

function argumentsOf(json: string | undefined): unknown {
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw new DomainError('invalid_argument', 'invalid_request', 'arguments: must be a JSON object.');
  }
}

/** gRPC handlers of approvals: translate messages, let the domain decide. */
export function approvalHandlers(domain: ApprovalsDomain): ApprovalHandlers {
  return {
    async listApprovals(req, { principal }) {
      return { approvals: (await domain.list(principal, req)).map(toApproval) };
    },
    async getApproval(req, { principal }) {
      return { approval: toApproval(await domain.get(principal, req.threadId, req.approvalId)) };
    },
    async approveToolCall(req, { principal }) {
      const a = await domain.decide(principal, req.threadId, req.approvalId, { approve: true, args: argumentsOf(req.argumentsJson) });
      return { approval: toApproval(a) };
    },
    async rejectToolCall(req, { principal }) {
      return { approval: toApproval(await domain.decide(principal, req.threadId, req.approvalId, { approve: false, reason: req.reason })) };
    },
    async getAgentApprovalPolicy(req, { principal }) {
      const p = await domain.agentPolicy(principal, req.agentId);
      return { agentId: p.agentId, tools: p.tools, updatedAt: p.updatedAt?.toISOString() };
    },
    async setAgentApprovalPolicy(req, { principal }) {
      const p = await domain.setAgentPolicy(principal, req.agentId, req.tools);
      return { agentId: p.agentId, tools: p.tools, updatedAt: p.updatedAt?.toISOString() };
    },
    async getThreadApprovalPolicy(req, { principal }) {
      return policyView(await domain.threadPolicy(principal, req.threadId));
    },
    async setThreadApprovalPolicy(req, { principal }) {
      return policyView(await domain.setThreadPolicy(principal, req.threadId, req.clear ? null : req.tools));
    },
  };
}

function policyView(p: { threadId: string; tools: string[]; threadTools: string[] | null; agentTools: string[] }) {
  return { threadId: p.threadId, tools: p.tools, threadTools: p.threadTools ?? [], hasThreadTools: p.threadTools !== null, agentTools: p.agentTools };
}
