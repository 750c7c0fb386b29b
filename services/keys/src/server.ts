import { type CallContext, DomainError, type Handlers } from '@svc/kit';
import { keys } from '@svc/proto';

import type { KeysDomain } from './keys.js';
import type { KeyRow } from './store.js';

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

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(domain: KeysDomain): Handlers<Def> {
  return {
    async createKey(req, ctx) {
      const { row, plaintext } = await domain.create(ctx.principal, req, ctx.principalToken);
      return { key: toApiKey(row), plaintext };
    },
    async listKeys(req, ctx) {
      const { rows, nextCursor } = await domain.list(ctx.principal, req, ctx.principalToken);
      return { keys: rows.map(toApiKey), nextCursor };
    },
    async revokeKey(req, ctx) {
      await domain.revoke(ctx.principal, req, ctx.principalToken);
      return {};
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
  };
}
