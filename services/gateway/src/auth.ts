import { accountsClient, keysClient } from '@svc/clients';
import {
  API_KEY_RE,
  type Cache,
  DomainError,
  hashSecret,
  HOST_CREDENTIAL_RE,
  type Logger,
  type Principal,
  type PrincipalSigner,
  type Registry,
} from '@svc/kit';

/** A verified key, ready to use: its principal and the signed token that carries it to services. */
export interface AuthContext {
  principal: Principal;
  token: string;
  keyId: string;
}

interface Entry extends AuthContext {
  /** When this entry must be re-verified (cache lifetime, token lifetime, key expiry). */
  until: number;
  keyExpiresAt: number | null;
}

/**
 * The secret a request presents: `Authorization: Bearer <key>`, or, where `basic` is allowed
 * (WebDAV, Git), HTTP Basic with the key as the password and any user name.
 */
export function presentedSecret(header: string | undefined, options: { basic: boolean }): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer') return value;
  if (scheme === 'basic' && options.basic) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? '' : decoded.slice(colon + 1);
  }
  return '';
}

/** How long a verified key is trusted without asking the keys service (revocation events cut it short). */
const VERIFIED_TTL_MS = 60_000;
/** How long an x-svc-account membership answer is trusted. */
const ACTING_TTL_MS = 30_000;
/** Failed authentications allowed per client address per window before 429. */
export const AUTH_FAILURE_LIMIT = 30;
export const AUTH_FAILURE_WINDOW_MS = 60_000;

const unauthenticated = (code: string, message: string) => new DomainError('unauthenticated', code, message);

/**
 * The gateway's front door. Verification is a SHA-256 and a map lookup on the hot path; a miss
 * asks the keys service once and caches the principal with its signed token for the key's cached
 * lifetime. Revocation events from NATS evict entries on every replica.
 */
export class Authenticator {
  private readonly verified = new Map<string, Entry>();
  private readonly hashByKeyId = new Map<string, string>();
  private readonly acting = new Map<string, Entry>();
  private readonly failures = new Map<string, { n: number; until: number }>();
  private readonly usage = new Map<string, { n: number; last: number }>();
  /** Verified host credentials, by hash. */
  private readonly hosts = new Map<string, Entry & { hostId: string }>();
  /** Principals re-signed for another channel, by the token they derive from. */
  private readonly channels = new Map<string, AuthContext & { until: number }>();
  private readonly systemToken: () => Promise<string>;

  constructor(
    private readonly deps: {
      registry: Registry;
      signer: PrincipalSigner;
      systemToken: () => Promise<string>;
      log: Logger;
    },
  ) {
    this.systemToken = deps.systemToken;
  }

  /** Evicts a revoked key everywhere in this replica. */
  evict(keyId: string): void {
    const hash = this.hashByKeyId.get(keyId);
    if (hash) this.verified.delete(hash);
    this.hashByKeyId.delete(keyId);
    for (const [k, v] of this.acting) if (v.keyId === keyId) this.acting.delete(k);
    for (const [k, v] of this.channels) if (v.keyId === keyId) this.channels.delete(k);
  }

  /** Forgets an unpaired host's credential at once. */
  evictHost(hostId: string): void {
    for (const [hash, v] of this.hosts) if (v.hostId === hostId) this.hosts.delete(hash);
  }

  /**
   * Authenticates a host credential (`svch_…`): the host's own principal (kind `host`, acting in
   * the account it is paired to). Used by the host connection and by the few operations a host
   * calls (those whose principals include `host`); everywhere else a host credential is refused.
   */
  async authenticateHost(secret: string | undefined, client: string): Promise<AuthContext & { hostId: string }> {
    this.checkFlood(client);
    if (!secret) throw unauthenticated('missing_host_credential', 'A host credential is required: Authorization: Bearer <svch_…>.');
    if (!HOST_CREDENTIAL_RE.test(secret)) throw this.fail(client, unauthenticated('invalid_host_credential', 'The host credential is malformed.'));
    const hash = hashSecret(secret);
    const hit = this.hosts.get(hash);
    if (hit && hit.until > Date.now()) return hit;
    let host;
    try {
      const client = accountsClient(this.deps.registry);
      ({ host } = await client.verifyHostCredential({ credentialHash: hash }, { principalToken: await this.systemToken(), deadlineMs: 3000 }));
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'unauthenticated') throw this.fail(client, err);
      throw err;
    }
    const principal: Principal = { kind: 'host', hostId: host!.id, accountId: host!.accountId, channel: 'api' };
    const signed = await this.deps.signer.sign(principal);
    const entry = {
      principal,
      token: signed.token,
      keyId: host!.id,
      hostId: host!.id,
      keyExpiresAt: null,
      until: Math.min(Date.now() + VERIFIED_TTL_MS, signed.expiresAt - 30_000),
    };
    if (this.hosts.size > 100_000) this.hosts.clear();
    this.hosts.set(hash, entry);
    return entry;
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

