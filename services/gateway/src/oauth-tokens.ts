import { DomainError, hashSecret, type Principal, type PrincipalSigner } from '@svc/kit';

import type { FailedAuthentications } from './auth-failures.js';
import { type CachedAuth, type TokenResource, unauthenticated, VERIFIED_TTL_MS, type VerifiedToken } from './credentials.js';
import type { KeyUsage } from './key-usage.js';
import type { OpenStreams } from './open-streams.js';

/** The key id an OAuth grant's requests carry: what its streams are held by, and ended by. */
export const grantKeyId = (grantId: string) => `oauth:${grantId}`;

const otherResource = () => unauthenticated('invalid_token', 'This access token was issued for another resource.');

/**
 * OAuth access tokens (docs/oauth.md) as the authenticator (auth.ts) accepts them where a front
 * names their resource: verified by the authorization server (fronts/oauth), cached by hash on this
 * replica until they expire or for a minute, whichever is first, and forgotten at once when their
 * grant is revoked or the agent they act as goes.
 */
export class OauthTokens {
  /** Verified OAuth access tokens, by hash (revocation events cut them short: evictGrant). */
  private readonly tokens = new Map<string, CachedAuth & { resource: TokenResource }>();
  private verifyToken?: (token: string, resource: TokenResource) => Promise<VerifiedToken>;

  constructor(private readonly deps: { signer: PrincipalSigner; failures: FailedAuthentications; streams: OpenStreams; usage: KeyUsage }) {}

  /** Accepts tokens from now on, verified by `verify` (the authorization server's verification). */
  use(verify: (token: string, resource: TokenResource) => Promise<VerifiedToken>): void {
    this.verifyToken = verify;
  }

  get enabled(): boolean {
    return this.verifyToken !== undefined;
  }

  /** Forgets a revoked grant's tokens (the authenticator ends what they hold open). */
  forgetGrant(grantId: string): void {
    const keyId = grantKeyId(grantId);
    for (const [hash, v] of this.tokens) if (v.keyId === keyId) this.tokens.delete(hash);
  }

  /** Forgets the tokens that act as an agent, and has `evict` end what each holds open, token by token. */
  evictAgent(agentId: string, evict: (keyId: string) => void): void {
    for (const [hash, v] of this.tokens) {
      if (v.principal.agentId !== agentId) continue;
      this.tokens.delete(hash);
      evict(v.keyId);
    }
  }

  /**
   * An OAuth access token, for `resource` only. Its principal is the person (or the agent of theirs
   * they chose), with the grant as its key id, read-only when its scope says so.
   */
  async authenticate(token: string, client: string, resource: TokenResource): Promise<CachedAuth> {
    const { failures, usage } = this.deps;
    const hash = hashSecret(token);
    const now = Date.now();
    const hit = this.tokens.get(hash);
    if (hit && hit.until > now) {
      if (hit.resource !== resource) throw failures.fail(client, undefined, otherResource());
      usage.count(hit.keyId, now);
      return hit;
    }
    const known = failures.knownBad(client, '', hash);
    if (known) throw known;
    let t: VerifiedToken;
    try {
      t = await this.verifyToken!(token, resource);
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'unauthenticated') {
        failures.refusedHash(hash);
        throw failures.fail(client, undefined, err);
      }
      throw err;
    }
    // Its grant revoked while it was being verified: refused, as it will be from now on.
    if (this.deps.streams.revokedSince(grantKeyId(t.grantId), now)) {
      throw failures.fail(client, undefined, unauthenticated('invalid_token', 'The access token is invalid, expired or revoked.'));
    }
    const principal: Principal = {
      ...(t.agentId ? { kind: 'agent' as const, agentId: t.agentId } : { kind: 'human' as const, userId: t.userId }),
      accountId: t.userId,
      keyId: grantKeyId(t.grantId),
      channel: resource === 'mcp' ? 'mcp' : 'api',
      grantId: t.grantId,
      ...(t.readOnly ? { readOnly: true } : {}),
    };
    const signed = await this.deps.signer.sign(principal);
    const entry = {
      principal,
      token: signed.token,
      keyId: principal.keyId!,
      keyExpiresAt: t.expiresAt,
      authenticatedAt: now,
      oauth: { grantId: t.grantId, clientId: t.clientId, readOnly: t.readOnly, toolsets: t.toolsets },
      resource,
      until: Math.min(now + VERIFIED_TTL_MS, signed.expiresAt - 30_000, t.expiresAt),
    };
    if (this.tokens.size > 100_000) this.tokens.clear();
    this.tokens.set(hash, entry);
    usage.count(entry.keyId, now);
    return entry;
  }
}
