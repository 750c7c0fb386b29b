import { accountsClient, keysClient } from '@svc/clients';
import {
  API_KEY_RE,
  type Cache,
  DomainError,
  hashSecret,
  HOST_CREDENTIAL_RE,
  keyPrefix,
  type Logger,
  type Principal,
  type PrincipalSigner,
  type Registry,
} from '@svc/kit';

import { FailedAuthentications } from './auth-failures.js';
import {
  ACCESS_TOKEN_RE,
  type AuthContext,
  type CachedAuth,
  type TokenResource,
  unauthenticated,
  VERIFIED_TTL_MS,
  type VerifiedToken,
} from './credentials.js';
import { HostCredentials } from './host-credentials.js';
import { KeyUsage } from './key-usage.js';
import { grantKeyId, OauthTokens } from './oauth-tokens.js';
import { OpenStreams } from './open-streams.js';

// The fronts take what a request presents, and the authenticator's words, from here.

/** How long an x-svc-account membership answer is trusted. */
const ACTING_TTL_MS = 30_000;

/**
 * The gateway's front door. Verification is a SHA-256 and a map lookup on the hot path; a miss
 * asks the keys service once and caches the principal with its signed token for the key's cached
 * lifetime. Revocation events from NATS evict entries on every replica, and end what the key holds
 * open (`hold`). Failed authentications are counted per address and key prefix (auth-failures.ts):
 * they change how a bad key is answered, never whether a good one is served. API keys are verified
 * here; OAuth access tokens (oauth-tokens.ts) and host credentials (host-credentials.ts) by the
 * parts it holds, with the same failure counts and open streams.
 */
export class Authenticator {
  private readonly verified = new Map<string, CachedAuth>();
  private readonly hashByKeyId = new Map<string, string>();
  private readonly acting = new Map<string, CachedAuth>();
  private readonly failures = new FailedAuthentications();
  /** Live event streams and transfers in flight, by key: ended on revocation and at expiry. */
  readonly streams = new OpenStreams();
  private readonly usage = new KeyUsage();
  private readonly hosts: HostCredentials;
  /** Principals re-signed for another channel, by the token they derive from. */
  private readonly channels = new Map<string, AuthContext & { until: number }>();
  private readonly systemToken: () => Promise<string>;
  private readonly tokens: OauthTokens;

  constructor(
    private readonly deps: {
      registry: Registry;
      signer: PrincipalSigner;
      systemToken: () => Promise<string>;
      log: Logger;
    },
  ) {
    this.systemToken = deps.systemToken;
    const { failures, streams, usage } = this;
    this.hosts = new HostCredentials({ registry: deps.registry, signer: deps.signer, systemToken: deps.systemToken, failures, streams });
    this.tokens = new OauthTokens({ signer: deps.signer, failures, streams, usage });
  }

  /** Accepts OAuth access tokens where a front names their resource (the authorization server's verification). */
  useOauth(verify: (token: string, resource: TokenResource) => Promise<VerifiedToken>): void {
    this.tokens.use(verify);
  }

  /** Whether OAuth access tokens are accepted (the 401s then name the resource's metadata). */
  get oauthEnabled(): boolean {
    return this.tokens.enabled;
  }

  /** The key id an OAuth grant's requests carry: what its streams are held by, and ended by. */
  static grantKeyId(grantId: string): string {
    return grantKeyId(grantId);
  }

  /** Forgets a revoked grant's tokens in this replica, and ends what they hold open. */
  evictGrant(grantId: string): void {
    this.tokens.forgetGrant(grantId);
    this.evict(grantKeyId(grantId));
  }

  /**
   * An agent deleted or given to another account: the OAuth tokens that act as it (docs/oauth.md)
   * are forgotten on this replica and what they hold open ends; verified again, they are refused.
   */
  evictAgent(agentId: string): void {
    this.tokens.evictAgent(agentId, (keyId) => this.evict(keyId));
  }

  /** Evicts a revoked key everywhere in this replica, and ends what it holds open. */
  evict(keyId: string): void {
    this.forget(keyId);
    this.streams.end(keyId);
  }

  /**
   * Registers something `ctx`'s key holds open past its authentication: `end` is called when the
   * key is revoked or expires (and, for a `live` event stream, when this replica drains). Returns
   * the release, for when it ends by itself.
   */
  hold(ctx: AuthContext, end: (why: DomainError) => void, live = false): () => void {
    return this.streams.hold(ctx.keyId, ctx.keyExpiresAt, end, { membership: ctx.membership, live, authenticatedAt: ctx.authenticatedAt });
  }

  /**
   * Holds a response that may outlast its key's authentication (a Git or content transfer): the
   * key revoked or expired before it ends, the connection is cut (the client sees a broken transfer).
   */
  holdResponse(ctx: AuthContext, res: { destroyed: boolean; destroy(): void; once(event: 'close', fn: () => void): unknown }): void {
    if (res.destroyed) return;
    const release = this.hold(ctx, () => res.destroy());
    res.once('close', release);
  }

