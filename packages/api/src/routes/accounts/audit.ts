import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { ListQuery, route, Timestamp } from '../../route.js';
import { AccountParams, list, page, PrincipalRef, principalRef } from './shared.js';

/** The account's audit trail: every authority change and who made it. */

export const AuditEvent = z
  .object({
    id: z.string(),
    accountId: z.string(),
    action: z.string().describe('grant.created, grant.widened, grant.deleted, member.added, settings.updated, ...'),
    actor: PrincipalRef,
    target: z.object({ kind: z.string(), id: z.string() }).nullable(),
    data: z.record(z.string(), z.unknown()),
    occurredAt: Timestamp,
  })
  .meta({ id: 'AuditEvent' });

/** An audit event as the API shows it. */
export const auditJson = (e: accounts.AuditEvent) => ({
  id: e.id,
  accountId: e.accountId,
  action: e.action,
  actor: principalRef(e.actor),
  target: e.targetKind && e.targetId ? { kind: e.targetKind, id: e.targetId } : null,
  data: JSON.parse(e.dataJson) as Record<string, unknown>,
  occurredAt: e.occurredAt,
});

export const auditRoutes = [
  route({
    id: 'accounts.audit',
    method: 'get',
    path: '/accounts/:id/audit',
    summary: "The account's audit trail, newest first: every authority change and who made it (owners and admins).",
    errors: ['account_not_found'],
    tag: 'accounts',
    params: AccountParams,
    query: ListQuery.extend({
      action: z
        .string()
        .regex(/^[a-z_]+\.[a-z_]+$/, 'must look like grant.created')
        .optional()
        .describe('Only events of this action, such as grant.created or member.added.'),
    }),
    response: list('events', AuditEvent, 'AuditEventList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.listAudit',
      request: (i) => ({ accountId: i.params.id, ...page(i), action: i.query.action }),
      response: (res) => ({ events: res.events.map(auditJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
];
