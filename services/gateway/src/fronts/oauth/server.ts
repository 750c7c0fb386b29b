import type { IncomingMessage, ServerResponse } from 'node:http';

import { DomainError, type Logger, type PrincipalSigner, type Registry } from '@svc/kit';

import type { TokenResource, VerifiedToken } from '../../credentials.js';
import { oidcProviderStore, providerContextGate } from './context-gate.js';
import type { Provider } from './oidc-types.js';
import { createProvider, type OauthSettings } from './provider.js';
import { accessOf, challenge, type ProtectedResource, protectedResources, type ResourceName } from './resources.js';
import { agentOf, agentOfPerson } from './subject.js';

export interface OauthServerDeps {
  registry: Registry;
  systemToken: () => Promise<string>;
  /** Signs a person's principal, to ask the agents service which agents are theirs. */
  signer: PrincipalSigner;
  log: Logger;
  secret: string;
  trustProxy: boolean;
  settings: OauthSettings;
  /** The MCP areas (toolset scopes). */
  areas: readonly string[];
  /** A grant's tokens went: every cached one forgotten, its streams ended. */
  revoked: (grantId: string) => void;
}

const invalidToken = (message: string) => new DomainError('unauthenticated', 'invalid_token', message);

/**
 * The authorization server as the gateway holds it: its issuer (the public URL, known once the
 * gateway listens), its resources, and oidc-provider, made on first use (it needs the signing keys
 * the accounts service keeps) and then kept.
 */
export class OauthServer {
  private made?: Promise<Provider>;
  private gate?: Promise<<T>(work: () => Promise<T>, response?: ServerResponse) => Promise<T>>;
  private base?: string;
  private resourcesOf?: Record<ResourceName, ProtectedResource>;

  constructor(private readonly deps: OauthServerDeps) {}

  /** Sets the public URL (SVC_PUBLIC_URL, or the gateway's own address once it listens). */
  setIssuer(url: string): void {
    this.base = url.replace(/\/+$/, '');
    this.resourcesOf = protectedResources(this.base, this.deps.areas);
  }

  get issuer(): string {
    if (!this.base) throw new DomainError('unavailable', 'not_ready', 'The authorization server is starting.');
    return this.base;
  }

  get resources(): Record<ResourceName, ProtectedResource> {
    if (!this.resourcesOf) throw new DomainError('unavailable', 'not_ready', 'The authorization server is starting.');
    return this.resourcesOf;
  }

  provider(): Promise<Provider> {
    this.made ??= createProvider({ ...this.deps, issuer: this.issuer, resources: this.resources }).catch((err: unknown) => {
      this.made = undefined;
      throw err;
    });
    return this.made;
  }

  /** Hands a request to oidc-provider, its async context left disabled between requests (context-gate.ts). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const provider = await this.provider();
    this.gate ??= oidcProviderStore().then((store) => {
      if (store) return providerContextGate(store);
      this.deps.log.warn('oidc-provider keeps its request context where the gateway does not expect it: its requests run ungated (context-gate.ts)');
      return (work) => work();
    });
    const gate = await this.gate;
    await gate(() => provider.callback()(req, res), res);
  }

  /** The challenge of a refusal on a resource (RFC 6750 with RFC 9728's resource_metadata). */
  challenge(resource: ResourceName, err: DomainError): string {
    const error =
      err.code === 'insufficient_scope'
        ? { code: 'insufficient_scope' as const, description: err.message }
        : err.code === 'invalid_token'
          ? { code: 'invalid_token' as const, description: err.message }
          : undefined;
    return challenge(this.resources[resource], this.issuer, error);
  }

  /** Verifies an access token for a resource: the person (or their agent), the grant, and what its scope allows. */
  async verify(token: string, resource: TokenResource): Promise<VerifiedToken> {
    const provider = await this.provider();
    const at = await provider.AccessToken.find(token);
    if (!at || at.isExpired) throw invalidToken('The access token is invalid, expired or revoked.');
    const want = this.resources[resource].id;
    const aud = at.aud as unknown;
    if (aud !== want && !(Array.isArray(aud) && aud.length === 1 && aud[0] === want)) {
      throw invalidToken('This access token was issued for another resource.');
    }
    if (!at.accountId || !at.grantId) throw invalidToken('The access token is invalid, expired or revoked.');
    const access = accessOf(resource, new Set(String(at.scope ?? '').split(' ')));
    if (!access) {
      throw new DomainError(
        'forbidden',
        'insufficient_scope',
        `This access token allows nothing on ${want}: it needs ${this.resources[resource].challengeScope}.`,
      );
    }
    // The grant says whether its tokens act as one of the person's agents; that agent must still be theirs.
    const grant = await provider.Grant.find(at.grantId);
    if (!grant) throw invalidToken('The access token is invalid, expired or revoked.');
    const agentId = agentOf(grant);
    if (agentId) await agentOfPerson(this.deps.registry, this.deps.signer, at.accountId, agentId);
    return {
      userId: at.accountId,
      ...(agentId ? { agentId } : {}),
      grantId: at.grantId,
      clientId: String(at.clientId),
      expiresAt: (at.exp ?? 0) * 1000,
      ...access,
    };
  }
}
