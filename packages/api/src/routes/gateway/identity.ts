import { z } from 'zod';

import { Nullable, route, Timestamp } from '../../route.js';

const AccountRef = z.object({ id: z.string(), kind: z.string(), name: z.string(), createdAt: Timestamp });

export const Me = z
  .object({
    kind: z.enum(['human', 'agent', 'host']).describe('Principal kind.'),
    userId: Nullable(z.string()),
    agentId: Nullable(z.string()),
    accountId: z.string().describe('The account this request acts in.'),
    keyId: z.string(),
    projectId: Nullable(z.string()).describe('Project scope of the key, if any.'),
    account: AccountRef.nullable(),
    organizations: z.array(AccountRef.extend({ role: z.string() })),
  })
  .meta({ id: 'Me' });

export const identityRoutes = [
  route({
    id: 'me.get',
    method: 'get',
    path: '/me',
    summary: "The caller's identity: principal kind, account, key, project scope, organizations.",
    errors: ['account_not_found', 'project_scope'],
    tag: 'identity',
    response: Me,
    auth: 'key',
    principals: ['human', 'agent', 'host'],
    authority: false,
    handler: { kind: 'local', name: 'me' },
  }),
];
