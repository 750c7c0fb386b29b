import { z } from 'zod';

import { AgentId, ListQuery, Nullable, prefixedId, ProjectId, route, type RouteInput, Success, Timestamp } from '../route.js';

const KeyId = prefixedId('key', 'a key id');

export const CreateKeyBody = z
  .object({
    name: z.string().trim().min(1, 'name is required').max(100),
    projectId: ProjectId.optional(),
    expiresInDays: z.number().int().min(1).max(3650).optional(),
  })
  .strict()
  .meta({ id: 'CreateKeyRequest' });

export const CreatedKey = z
  .object({
    key: z.string().regex(/^svc_[0-9a-f]{64}$/).describe('The key itself. Shown once: store it now.'),
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('The first 12 characters, the only part visible later.'),
    projectId: z.string().optional(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    warning: z.string(),
  })
  .meta({ id: 'CreatedKey' });

export const KeyInfo = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    projectId: Nullable(z.string()),
    lastUsedAt: Nullable(Timestamp),
    usageCount: z.number().int(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
  })
  .meta({ id: 'ApiKey' });

export const KeyList = z.object({ keys: z.array(KeyInfo), nextCursor: Nullable(z.string()) }).meta({ id: 'ApiKeyList' });

const ListKeysQuery = ListQuery.extend({ projectId: ProjectId.optional() });

const WARNING = 'This key is displayed only once. Store it securely: it cannot be shown again.';

interface RpcKey {
  id: string;
  name: string;
  prefix: string;
  projectId?: string;
  lastUsedAt?: string;
  usageCount: number;
  expiresAt?: string;
  createdAt: string;
}

const created = (res: { key: RpcKey; plaintext: string }) => ({
  key: res.plaintext,
  id: res.key.id,
  name: res.key.name,
  prefix: res.key.prefix,
  ...(res.key.projectId ? { projectId: res.key.projectId } : {}),
  expiresAt: res.key.expiresAt ?? null,
  createdAt: res.key.createdAt,
  warning: WARNING,
});
const listed = (res: { keys: RpcKey[]; nextCursor?: string }) => ({
  keys: res.keys.map((k) => ({
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    projectId: k.projectId ?? null,
    lastUsedAt: k.lastUsedAt ?? null,
    usageCount: k.usageCount,
    expiresAt: k.expiresAt ?? null,
    createdAt: k.createdAt,
  })),
  nextCursor: res.nextCursor ?? null,
});
const success = () => ({ success: true as const });

const agentOf = (i: RouteInput) => (i.params.id ? { agentId: i.params.id as string } : {});
const createReq = (i: RouteInput) => ({ ...i.body, ...agentOf(i) });
const listReq = (i: RouteInput) => ({ projectId: i.query.projectId, limit: i.query.limit, cursor: i.query.cursor, ...agentOf(i) });

/**
 * The same operations are served at three places (spec): /api/api-keys, /me/api-keys,
 * /agents/:id/keys. Revocation names the key by `?id=` everywhere, and also by path
 * (`/:keyId`) under /me/api-keys and /agents/:id/keys.
 */
function keyRoutes(base: string, tag: string, idPrefix: string, opts: { agent: boolean; revokeByPath: boolean }) {
  const params = opts.agent ? z.object({ id: AgentId }) : undefined;
  const who = opts.agent ? "the agent's" : "the caller's";
  // An agent's keys go through the agents service, which checks the agent is the caller's and asks the keys service.
  const rpc = (keysMethod: string, agentsMethod: string) =>
    opts.agent ? { service: 'agents' as const, method: agentsMethod } : { service: 'keys' as const, method: keysMethod };
  const revoke = (id: (i: RouteInput) => string) => ({
    kind: 'rpc' as const,
    ...rpc('revokeKey', 'revokeAgentKey'),
    request: (i: RouteInput) => ({ id: id(i), ...agentOf(i) }),
    response: success,
    revokesKey: id,
  });
  return [
    route({
      id: `${idPrefix}.create`,
      method: 'post',
      path: base,
      summary: `Create an API key (${who}); the key is in the response once.`,
      tag,
      params,
      body: CreateKeyBody,
      response: CreatedKey,
      status: 201,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: { kind: 'rpc', ...rpc('createKey', 'createAgentKey'), request: createReq, response: created },
    }),
    route({
      id: `${idPrefix}.list`,
      method: 'get',
      path: base,
      summary: `List ${who} active API keys.`,
      tag,
      params,
      query: ListKeysQuery,
      response: KeyList,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: { kind: 'rpc', ...rpc('listKeys', 'listAgentKeys'), request: listReq, response: listed },
    }),
    route({
      id: opts.revokeByPath ? `${idPrefix}.revokeByQuery` : `${idPrefix}.revoke`,
      method: 'delete',
      path: base,
      summary: 'Revoke an API key (`?id=`), at once and for good.',
      tag,
      params,
      query: z.object({ id: KeyId }),
      response: Success,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: revoke((i) => i.query.id),
    }),
    ...(opts.revokeByPath
      ? [
          route({
            id: `${idPrefix}.revoke`,
            method: 'delete',
            path: `${base}/:keyId`,
            summary: 'Revoke an API key, at once and for good.',
            tag,
            params: (params ?? z.object({})).extend({ keyId: KeyId }),
            response: Success,
            auth: 'key',
            principals: ['human', 'agent'],
            authority: false,
            handler: revoke((i) => i.params.keyId),
          }),
        ]
      : []),
  ];
}

export const keysRoutes = [
  ...keyRoutes('/api/api-keys', 'keys', 'apiKeys', { agent: false, revokeByPath: false }),
  ...keyRoutes('/me/api-keys', 'keys', 'meApiKeys', { agent: false, revokeByPath: true }),
  ...keyRoutes('/agents/:id/keys', 'agents', 'agentKeys', { agent: true, revokeByPath: true }),
];
