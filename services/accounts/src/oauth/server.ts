import type { Handlers } from '@svc/kit';
import type { accounts } from '@svc/proto';

import type { OauthRecords } from './oauth.js';

type Def = typeof accounts.AccountsServiceService;
type OauthMethods =
  'putOauthRecord' | 'getOauthRecord' | 'consumeOauthRecord' | 'destroyOauthRecord' | 'revokeOauthGrant' | 'listOauthGrants' | 'getOauthServerKeys';

/** The gRPC handlers of the authorization server's records (system only; docs/oauth.md). */
export function oauthHandlers(records: OauthRecords): Pick<Handlers<Def>, OauthMethods> {
  return {
    async putOauthRecord(req, { principal }) {
      await records.put(principal, req);
      return {};
    },
    async getOauthRecord(req, { principal }) {
      const payload = await records.get(principal, {
        model: req.model,
        id: req.id || undefined,
        uid: req.uid || undefined,
        userCode: req.userCode || undefined,
      });
      return payload ? { payloadJson: JSON.stringify(payload) } : {};
    },
    async consumeOauthRecord(req, { principal }) {
      return { consumedAt: await records.consume(principal, req.model, req.id) };
    },
    async destroyOauthRecord(req, { principal }) {
      await records.destroy(principal, req.model, req.id, req.reason);
      return {};
    },
    async revokeOauthGrant(req, { principal }) {
      const revoked = await records.revoke(principal, {
        grantId: req.grantId,
        tokensOnly: req.tokensOnly,
        reason: req.reason,
        userId: req.userId || undefined,
      });
      return { revoked };
    },
    async listOauthGrants(req, { principal }) {
      const rows = await records.listGrants(principal, req.userId);
      return {
        grants: rows.map(({ row, client }) => ({
          grantId: row.id,
          grantJson: JSON.stringify(row.payload),
          clientJson: client ? JSON.stringify(client) : undefined,
          createdAt: row.created_at.toISOString(),
          lastUsedAt: row.last_used_at?.toISOString(),
        })),
      };
    },
    async getOauthServerKeys(_req, { principal }) {
      return { privateJwkJson: await records.serverKeys(principal) };
    },
  };
}
