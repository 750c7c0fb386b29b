import { z } from 'zod';

import type { keys } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, ProjectId, route, type RouteInput, Success, Timestamp } from '../../route.js';

const KeyId = prefixedId('key', 'a key id');

export const CreateKeyBody = z
  .object({
    name: z.string().trim().min(1, 'name is required').max(100).describe('A name to tell the key by (1–100 characters).'),
    projectId: ProjectId.optional(),
    expiresInDays: z
      .number()
      .min(1 / 1440, 'must be at least one minute (1/1440).')
      .max(3650)
      .optional()
      .describe('The lifetime in days, fractions down to one minute (1/1440); rounded to the nearest minute.'),
  })
  .strict()
  .meta({ id: 'CreateKeyRequest' });

export const CreatedKey = z
  .object({
    key: z
      .string()
      .regex(/^svc_[0-9a-f]{64}$/)
      .describe('The key itself. Shown once: store it now.'),
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('The first 12 characters, the only part visible later.'),
    projectId: z.string().optional(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    expiryCapped: z
      .literal(true)
      .optional()
      .describe(
        'Present when the key asked for a later expiry (or none) than the key that created it has: `expiresAt` is then that key’s expiry, since a key never outlives the key that made it.',
      ),
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

export const created = (res: keys.CreateKeyResponse | keys.RotateKeyResponse) => {
  const k = res.key!;
  return {
    key: res.plaintext,
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    ...(k.projectId ? { projectId: k.projectId } : {}),
    expiresAt: k.expiresAt ?? null,
    createdAt: k.createdAt,
    ...(res.expiryCapped ? { expiryCapped: true as const } : {}),
    warning: WARNING,
  };
};
const listed = (res: keys.ListKeysResponse) => ({
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

/** The input a key's revocation reads: the key named by query (`?id=`) or path, an agent's id by path. */
type KeyRef = RouteInput<{ id?: string; keyId?: string }, { id?: string }>;
const agentOf = (i: RouteInput<{ id: string }>) => ({ agentId: i.params.id });
/** The lifetime goes on in whole minutes, and rounded up to whole days for a keys service that reads only days. */
const createReq = (i: RouteInput<unknown, unknown, z.output<typeof CreateKeyBody>>) => {
  const days = i.body.expiresInDays;
  return {
    name: i.body.name,
    projectId: i.body.projectId,
    expiresInDays: days === undefined ? undefined : Math.ceil(days),
    expiresInMinutes: days === undefined ? undefined : Math.max(1, Math.round(days * 1440)),
  };
};
const listReq = (i: RouteInput<unknown, z.output<typeof ListKeysQuery>>) => ({
  projectId: i.query.projectId,
  limit: i.query.limit,
  cursor: i.query.cursor,
});

/**
 * The same operations are served at three places (spec): /api/api-keys, /me/api-keys,
 * /agents/:id/keys. Revocation names the key by `?id=` everywhere, and also by path
 * (`/:keyId`) under /me/api-keys and /agents/:id/keys.
 */
function keyRoutes(base: string, tag: string, idPrefix: string, opts: { agent: boolean; revokeByPath: boolean }) {
  const params = opts.agent ? z.object({ id: AgentId }) : undefined;
  const who = opts.agent ? "the agent's" : "the caller's";
  // An agent's keys go through the agents service, which checks the agent is the caller's and asks the keys service.
  // The key named and every key made from it, down its lineage: forgotten before the answer goes.
  const revoked = (id: (i: KeyRef) => string) => (i: KeyRef, res: keys.RevokeKeyResponse) => [id(i), ...res.revokedKeyIds];
  const revoke = (id: (i: KeyRef) => string) =>
    opts.agent
      ? {
          rpc: 'agents.revokeAgentKey' as const,
          request: (i: KeyRef) => ({ id: id(i), agentId: i.params.id! }),
          response: success,
          revokesKey: revoked(id),
        }
      : { rpc: 'keys.revokeKey' as const, request: (i: KeyRef) => ({ id: id(i) }), response: success, revokesKey: revoked(id) };
  return [
    route({
      id: `${idPrefix}.create`,
      method: 'post',
      effect: 'creates',
      path: base,
      summary: `Create an API key (${who}); the key is in the response once.`,
      errors: opts.agent ? ['agent_not_found', 'oauth_token_cannot_mint_keys', 'project_scope'] : ['oauth_token_cannot_mint_keys', 'project_scope'],
      tag,
      params,
      body: CreateKeyBody,
      response: CreatedKey,
      status: 201,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: opts.agent
        ? { rpc: 'agents.createAgentKey', request: (i) => ({ ...createReq(i), ...agentOf(i) }), response: created }
        : { rpc: 'keys.createKey', request: createReq, response: created },
    }),
    route({
      id: `${idPrefix}.list`,
      method: 'get',
      path: base,
      summary: `List ${who} active API keys: name, prefix, project scope, expiry and last use (never the secret).`,
      errors: opts.agent ? ['agent_not_found', 'invalid_cursor', 'project_scope'] : ['invalid_cursor', 'project_scope'],
      tag,
      params,
      query: ListKeysQuery,
      response: KeyList,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: opts.agent
        ? { rpc: 'agents.listAgentKeys', request: (i) => ({ ...listReq(i), ...agentOf(i) }), response: listed }
        : { rpc: 'keys.listKeys', request: listReq, response: listed },
    }),
    route({
      id: opts.revokeByPath ? `${idPrefix}.revokeByQuery` : `${idPrefix}.revoke`,
      method: 'delete',
      path: base,
      summary: 'Revoke an API key (`?id=`), at once and for good.',
      errors: opts.agent ? ['agent_not_found', 'key_not_found'] : ['key_not_found'],
      tag,
      params,
      query: z.object({ id: KeyId }),
      response: Success,
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: revoke((i) => i.query.id!),
    }),
    ...(opts.revokeByPath
      ? [
          route({
            id: `${idPrefix}.revoke`,
            method: 'delete',
            path: `${base}/:keyId`,
            summary: 'Revoke an API key, at once and for good.',
            errors: opts.agent ? ['agent_not_found', 'key_not_found'] : ['key_not_found'],
            tag,
            params: (params ?? z.object({})).extend({ keyId: KeyId }),
            response: Success,
            auth: 'key',
            principals: ['human', 'agent'],
            authority: false,
            handler: revoke((i) => i.params.keyId!),
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