  /** Drops a key's cached verification (its streams end at its expiry by themselves). */
  private forget(keyId: string): void {
    const hash = this.hashByKeyId.get(keyId);
    if (hash) this.verified.delete(hash);
    this.hashByKeyId.delete(keyId);
    for (const [k, v] of this.acting) if (v.keyId === keyId) this.acting.delete(k);
    for (const [k, v] of this.channels) if (v.keyId === keyId) this.channels.delete(k);
  }

  /** Forgets an unpaired host's credential at once, and ends what it holds open. */
  evictHost(hostId: string): void {
    this.hosts.evict(hostId);
  }

  /**
   * Authenticates a host credential (`svch_…`; host-credentials.ts): the host's own principal (kind
   * `host`, acting in the account it is paired to). Used by the host connection and by the few
   * operations a host calls (those whose principals include `host`); everywhere else a host
   * credential is refused.
   */
  authenticateHost(secret: string | undefined, client: string): Promise<AuthContext & { hostId: string }> {
    return this.hosts.authenticate(secret, client);
  }

  /**
   * A member removed from an organization, or given another role: its cached principals there go,
   * and what it holds open there (streams, transfers) ends now, on this replica.
   */
  endMembership(accountId: string, memberId: string): void {
    this.evictAccount(accountId);
    this.streams.endMembership(accountId, memberId);
  }

  /**
   * Forgets every cached principal acting in an account (its membership changed), so the next
   * request asks the accounts service again.
   */
  evictAccount(accountId: string): void {
    for (const [k, v] of this.acting) if (v.principal.accountId === accountId) this.acting.delete(k);
    for (const [k, v] of this.channels) if (v.principal.accountId === accountId) this.channels.delete(k);
    for (const [hash, v] of this.verified) {
      if (v.principal.accountId === accountId && v.principal.kind === 'human' && v.principal.userId !== accountId) {
        this.verified.delete(hash);
        this.hashByKeyId.delete(v.keyId);
      }
    }
  }

  /**
   * Authenticates one presented secret; `account` is the x-svc-account header, if any, `client`
   * the client's address. A key that verifies is served whatever the address's or the prefix's
   * failures; one that does not is 401, or 429 once its address or prefix is over the limit.
   */
  async authenticate(secret: string | undefined, account: string | undefined, client: string, resource?: TokenResource): Promise<AuthContext> {
    // No credential is not a guess: clients (WebDAV ones especially) ask without one first, and
    // only presented keys count towards the flood limit.
    if (!secret) throw unauthenticated('missing_api_key', 'An API key is required: Authorization: Bearer <key>.');
    if (resource && this.tokens.enabled && !API_KEY_RE.test(secret) && !HOST_CREDENTIAL_RE.test(secret) && ACCESS_TOKEN_RE.test(secret)) {
      // An OAuth access token (docs/oauth.md; oauth-tokens.ts), for `resource` only; a revoked grant is forgotten at once (evictGrant).
      const entry = await this.tokens.authenticate(secret, client, resource);
      if (!account || account === entry.principal.accountId) return entry;
      return this.actAs(entry, account);
    }
    if (!API_KEY_RE.test(secret)) {
      const why = HOST_CREDENTIAL_RE.test(secret) ? 'A host credential is not an API key.' : 'The API key is malformed.';
      throw this.failures.fail(client, undefined, unauthenticated('invalid_api_key', why));
    }
    const hash = hashSecret(secret);
    const now = Date.now();
    let entry = this.verified.get(hash);
    if (entry && entry.keyExpiresAt !== null && entry.keyExpiresAt <= now) {
      this.forget(entry.keyId);
      throw this.failures.fail(client, keyPrefix(secret), unauthenticated('invalid_api_key', 'The API key is invalid, expired or revoked.'));
    }
    if (!entry || entry.until <= now) {
      const known = this.failures.knownBad(client, keyPrefix(secret), hash);
      if (known) throw known;
      try {
        entry = await this.verify(hash);
      } catch (err) {
        if (err instanceof DomainError && err.kind === 'unauthenticated') throw this.failures.fail(client, keyPrefix(secret), err);
        throw err;
      }
    }
    this.usage.count(entry.keyId, now);
    if (!account || account === entry.principal.accountId) return entry;
    if (entry.principal.projectId) {
      // A project is a project of the key's own account: the key cannot take it elsewhere.
      throw new DomainError(
        'forbidden',
        'project_scope',
        `This key is limited to project ${entry.principal.projectId} of its own account; it cannot act in another account.`,
      );
    }
    return this.actAs(entry, account);
  }

