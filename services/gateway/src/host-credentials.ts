import { accountsClient } from '@svc/clients';
import { DomainError, hashSecret, HOST_CREDENTIAL_RE, keyPrefix, type Principal, type PrincipalSigner, type Registry } from '@svc/kit';

import type { FailedAuthentications } from './auth-failures.js';
import { type AuthContext, type CachedAuth, unauthenticated, VERIFIED_TTL_MS } from './credentials.js';
import type { OpenStreams } from './open-streams.js';

/**
 * Host credentials (`svch_…`) as the authenticator (auth.ts) verifies them: asked of the accounts
 * service once, then trusted by hash on this replica for the verified lifetime, and forgotten at
 * once when the host is unpaired.
 */
export class HostCredentials {
  /** Verified host credentials, by hash. */
  private readonly hosts = new Map<string, CachedAuth & { hostId: string }>();

  constructor(
    private readonly deps: {
      registry: Registry;
      signer: PrincipalSigner;
      systemToken: () => Promise<string>;
      failures: FailedAuthentications;
      streams: OpenStreams;
    },
  ) {}

  /** Forgets an unpaired host's credential at once, and ends what it holds open. */
  evict(hostId: string): void {
    for (const [hash, v] of this.hosts) if (v.hostId === hostId) this.hosts.delete(hash);
    this.deps.streams.end(hostId);
  }

  /** The host's own principal (kind `host`, acting in the account it is paired to). */
  async authenticate(secret: string | undefined, client: string): Promise<AuthContext & { hostId: string }> {
    const { failures } = this.deps;
    if (!secret) throw unauthenticated('missing_host_credential', 'A host credential is required: Authorization: Bearer <svch_…>.');
    if (!HOST_CREDENTIAL_RE.test(secret)) {
      throw failures.fail(client, undefined, unauthenticated('invalid_host_credential', 'The host credential is malformed.'));
    }
    const hash = hashSecret(secret);
    const hit = this.hosts.get(hash);
    if (hit && hit.until > Date.now()) return hit;
    const prefix = keyPrefix(secret);
    const known = failures.knownBad(client, prefix, hash);
    if (known) throw known;
    let host;
    const authenticatedAt = Date.now();
    try {
      const accounts = accountsClient(this.deps.registry);
      ({ host } = await accounts.verifyHostCredential({ credentialHash: hash }, { principalToken: await this.deps.systemToken(), deadlineMs: 3000 }));
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'unauthenticated') {
        failures.refusedHash(hash);
        throw failures.fail(client, prefix, err);
      }
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
      authenticatedAt,
      until: Math.min(Date.now() + VERIFIED_TTL_MS, signed.expiresAt - 30_000),
    };
    if (this.hosts.size > 100_000) this.hosts.clear();
    this.hosts.set(hash, entry);
    return entry;
  }
}
