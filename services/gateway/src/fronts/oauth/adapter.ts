import { createHash } from 'node:crypto';

import { accountsClient } from '@svc/clients';
import { DomainError, type Registry } from '@svc/kit';

/**
 * oidc-provider's storage adapter (its `Adapter` interface: upsert, find, findByUid,
 * findByUserCode, consume, destroy, revokeByGrantId) over the accounts service, which keeps every
 * record in its database (accounts.oauth_records; docs/oauth.md). Nothing is kept in this process.
 *
 * The id of a record whose id is a bearer value (a code, a token, an interaction, a session) is
 * sent as its SHA-256, and its `jti` is left out of the stored payload and put back on reading:
 * the database never holds a usable value. Clients and grants keep their ids (a grant id is
 * listed and revoked by the person; it gives nothing by itself). A session keeps its `jti` in the
 * payload, because oidc-provider finds sessions by `uid` too.
 */

/** Models whose id is the key itself, not a secret. */
const PLAIN_IDS = new Set(['Client', 'Grant']);

export interface AdapterDeps {
  registry: Registry;
  systemToken: () => Promise<string>;
  /**
   * Why a grant is being revoked, from the request in progress (oidc-provider's context): a
   * refresh token or a code presented twice, or a client's revocation request.
   */
  reason: () => string;
  /** A grant's tokens went (this replica forgets them at once; the others on the event). */
  revoked: (grantId: string) => void;
}

export const recordId = (model: string, id: string) => (PLAIN_IDS.has(model) ? id : createHash('sha256').update(id).digest('base64url'));

export function adapterClass(deps: AdapterDeps) {
  const call = async () => ({ client: accountsClient(deps.registry), opts: { principalToken: await deps.systemToken(), deadlineMs: 5000 } });
  const restore = (model: string, id: string | undefined, json: string | undefined): Record<string, unknown> | undefined => {
    if (json === undefined) return undefined;
    const payload = JSON.parse(json) as Record<string, unknown>;
    if (id !== undefined && payload.jti === undefined && !PLAIN_IDS.has(model)) payload.jti = id;
    return payload;
  };

  return class AccountsAdapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
      const stored = this.model === 'Session' || PLAIN_IDS.has(this.model) ? payload : { ...payload, jti: undefined };
      const { client, opts } = await call();
      await client.putOauthRecord(
        {
          model: this.model,
          id: recordId(this.model, id),
          payloadJson: JSON.stringify(stored),
          expiresInSeconds: Math.max(0, Math.ceil(expiresIn ?? 0)),
        },
        opts,
      );
    }

    async find(id: string): Promise<Record<string, unknown> | undefined> {
      const { client, opts } = await call();
      const { payloadJson } = await client.getOauthRecord({ model: this.model, id: recordId(this.model, id), uid: '', userCode: '' }, opts);
      return restore(this.model, id, payloadJson);
    }

    async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
      const { client, opts } = await call();
      const { payloadJson } = await client.getOauthRecord({ model: this.model, id: '', uid, userCode: '' }, opts);
      return restore(this.model, undefined, payloadJson);
    }

    async findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined> {
      const { client, opts } = await call();
      const { payloadJson } = await client.getOauthRecord({ model: this.model, id: '', uid: '', userCode }, opts);
      return restore(this.model, undefined, payloadJson);
    }

    /**
     * Consumes a code or refresh token, once: when it was consumed before (a replay, or two
     * requests racing), the accounts service has revoked its grant, and the request fails as
     * oidc-provider's own reuse detection would (invalid_grant).
     */
    async consume(id: string): Promise<void> {
      const { client, opts } = await call();
      try {
        await client.consumeOauthRecord({ model: this.model, id: recordId(this.model, id) }, opts);
      } catch (err) {
        if (err instanceof DomainError && err.code === 'already_consumed') {
          const { errors } = await import('oidc-provider');
          throw new errors.InvalidGrant(`${this.model === 'RefreshToken' ? 'refresh token' : 'authorization code'} already used`);
        }
        throw err;
      }
    }

    async destroy(id: string): Promise<void> {
      const { client, opts } = await call();
      await client.destroyOauthRecord({ model: this.model, id: recordId(this.model, id), reason: this.model === 'Grant' ? deps.reason() : '' }, opts);
      if (this.model === 'Grant') deps.revoked(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      const { client, opts } = await call();
      await client.revokeOauthGrant({ grantId, tokensOnly: true, reason: deps.reason(), userId: '' }, opts);
      deps.revoked(grantId);
    }
  };
}