  private async verify(hash: string): Promise<CachedAuth> {
    const authenticatedAt = Date.now();
    const client = keysClient(this.deps.registry);
    const { key } = await client
      .verifyKey({ keyHash: hash }, { principalToken: await this.systemToken(), deadlineMs: 3000 })
      .catch((err: unknown) => {
        // Unknown, revoked or expired for good (a membership refused below is not remembered: it may come back).
        if (err instanceof DomainError && err.kind === 'unauthenticated') this.failures.refusedHash(hash);
        throw err;
      });
    const k = key!;
    // Revoked while it was being verified: refused, as it will be from now on.
    if (this.streams.revokedSince(k.id, authenticatedAt)) throw unauthenticated('invalid_api_key', 'The API key is invalid, expired or revoked.');
    const human = k.ownerKind === 'human';
    let principal: Principal = {
      kind: human ? 'human' : 'agent',
      ...(human ? { userId: k.ownerId } : { agentId: k.ownerId }),
      accountId: k.accountId,
      keyId: k.id,
      ...(k.projectId ? { projectId: k.projectId } : {}),
      channel: 'api',
    };
    if (human && k.accountId !== k.ownerId) {
      // A key made inside an organization works only while its person is a member.
      const role = await this.resolveMembership(k.ownerId, k.accountId).catch((err) => {
        if (err instanceof DomainError && err.kind === 'not_found') {
          throw unauthenticated('invalid_api_key', 'The API key is invalid, expired or revoked.');
        }
        throw err;
      });
      principal = { ...principal, role };
    }
    const membership = human && k.accountId !== k.ownerId ? { accountId: k.accountId, memberId: k.ownerId } : undefined;
    const signed = await this.deps.signer.sign(principal);
    const keyExpiresAt = k.expiresAt ? Date.parse(k.expiresAt) : null;
    const entry: CachedAuth = {
      principal,
      token: signed.token,
      keyId: k.id,
      keyExpiresAt,
      authenticatedAt,
      ...(membership ? { membership } : {}),
      until: Math.min(Date.now() + VERIFIED_TTL_MS, signed.expiresAt - 30_000, keyExpiresAt ?? Infinity),
    };
    if (this.verified.size > 100_000) this.verified.clear();
    this.verified.set(hash, entry);
    this.hashByKeyId.set(k.id, hash);
    return entry;
  }

  private async resolveMembership(memberId: string, accountId: string): Promise<string> {
    const client = accountsClient(this.deps.registry);
    const res = await client.resolveActingAccount({ userId: memberId, accountId }, { principalToken: await this.systemToken(), deadlineMs: 3000 });
    return res.role;
  }

  /** x-svc-account: act as an organization the caller (or the agent's owner) belongs to. */
  private async actAs(base: CachedAuth, accountId: string): Promise<AuthContext> {
    const cacheKey = `${base.keyId}|${accountId}`;
    const now = Date.now();
    const hit = this.acting.get(cacheKey);
    if (hit && hit.until > now) return hit;
    if (!/^acct_[0-9a-z]{26}$/.test(accountId)) {
      throw new DomainError('not_found', 'account_not_found', 'Account not found.');
    }
    const p = base.principal;
    const member = p.kind === 'human' ? p.userId! : p.accountId;
    const role = await this.resolveMembership(member, accountId);
    const principal: Principal = { ...p, accountId, role };
    const signed = await this.deps.signer.sign(principal);
    const entry: CachedAuth = {
      principal,
      token: signed.token,
      keyId: base.keyId,
      keyExpiresAt: base.keyExpiresAt,
      authenticatedAt: base.authenticatedAt,
      ...(base.oauth ? { oauth: base.oauth } : {}),
      membership: { accountId, memberId: member },
      until: Math.min(now + ACTING_TTL_MS, base.until, signed.expiresAt - 30_000),
    };
    if (this.acting.size > 100_000) this.acting.clear();
    this.acting.set(cacheKey, entry);
    return entry;
  }

  /**
   * The same caller on another channel (MCP): its principal re-signed with `channel`, cached for
   * as long as the token it derives from is, so the services see where the request came in.
   */
  async onChannel(ctx: AuthContext, channel: Principal['channel']): Promise<AuthContext> {
    if (ctx.principal.channel === channel) return ctx;
    const now = Date.now();
    const hit = this.channels.get(ctx.token);
    if (hit && hit.until > now && hit.principal.channel === channel) return hit;
    const principal: Principal = { ...ctx.principal, channel };
    const signed = await this.deps.signer.sign(principal);
    const entry = {
      principal,
      token: signed.token,
      keyId: ctx.keyId,
      keyExpiresAt: ctx.keyExpiresAt,
      authenticatedAt: ctx.authenticatedAt,
      ...(ctx.oauth ? { oauth: ctx.oauth } : {}),
      ...(ctx.membership ? { membership: ctx.membership } : {}),
      until: Math.min(now + VERIFIED_TTL_MS, signed.expiresAt - 30_000),
    };
    if (this.channels.size > 100_000) this.channels.clear();
    this.channels.set(ctx.token, entry);
    return entry;
  }

  /** Moves this replica's usage counts to the shared cache, where the keys service collects them. */
  flushUsage(cache: Cache): Promise<void> {
    return this.usage.flush(cache);
  }
}
