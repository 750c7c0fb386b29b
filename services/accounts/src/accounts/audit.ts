import { DomainError, newId, type Principal } from '@svc/kit';

import { requireManager } from './access.js';
import { AccountsCore, decodeCursor, limitOf, type Page, paged } from './core.js';
import type { Actor, AuditRow } from './store.js';

/** The audit trail: read by an account's managers; agent events become entries of the accounts they touch. */
export class Audit extends AccountsCore {
  async listAudit(p: Principal, accountId: string, page: Page & { action?: string }): Promise<{ rows: AuditRow[]; nextCursor?: string }> {
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    if (page.action !== undefined && !/^[a-z_]+\.[a-z_]+$/.test(page.action)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'action: must look like grant.created');
    }
    const limit = limitOf(page.limit);
    const rows = await this.store.audit(accountId, {
      before: decodeCursor(page.cursor, /^evt_[0-9a-z]{26}$/),
      limit: limit + 1,
      action: page.action,
    });
    return paged(rows, limit);
  }

  /**
   * Agent events become audit entries of the accounts they touch (the agents service publishes
   * them through its outbox; this runs once per event).
   */
  auditRowsForAgentEvent(event: { id: string; type: string; occurredAt: string; accountId: string; data: unknown }): AuditRow[] {
    const d = event.data as {
      agent?: { id?: string; name?: string };
      actor?: Actor;
      fromAccountId?: string;
      toAccountId?: string;
      revokedKeys?: number;
    };
    const action = {
      'agents.agent.created': 'agent.created',
      'agents.agent.deleted': 'agent.deleted',
      'agents.agent.owner_changed': 'agent.owner_changed',
      'agents.agent.restored': 'agent.restored',
      // A person's decision on an agent's tool call, an approval expired, a policy set (docs/threads.md, "Approvals").
      'agents.agent.approval_approved': 'approval.approved',
      'agents.agent.approval_rejected': 'approval.rejected',
      'agents.agent.approval_expired': 'approval.expired',
      'agents.agent.approval_policy_updated': 'approval_policy.updated',
    }[event.type];
    if (!action || !d?.agent?.id || !d.actor) return [];
    const base = {
      action,
      actor: d.actor,
      target_kind: 'agent',
      target_id: d.agent.id,
      occurred_at: new Date(event.occurredAt),
    };
    const data: Record<string, unknown> = { agentId: d.agent.id, name: d.agent.name ?? null };
    if (action === 'agent.deleted') data.revokedKeys = d.revokedKeys ?? null;
    if (action.startsWith('approval')) {
      const extra = event.data as Record<string, unknown>;
      for (const k of ['approvalId', 'threadId', 'runId', 'tool', 'edited', 'reason', 'tools']) if (k in extra) data[k] = extra[k];
    }
    if (action !== 'agent.owner_changed') return [{ ...base, id: event.id, account_id: event.accountId, data }];
    const moved = { ...data, fromAccountId: d.fromAccountId, toAccountId: d.toAccountId };
    const rows: AuditRow[] = [{ ...base, id: event.id, account_id: d.fromAccountId ?? event.accountId, data: moved }];
    if (d.toAccountId && d.toAccountId !== rows[0]!.account_id) rows.push({ ...base, id: newId('evt'), account_id: d.toAccountId, data: moved });
    return rows;
  }
}
