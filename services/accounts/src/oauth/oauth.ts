import { generateKeyPairSync } from 'node:crypto';

import { type Actor, DomainError, newId, type Principal } from '@svc/kit';

import { SYSTEM_ACTOR } from '../accounts/access.js';
import { AccountsCore, type AccountsDeps, parseJson } from '../accounts/core.js';
import type { OauthRecordRow, OauthStore } from './store.js';

/**
 * The records of the OAuth authorization server (docs/oauth.md). The gateway runs oidc-provider;
 * what it keeps (clients, grants, codes, tokens, sessions, interactions) lives here, written and
 * read only by the platform itself (the system principal). This part adds the rules a bare store
 * would not keep: a record is consumed once (a second consumption revokes its grant), revoking a
 * grant takes everything issued under it in one transaction, and each revocation and each new
 * grant is audited in the person's account and published (accounts.oauth.*).
 */

/** oidc-provider's models (lib/models); any other name is refused. */
const MODELS = new Set([
  'Session',
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'ClientCredentials',
  'Client',
  'InitialAccessToken',
  'RegistrationAccessToken',
  'Interaction',
  'ReplayDetection',
  'PushedAuthorizationRequest',
  'Grant',
  'BackchannelAuthenticationRequest',
]);
/** The records that prove a use of their grant when written. */
const TOKENS = new Set(['AccessToken', 'RefreshToken']);
/** The largest record kept (a registration's metadata is the largest there is). */
const MAX_PAYLOAD_BYTES = 64 * 1024;
/** Grants a connected apps page lists. */
const MAX_LISTED_GRANTS = 200;
const REASONS = new Set(['revoked_by_person', 'revoked_by_client', 'refresh_token_reused', 'code_reused', 'tokens_revoked', 'grant_ended']);

const internalOnly = () => new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
const invalid = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

function requireSystem(p: Principal): void {
  if (p.kind !== 'system') throw internalOnly();
}

function checkKey(model: string, id: string): void {
  if (!MODELS.has(model)) throw invalid(`model: ${model} is not a record of the authorization server.`);
  if (!id || id.length > 2048) throw invalid('id: must be 1 to 2048 characters.');
}

export interface OauthDeps extends AccountsDeps {
  oauth: OauthStore;
}

export class OauthRecords extends AccountsCore {
  private readonly oauth: OauthStore;

  constructor(deps: OauthDeps) {
    super(deps);
    this.oauth = deps.oauth;
  }

  async put(p: Principal, r: { model: string; id: string; payloadJson: string; expiresInSeconds: number }): Promise<void> {
    requireSystem(p);
    checkKey(r.model, r.id);
    if (Buffer.byteLength(r.payloadJson) > MAX_PAYLOAD_BYTES) throw new DomainError('too_large', 'payload_too_large', 'A record is at most 64 KiB.');
    const payload = parseJson(r.payloadJson, 'payloadJson');
    if (!payload || typeof payload !== 'object' || Array.isArray(payload)) throw invalid('payloadJson: must be a JSON object.');
    if (!Number.isInteger(r.expiresInSeconds) || r.expiresInSeconds < 0) throw invalid('expiresInSeconds: must be 0 or more.');
    const doc = payload as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
    const grantId = r.model === 'Grant' ? null : str(doc.grantId);
    await this.sql.tx(async (q) => {
      const inserted = await this.oauth.put(q, {
        model: r.model,
        id: r.id,
        payload: doc,
        grantId,
        uid: str(doc.uid),
        userCode: str(doc.userCode),
        accountId: r.model === 'Grant' ? str(doc.accountId) : null,
        expiresInSeconds: r.expiresInSeconds,
      });
      if (grantId && TOKENS.has(r.model)) await this.oauth.touchGrant(q, grantId);
      // A refresh token made by rotation is a refresh: audited in the person's account.
      if (inserted && r.model === 'RefreshToken' && typeof doc.rotations === 'number' && doc.rotations > 0 && str(doc.accountId)) {
        const person = str(doc.accountId)!;
        await this.audit(q, {
          accountId: person,
          action: 'oauth.refreshed',
          actor: personActor(person),
          target: { kind: 'oauth_grant', id: grantId ?? '' },
          data: { grantId, clientId: str(doc.clientId), rotations: doc.rotations },
        });
      }
      if (inserted && r.model === 'Grant' && str(doc.accountId)) {
        const person = str(doc.accountId)!;
        await this.audit(q, {
          accountId: person,
          action: 'oauth.authorized',
          actor: personActor(person),
          target: { kind: 'oauth_grant', id: r.id },
          data: { grantId: r.id, clientId: str(doc.clientId), resources: doc.resources ?? null },
        });
      }
    });
    this.kick();
  }

