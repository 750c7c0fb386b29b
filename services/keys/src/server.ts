import { type CallContext, DomainError, type Handlers } from '@svc/kit';
import type { keys } from '@svc/proto';

import type { IdempotencyRecords } from './idempotency/idempotency.js';
import type { AgentKeyCaller, KeysDomain } from './keys/keys.js';
import type { KeyOps } from './keys/manage.js';
import type { KeyRow } from './keys/store.js';

type Def = typeof keys.KeysServiceService;

function toApiKey(r: KeyRow): keys.ApiKey {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    projectId: r.project_id ?? undefined,
    lastUsedAt: r.last_used_at?.toISOString(),
    usageCount: Number(r.usage_count),
    expiresAt: r.expires_at?.toISOString(),
    createdAt: r.created_at.toISOString(),
    accountId: r.account_id,
    ownerKind: r.owner_kind,
    ownerId: r.owner_id,
    createdByKeyId: r.created_by_key_id ?? undefined,
    revokedAt: r.revoked_at?.toISOString(),
  };
}

function systemOnly(ctx: CallContext): void {
  if (ctx.principal.kind !== 'system') {
    throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
  }
}

/** The explicit caller of an *AgentKey call (a system call from the agents service). */
function agentKeyCaller(c: keys.AgentKeyCaller | undefined): AgentKeyCaller {
  if (!c || !/^acct_[0-9a-z]{26}$/.test(c.accountId) || !/^agt_[0-9a-z]{26}$/.test(c.agentId)) {
    throw new DomainError('invalid_argument', 'invalid_request', 'caller: an account id and an agent id are required.');
  }
  return { accountId: c.accountId, agentId: c.agentId, keyId: c.keyId, projectId: c.projectId };
}

/** gRPC handlers: translate messages, let the domain decide. */
/** A recorded answer's headers: a JSON object of strings. */
function headersOf(json: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json || '{}');
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) {
    throw new DomainError('invalid_argument', 'invalid_request', 'answer.headersJson: must be a JSON object of strings.');
  }
  return parsed as Record<string, string>;
}

export function handlers(domain: KeysDomain, idempotency: IdempotencyRecords, ops: KeyOps): Handlers<Def> {
  return {
    async createKey(req, ctx) {
      const { row, plaintext, capped } = await domain.create(ctx.principal, req);
      return { key: toApiKey(row), plaintext, expiryCapped: capped };
    },
    async listKeys(req, ctx) {
      const { rows, nextCursor } = await domain.list(ctx.principal, req);
      return { keys: rows.map(toApiKey), nextCursor };
    },
    async revokeKey(req, ctx) {
      return { revokedKeyIds: await domain.revoke(ctx.principal, req) };
    },
    async createAgentKey(req, ctx) {
      systemOnly(ctx);
      const { row, plaintext, capped } = await domain.createAgentKey(agentKeyCaller(req.caller), req);
      return { key: toApiKey(row), plaintext, expiryCapped: capped };
    },
    async listAgentKeys(req, ctx) {
      systemOnly(ctx);
      const { rows, nextCursor } = await domain.listAgentKeys(agentKeyCaller(req.caller), req);
      return { keys: rows.map(toApiKey), nextCursor };
    },
    async revokeAgentKey(req, ctx) {
      systemOnly(ctx);
      return { revokedKeyIds: await domain.revokeAgentKey(agentKeyCaller(req.caller), req.id) };
    },
    async verifyKey(req, ctx) {
      systemOnly(ctx);
      return { key: toApiKey(await domain.verify(req.keyHash)) };
    },
    async importKey(req, ctx) {
      systemOnly(ctx);
      return { key: toApiKey(await domain.import(req)) };
    },
    async revokeOwnerKeys(req, ctx) {
      return { revoked: await domain.revokeOwner(ctx.principal, req.ownerKind, req.ownerId) };
    },
    async beginIdempotent(req, ctx) {
      const begun = await idempotency.begin(ctx.principal, req.key, req.fingerprint);
      if ('claim' in begun) return { claim: begun.claim };
      const a = begun.answer;
      return { claim: '', answer: { status: a.status, headersJson: JSON.stringify(a.headers), body: a.body, contentSha256: a.contentSha256 } };
    },
    async finishIdempotent(req, ctx) {
      const a = req.answer;
      const answer = a && { status: a.status, headers: headersOf(a.headersJson), body: Buffer.from(a.body), contentSha256: a.contentSha256 };
      await idempotency.finish(ctx.principal, req.key, req.claim, answer);
      return {};
    },
    async sweepIdempotent(_req, ctx) {
      systemOnly(ctx);
      return { deleted: await idempotency.sweep() };
    },
    async getKey(req, ctx) {
      return { key: toApiKey(await ops.get(ctx.principal, req.id)) };
    },
    async renameKey(req, ctx) {
      return { key: toApiKey(await ops.rename(ctx.principal, req.id, req.name)) };
    },
    async getCurrentKey(_req, ctx) {
      return { key: toApiKey(await ops.current(ctx.principal)) };
    },
    async listRevokedKeys(req, ctx) {
      const { rows, nextCursor } = await ops.revoked(ctx.principal, req);
      return { keys: rows.map(toApiKey), nextCursor };
    },
    async rotateKey(req, ctx) {
      const r = await ops.rotate(ctx.principal, req.id);
      return { key: toApiKey(r.row), plaintext: r.plaintext, expiryCapped: r.capped, revokedKeyId: r.revokedKeyId, revokedKeyIds: r.revokedKeyIds };
    },
    async getAgentKey(req, ctx) {
      systemOnly(ctx);
      return { key: toApiKey(await ops.getAgentKey(agentKeyCaller(req.caller), req.id)) };
    },
    async renameAgentKey(req, ctx) {
      systemOnly(ctx);
      return { key: toApiKey(await ops.renameAgentKey(agentKeyCaller(req.caller), req.id, req.name)) };
    },
  };
}
