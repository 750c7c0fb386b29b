import { z } from 'zod';

import { AccountId, Nullable, prefixedId, route } from '../../route.js';
import { AuditEvent, auditJson } from './audit.js';
import { Grant, grantJson } from './grants.js';
import { Host, hostJson } from './hosts.js';
import { Member, memberJson } from './members.js';
import { Name } from './shared.js';

/** One thing at a time: a host, renaming it, a member, an audit event, and what the caller may do (docs/accounts.md). */

const HostId = prefixedId('host', 'a host id');
const common = { tag: 'accounts', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };

export const lookupRoutes = [
  route({
    ...common,
    id: 'me.permissions',
    method: 'get',
    path: '/me/permissions',
    summary:
      'What the caller may do in its acting account: its standing (owner, admin, member, agent), whether authority changes are open to it here, the standing grants it holds.',
    tag: 'identity',
    response: z
      .object({
        kind: z.enum(['human', 'agent', 'host']),
        accountId: z.string(),
        channel: z.string().describe('api or mcp: authority changes are made through the API only.'),
        standing: z.string().describe('owner, admin, member, agent or host.'),
        projectId: Nullable(z.string()),
        canChangeAuthority: z
          .boolean()
          .describe('Members, grants, settings, keys of others: a person with the owner or admin role, through the API, with an unscoped key.'),
        canManage: z.boolean().describe('The owner or admin role (pairing hosts, renaming them, reading the audit trail).'),
        heldGrants: z.array(Grant).describe('Standing grants held (the first 100).'),
      })
      .meta({ id: 'Permissions' }),
    handler: {
      rpc: 'accounts.getPermissions',
      request: () => ({}),
      response: (res) => ({
        kind: res.kind as 'human' | 'agent' | 'host',
        accountId: res.accountId,
        channel: res.channel,
        standing: res.standing,
        projectId: res.projectId ?? null,
        canChangeAuthority: res.canChangeAuthority,
        canManage: res.canManage,
        heldGrants: res.heldGrants.map(grantJson),
      }),
    },
  }),
  route({
    ...common,
    id: 'accounts.members.get',
    method: 'get',
    path: '/accounts/:id/members/:memberId',
    summary: 'One member of the account and its role (404 member_not_found for anyone else).',
    errors: ['account_not_found', 'member_not_found'],
    params: z.object({ id: AccountId, memberId: AccountId }),
    response: Member,
    handler: {
      rpc: 'accounts.getMember',
      request: (i) => ({ accountId: i.params.id, memberId: i.params.memberId }),
      response: (res) => memberJson(res.member!),
    },
  }),
  route({
    ...common,
    id: 'accounts.auditEvent',
    method: 'get',
    path: '/accounts/:id/audit/:eventId',
    summary: 'One event of the account’s audit trail (owners and admins).',
    errors: ['account_not_found', 'audit_event_not_found', 'insufficient_role'],
    params: z.object({ id: AccountId, eventId: prefixedId('evt', 'an event id') }),
    response: AuditEvent,
    handler: {
      rpc: 'accounts.getAuditEvent',
      request: (i) => ({ accountId: i.params.id, eventId: i.params.eventId }),
      response: (res) => auditJson(res.event!),
    },
  }),
  route({
    ...common,
    id: 'hosts.get',
    method: 'get',
    path: '/hosts/:hostId',
    summary: 'One paired host: its name, credential prefix, who paired it, when it was last seen.',
    errors: ['host_not_found'],
    params: z.object({ hostId: HostId }),
    response: Host,
    handler: { rpc: 'accounts.getHost', request: (i) => ({ hostId: i.params.hostId }), response: (res) => hostJson(res.host!) },
  }),
  route({
    ...common,
    id: 'hosts.rename',
    method: 'patch',
    effect: 'updates',
    path: '/hosts/:hostId',
    summary: 'Rename a paired host (owners and admins of its account).',
    errors: ['host_not_found', 'insufficient_role'],
    params: z.object({ hostId: HostId }),
    body: z.object({ name: Name }).strict().meta({ id: 'RenameHostRequest' }),
    response: Host,
    handler: {
      rpc: 'accounts.renameHost',
      request: (i) => ({ hostId: i.params.hostId, name: i.body.name }),
      response: (res) => hostJson(res.host!),
    },
  }),
];