  /** 429 for a client that keeps failing to authenticate. */
  checkFlood(client: string): void {
    const f = this.failures.get(client);
    if (f && f.until > Date.now() && f.n >= AUTH_FAILURE_LIMIT) {
      throw new DomainError('rate_limited', 'too_many_failed_authentications', 'Too many failed authentications; try again later.', {
        retryAfterSeconds: Math.ceil((f.until - Date.now()) / 1000),
      });
    }
  }

  private fail(client: string, err: DomainError): DomainError {
    const now = Date.now();
    const f = this.failures.get(client);
    if (!f || f.until <= now) this.failures.set(client, { n: 1, until: now + AUTH_FAILURE_WINDOW_MS });
    else f.n++;
    if (this.failures.size > 100_000) this.failures.clear();
    return err;
  }

  /** Authenticates one presented secret; `account` is the x-svc-account header, if any. */
  async authenticate(secret: string | undefined, account: string | undefined, client: string): Promise<AuthContext> {
    this.checkFlood(client);
    // No credential is not a guess: clients (WebDAV ones especially) ask without one first, and
    // only presented keys count towards the flood limit.
    if (!secret) throw unauthenticated('missing_api_key', 'An API key is required: Authorization: Bearer <key>.');
    if (!API_KEY_RE.test(secret)) {
      if (HOST_CREDENTIAL_RE.test(secret)) {
        throw this.fail(client, unauthenticated('invalid_api_key', 'A host credential is not an API key.'));
      }
      throw this.fail(client, unauthenticated('invalid_api_key', 'The API key is malformed.'));
    }
    const hash = hashSecret(secret);
    const now = Date.now();
    let entry = this.verified.get(hash);
    if (entry && entry.keyExpiresAt !== null && entry.keyExpiresAt <= now) {
      this.evict(entry.keyId);
      throw this.fail(client, unauthenticated('invalid_api_key', 'The API key is invalid, expired or revoked.'));
    }
    if (!entry || entry.until <= now) {
      try {
        entry = await this.verify(hash);
      } catch (err) {
        if (err instanceof DomainError && err.kind === 'unauthenticated') throw this.fail(client, err);
        throw err;
      }
    }
    this.countUse(entry.keyId, now);
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

  private async verify(hash: string): Promise<Entry> {
    const client = keysClient(this.deps.registry);
    const { key } = await client.verifyKey({ keyHash: hash }, { principalToken: await this.systemToken(), deadlineMs: 3000 });
    const k = key!;
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
    const signed = await this.deps.signer.sign(principal);
    const keyExpiresAt = k.expiresAt ? Date.parse(k.expiresAt) : null;
    const entry: Entry = {
      principal,
      token: signed.token,
      keyId: k.id,
      keyExpiresAt,
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
  private async actAs(base: Entry, accountId: string): Promise<AuthContext> {
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
    const entry: Entry = {
      principal,
      token: signed.token,
      keyId: base.keyId,
      keyExpiresAt: base.keyExpiresAt,
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
    const entry = { principal, token: signed.token, keyId: ctx.keyId, until: Math.min(now + VERIFIED_TTL_MS, signed.expiresAt - 30_000) };
    if (this.channels.size > 100_000) this.channels.clear();
    this.channels.set(ctx.token, entry);
    return entry;
  }

  private countUse(keyId: string, now: number): void {
    const u = this.usage.get(keyId);
    if (u) {
      u.n++;
      u.last = now;
    } else this.usage.set(keyId, { n: 1, last: now });
  }

  /** Moves this replica's usage counts to the shared cache, where the keys service collects them. */
  async flushUsage(cache: Cache): Promise<void> {
    if (!this.usage.size) return;
    const batch = [...this.usage];
    this.usage.clear();
    await Promise.all(
      batch.map(async ([id, u]) => {
        await cache.hincrby('keys:usage:count', id, u.n);
        await cache.hmax('keys:usage:last', { [id]: u.last });
      }),
    );
  }
}
