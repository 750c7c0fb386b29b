import { z } from 'zod';

import type { keys } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, ProjectId, route, type RouteInput, Timestamp } from '../../route.js';
import { created, CreatedKey } from './keys.js';

/**
 * One API key at a time (docs/keys.md): its details (revoked ones too), renaming it, the calling key
 * itself, the revoked keys. The caller's keys at /me/api-keys, an agent's at /agents/:id/keys.
 */

const KeyId = prefixedId('key', 'a key id');

export const KeyDetails = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('The first 12 characters, the only part visible after creation.'),
    projectId: Nullable(z.string()),
    ownerKind: z.enum(['human', 'agent']),
    ownerId: z.string().describe('The person (usr_…) or agent (agt_…) the key acts as.'),
    createdByKeyId: Nullable(z.string()).describe('The key that made it.'),
    lastUsedAt: Nullable(Timestamp),
    usageCount: z.number().int(),
    expiresAt: Nullable(Timestamp),
    revokedAt: Nullable(Timestamp),
    createdAt: Timestamp,
  })
  .meta({ id: 'ApiKeyDetails' });

const details = (res: { key?: keys.ApiKey }) => {
  const k = res.key!;
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    projectId: k.projectId ?? null,
    ownerKind: k.ownerKind as 'human' | 'agent',
    ownerId: k.ownerId,
    createdByKeyId: k.createdByKeyId ?? null,
    lastUsedAt: k.lastUsedAt ?? null,
    usageCount: Number(k.usageCount),
    expiresAt: k.expiresAt ?? null,
    revokedAt: k.revokedAt ?? null,
    createdAt: k.createdAt,
  };
};

const RenameBody = z
  .object({ name: z.string().trim().min(1, 'name is required').max(100).describe('The new name.') })
  .strict()
  .meta({ id: 'RenameKeyRequest' });
const common = { auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };
const agentKey = (i: RouteInput<{ id: string; keyId: string }>) => ({ agentId: i.params.id, id: i.params.keyId });

export const keyOpsRoutes = [
  route({
    ...common,
    id: 'meApiKeys.current',
    method: 'get',
    path: '/me/api-keys/current',
    summary: 'The API key this request is made with: its name, scope, expiry and use.',
    tag: 'keys',
    response: KeyDetails,
    handler: { rpc: 'keys.getCurrentKey', request: () => ({}), response: details },
  }),
  route({
    ...common,
    id: 'meApiKeys.revoked',
    method: 'get',
    path: '/me/api-keys/revoked',
    summary: 'Revoked API keys (the caller’s; with the owner or admin role, every person’s of the account), newest first.',
    tag: 'keys',
    query: ListQuery.extend({ projectId: ProjectId.optional() }),
    response: z.object({ keys: z.array(KeyDetails), nextCursor: Nullable(z.string()) }).meta({ id: 'RevokedKeyList' }),
    handler: {
      rpc: 'keys.listRevokedKeys',
      request: (i) => ({ projectId: i.query.projectId, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ keys: res.keys.map((key) => details({ key })), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'meApiKeys.get',
    method: 'get',
    path: '/me/api-keys/:keyId',
    summary: 'One API key the caller sees (revoked ones too): name, scope, owner, last use, expiry.',
    errors: ['key_not_found'],
    tag: 'keys',
    params: z.object({ keyId: KeyId }),
    response: KeyDetails,
    handler: { rpc: 'keys.getKey', request: (i) => ({ id: i.params.keyId }), response: details },
  }),
  route({
    ...common,
    id: 'meApiKeys.update',
    statuses: { 409: 'The key is revoked: it cannot change (`key_revoked`).' },
    method: 'patch',
    effect: 'updates',
    path: '/me/api-keys/:keyId',
    summary: 'Rename an API key (409 key_revoked for a revoked one).',
    errors: ['key_not_found', 'key_revoked'],
    tag: 'keys',
    params: z.object({ keyId: KeyId }),
    body: RenameBody,
    response: KeyDetails,
    handler: { rpc: 'keys.renameKey', request: (i) => ({ id: i.params.keyId, name: i.body.name }), response: details },
  }),
  route({
    ...common,
    id: 'meApiKeys.rotate',
    method: 'post',
    effect: 'overwrites',
    path: '/me/api-keys/:keyId/rotate',
    summary:
      'Replace one of the caller’s own keys: a new key with its name, project and remaining expiry (shown once), the old one revoked at once with the keys made from it.',
    errors: ['key_in_lineage', 'key_not_found', 'key_owner_required', 'key_revoked', 'oauth_token_cannot_mint_keys'],
    tag: 'keys',
    params: z.object({ keyId: KeyId }),
    response: CreatedKey.extend({ revokedKeyId: z.string().describe('The key replaced, now revoked.') }).meta({ id: 'RotatedKey' }),
    status: 201,
    handler: {
      rpc: 'keys.rotateKey',
      request: (i) => ({ id: i.params.keyId }),
      response: (res) => ({ ...created(res), revokedKeyId: res.revokedKeyId }),
      revokesKey: (_i, res) => [res.revokedKeyId, ...res.revokedKeyIds],
    },
  }),
  route({
    ...common,
    id: 'agentKeys.get',
    method: 'get',
    path: '/agents/:id/keys/:keyId',
    summary: 'One API key of the agent (revoked ones too).',
    errors: ['agent_not_found', 'key_not_found'],
    tag: 'agents',
    params: z.object({ id: AgentId, keyId: KeyId }),
    response: KeyDetails,
    handler: { rpc: 'agents.getAgentKey', request: agentKey, response: details },
  }),
  route({
    ...common,
    id: 'agentKeys.update',
    statuses: { 409: 'The key is revoked: it cannot change (`key_revoked`).' },
    method: 'patch',
    effect: 'updates',
    path: '/agents/:id/keys/:keyId',
    summary: 'Rename an API key of the agent (409 key_revoked for a revoked one).',
    errors: ['agent_not_found'],
    tag: 'agents',
    params: z.object({ id: AgentId, keyId: KeyId }),
    body: RenameBody,
    response: KeyDetails,
    handler: { rpc: 'agents.renameAgentKey', request: (i) => ({ ...agentKey(i), name: i.body.name }), response: details },
  }),
];