  async get(p: Principal, by: { model: string; id?: string; uid?: string; userCode?: string }): Promise<Record<string, unknown> | null> {
    requireSystem(p);
    checkKey(by.model, by.id || by.uid || by.userCode || '');
    const row = await this.oauth.get(by);
    return row?.payload ?? null;
  }

  /**
   * Consumes a code or refresh token once. A second consumption (two requests racing with one
   * refresh token, or a replay) revokes the whole grant and is refused `already_consumed`.
   */
  async consume(p: Principal, model: string, id: string): Promise<number> {
    requireSystem(p);
    checkKey(model, id);
    const at = Math.floor(Date.now() / 1000);
    const done = await this.sql.tx(async (q) => this.oauth.consume(q, model, id, at));
    if (done) return at;
    const grantId = await this.oauth.grantOf(this.sql, model, id);
    if (grantId) await this.revoke(p, { grantId, tokensOnly: false, reason: model === 'RefreshToken' ? 'refresh_token_reused' : 'code_reused' });
    throw new DomainError('conflict', 'already_consumed', `This ${model} was used before; its grant is revoked.`);
  }

  async destroy(p: Principal, model: string, id: string, reason: string): Promise<void> {
    requireSystem(p);
    checkKey(model, id);
    if (model === 'Grant') {
      await this.revoke(p, { grantId: id, tokensOnly: false, reason: reason || 'grant_ended' });
      return;
    }
    await this.oauth.destroy(this.sql, model, id);
  }

  /**
   * Revokes what was issued under a grant, and the grant itself unless `tokensOnly`, in one
   * transaction; audited in the person's account and published as accounts.oauth.grant_revoked
   * (every gateway forgets the grant's tokens and ends what they hold open). `userId`: only a
   * grant of that person (the connected apps page); false when there was nothing to revoke.
   */
  async revoke(p: Principal, r: { grantId: string; tokensOnly: boolean; reason: string; userId?: string }): Promise<boolean> {
    requireSystem(p);
    checkKey('Grant', r.grantId);
    const reason = REASONS.has(r.reason) ? r.reason : 'grant_ended';
    const revoked = await this.sql.tx(async (q) => {
      const grant = await this.oauth.grantForUpdate(q, r.grantId);
      const person = typeof grant?.payload.accountId === 'string' ? grant.payload.accountId : null;
      if (r.userId && person !== r.userId) return false;
      const gone = await this.oauth.deleteGrant(q, r.grantId, r.tokensOnly);
      if (!gone || !person) return gone > 0;
      await this.audit(q, {
        accountId: person,
        action: r.tokensOnly ? 'oauth.tokens_revoked' : 'oauth.grant_revoked',
        actor: r.userId ? personActor(r.userId) : SYSTEM_ACTOR,
        target: { kind: 'oauth_grant', id: r.grantId },
        data: { grantId: r.grantId, clientId: grant?.payload.clientId ?? null, reason, records: gone },
      });
      return true;
    });
    if (revoked) this.kick();
    return revoked;
  }

  async listGrants(p: Principal, userId: string): Promise<Array<{ row: OauthRecordRow; client: Record<string, unknown> | null }>> {
    requireSystem(p);
    if (!/^acct_[0-9a-z]{26}$/.test(userId)) throw invalid('userId: must be an account id.');
    const rows = await this.oauth.grantsOf(userId, MAX_LISTED_GRANTS);
    const clients = await this.oauth.clients([...new Set(rows.map((r) => String(r.payload.clientId ?? '')))].filter(Boolean));
    return rows.map((row) => ({ row, client: clients.get(String(row.payload.clientId ?? '')) ?? null }));
  }

  /** The server's signing keys (private JWKs), the first made on first use and sealed at rest. */
  async serverKeys(p: Principal): Promise<string[]> {
    requireSystem(p);
    let rows = await this.oauth.serverKeys();
    if (!rows.length) {
      const kid = newId('osk');
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
      const sealed = this.deps.vault.seal(Buffer.from(JSON.stringify(jwk)), `oauth:${kid}`);
      await this.sql.tx((q) => this.oauth.insertServerKeyIfNone(q, { id: kid, private_jwk_enc: sealed }));
      rows = await this.oauth.serverKeys();
    }
    return rows.map((r) => this.deps.vault.open(r.private_jwk_enc, `oauth:${r.id}`).toString('utf8'));
  }

  /** Deletes expired records (a batch); called on a timer. */
  sweep(limit = 500): Promise<number> {
    return this.oauth.sweep(limit);
  }
}

/** A person acting for themselves on the gateway's pages (the actor of their OAuth and passkey events). */
export const personActor = (userId: string): Actor => ({ kind: 'human', id: userId, keyId: null, channel: 'api', accountId: userId });
