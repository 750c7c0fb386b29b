import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { ListQuery, Nullable, route, Timestamp } from '../../route.js';
import { Email } from '../../schemas/accounts.js';
import { AccountParams, list, Name, page, WARNING } from './shared.js';

/** Accounts and organizations: list, create (an organization, or a user account with its first key), the chain of authority, get. */

export const Account = z
  .object({
    id: z.string(),
    kind: z.enum(['user', 'organization']),
    name: z.string(),
    email: Nullable(z.string()),
    createdAt: Timestamp,
    role: Nullable(z.string()).describe("The caller's role in the account (owner, admin, member); null for an agent."),
  })
  .meta({ id: 'Account' });

const ChainLink = z.object({
  kind: z.enum(['agent', 'user', 'organization', 'host']),
  id: z.string(),
  name: z.string(),
  relation: z.enum(['self', 'owner', 'member']),
  role: Nullable(z.string()),
});

export const Chain = z
  .object({
    chain: z.array(ChainLink).describe('From the caller to the account it acts in: agent → owner account → organization.'),
    actingAccountId: z.string(),
    principal: z.object({ kind: z.string(), channel: z.string(), projectId: Nullable(z.string()) }),
    canChangeAuthority: z.boolean(),
  })
  .meta({ id: 'AuthorityChain' });

/** An account as the API shows it. */
const account = (a: accounts.Account) => ({
  id: a.id,
  kind: a.kind,
  name: a.name,
  email: a.email ?? null,
  createdAt: a.createdAt,
  role: a.role ?? null,
});

const CreateAccountBody = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('organization'), name: Name }).strict(),
    z.object({ kind: z.literal('user'), name: Name, email: Email.optional() }).strict(),
  ])
  .meta({
    id: 'CreateAccountRequest',
    description: 'An organization (any person; the caller becomes its owner) or a user account (the operator only).',
  });

const CreatedUser = z
  .object({ account: Account, key: z.string().describe("The new person's first API key. Shown once."), keyId: z.string(), warning: z.string() })
  .meta({ id: 'CreatedUserAccount' });

export const accountRoutes = [
  route({
    id: 'accounts.list',
    method: 'get',
    path: '/accounts',
    summary: 'The accounts the caller can act in: its own and its organizations, with its role.',
    tag: 'accounts',
    query: ListQuery,
    response: list('accounts', Account, 'AccountList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.listAccounts',
      request: page,
      response: (res) => ({
        accounts: res.accounts.map(account),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    id: 'accounts.create',
    method: 'post',
    effect: 'creates',
    path: '/accounts',
    summary: 'Create an organization (the caller becomes its owner), or, as the operator, a user account with its first key.',
    errors: ['email_taken', 'operator_required'],
    tag: 'accounts',
    body: CreateAccountBody,
    response: z.union([Account, CreatedUser]),
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.createAccount',
      request: (i) => i.body,
      response: (res) => (res.key ? { account: account(res.account!), key: res.key, keyId: res.keyId!, warning: WARNING } : account(res.account!)),
    },
  }),
  route({
    id: 'accounts.chain',
    method: 'get',
    path: '/accounts/me/chain',
    summary: "The caller's chain of authority: agent → owner account → organization.",
    tag: 'accounts',
    response: Chain,
    auth: 'key',
    principals: ['human', 'agent', 'host'],
    authority: false,
    handler: {
      rpc: 'accounts.getChain',
      request: () => ({}),
      response: (res) => ({
        chain: res.chain.map((l) => ({ kind: l.kind, id: l.id, name: l.name, relation: l.relation, role: l.role ?? null })),
        actingAccountId: res.actingAccountId,
        principal: { kind: res.principalKind, channel: res.channel, projectId: res.projectId ?? null },
        canChangeAuthority: res.canChangeAuthority,
      }),
    },
  }),
  route({
    id: 'accounts.get',
    method: 'get',
    path: '/accounts/:id',
    summary: 'An account the caller can act in (404 for any other).',
    errors: ['account_not_found'],
    tag: 'accounts',
    params: AccountParams,
    response: Account,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.getAccount',
      request: (i) => ({ id: i.params.id }),
      response: (res) => account(res.account!),
    },
  }),
];
