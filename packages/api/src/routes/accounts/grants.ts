import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, reply, route, Success, Timestamp } from '../../route.js';
import { GrantScope, GrantVerb } from '../../schemas/accounts.js';
import { AccountParams, Iso, list, page, PrincipalRef, principalRef, success } from './shared.js';

/** Standing grants: the grants an account gives, the ones the caller holds, creating (or widening) and deleting one. */

const GrantId = prefixedId('grt', 'a standing grant id');

export const Grant = z
  .object({
    id: z.string(),
    accountId: z.string().describe('The account that gives the grant.'),
    granteeKind: z.enum(['agent', 'host', 'account']),
    granteeId: z.string(),
    verbs: z.array(z.string()),
    scope: z.string(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    createdBy: PrincipalRef,
  })
  .meta({ id: 'StandingGrant' });

/** A standing grant as the API shows it. */
export const grantJson = (g: accounts.Grant) => ({
  id: g.id,
  accountId: g.accountId,
  granteeKind: g.granteeKind,
  granteeId: g.granteeId,
  verbs: g.verbs,
  scope: g.scope,
  expiresAt: g.expiresAt ?? null,
  createdAt: g.createdAt,
  updatedAt: g.updatedAt,
  createdBy: principalRef(g.createdBy),
});
const GrantBody = z
  .object({
    granteeId: z
      .string()
      .regex(/^(agt|host|acct)_[0-9a-z]{26}$/, 'must be an agent (agt_…), host (host_…) or account (acct_…) id')
      .describe('Who receives the grant: an agent, a host or another account.'),
    verbs: z.array(GrantVerb).min(1, 'must hold at least one verb').max(50, 'may hold at most 50 verbs'),
    scope: GrantScope.optional().describe(
      'Default "account" (the whole account). "project:<id>" is a project (a project-scoped key grants inside its own only); "host:<id>" one host; "host:<id>/<unit>" one unit of a host. A structured value, never a path.',
    ),
    expiresAt: Iso.optional().describe('When the grant ends (in the future). Default: never.'),
  })
  .strict()
  .meta({ id: 'CreateStandingGrantRequest' });

export const grantRoutes = [
  route({
    id: 'grants.list',
    method: 'get',
    path: '/accounts/:id/standing-grants',
    summary: 'Live standing grants given by an account (a project-scoped key sees its project only).',
    errors: ['account_not_found'],
    tag: 'grants',
    params: AccountParams,
    query: ListQuery,
    response: list('grants', Grant, 'StandingGrantList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.listGrants',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res) => ({ grants: res.grants.map(grantJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'grants.create',
    statuses: { 200: 'The live grant for the same grantee and scope, widened.' },
    method: 'post',
    effect: 'creates',
    path: '/accounts/:id/standing-grants',
    summary: 'Give a grantee verbs on a scope (201), or widen the live grant for the same grantee and scope (200). A person only, never through MCP.',
    errors: ['account_not_found', 'grantee_not_found', 'invalid_grantee', 'project_scope'],
    tag: 'grants',
    params: AccountParams,
    body: GrantBody,
    response: Grant,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.createGrant',
      request: (i) => ({ accountId: i.params.id, ...i.body }),
      response: (res) => reply(grantJson(res.grant!), { status: res.outcome === 'created' ? 201 : 200 }),
    },
  }),
  route({
    id: 'grants.held',
    method: 'get',
    path: '/standing-grants/held',
    summary: 'Live grants the caller holds (given to its agent id, its person or its acting account).',
    errors: ['invalid_host_credential'],
    tag: 'grants',
    query: ListQuery,
    response: list('grants', Grant, 'HeldGrantList'),
    auth: 'key',
    principals: ['human', 'agent', 'host'],
    authority: false,
    handler: {
      rpc: 'accounts.listHeldGrants',
      request: page,
      response: (res) => ({ grants: res.grants.map(grantJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'grants.delete',
    method: 'delete',
    path: '/standing-grants/:id',
    summary: 'Delete a standing grant at once (deleting it again succeeds).',
    errors: ['grant_not_found'],
    tag: 'grants',
    params: z.object({ id: GrantId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: { rpc: 'accounts.deleteGrant', request: (i) => ({ id: i.params.id }), response: success },
  }),
];
