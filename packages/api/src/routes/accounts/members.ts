import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { AccountId, ListQuery, Nullable, reply, route, Success, Timestamp } from '../../route.js';
import { AccountParams, list, page, Role, success } from './shared.js';

/** An organization's members and their roles. */

export const Member = z
  .object({ accountId: z.string(), name: z.string(), email: Nullable(z.string()), role: Role, addedAt: Timestamp })
  .meta({ id: 'Member' });

/** A member as the API shows it (the service always names the member's account). */
export const memberJson = (m: accounts.Member) => ({
  accountId: m.account!.id,
  name: m.account!.name,
  email: m.account!.email ?? null,
  role: m.role,
  addedAt: m.addedAt,
});

export const memberRoutes = [
  route({
    id: 'accounts.members.list',
    method: 'get',
    path: '/accounts/:id/members',
    summary: "An organization's members and their roles.",
    errors: ['account_not_found'],
    tag: 'accounts',
    params: AccountParams,
    query: ListQuery,
    response: list('members', Member, 'MemberList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.listMembers',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res) => ({ members: res.members.map(memberJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'accounts.members.add',
    statuses: { 200: 'Already a member: their role, changed if it differs.' },
    method: 'post',
    effect: 'creates',
    path: '/accounts/:id/members',
    summary: 'Add a person (a user account) to an organization, or change their role (201 when added, 200 otherwise).',
    errors: ['account_not_found', 'insufficient_role', 'invalid_member', 'last_owner', 'not_an_organization'],
    tag: 'accounts',
    params: AccountParams,
    body: z.object({ accountId: AccountId, role: Role }).strict().meta({ id: 'AddMemberRequest' }),
    response: Member,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.addMember',
      request: (i) => ({ accountId: i.params.id, memberId: i.body.accountId, role: i.body.role }),
      response: (res) => reply(memberJson(res.member!), { status: res.created ? 201 : 200 }),
    },
  }),
  route({
    id: 'accounts.members.remove',
    statuses: { 409: 'The last owner of an organization cannot leave it (`last_owner`).' },
    method: 'delete',
    path: '/accounts/:id/members/:memberId',
    summary: 'Remove a member (anyone may leave; an organization keeps at least one owner).',
    errors: ['account_not_found', 'last_owner'],
    tag: 'accounts',
    params: z.object({ id: AccountId, memberId: AccountId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.removeMember',
      request: (i) => ({ accountId: i.params.id, memberId: i.params.memberId }),
      response: success,
    },
  }),
];
