import { hkdfSync } from 'node:crypto';

import { accountsClient } from '@svc/clients';
import { checkOutboundUrl, type Logger, pinnedFetch, type Registry } from '@svc/kit';

import { adapterClass } from './adapter.js';
import type { Configuration, KoaContextWithOIDC, Provider } from './oidc-types.js';
import type { ProtectedResource, ResourceName } from './resources.js';

/**
 * The authorization server (docs/oauth.md): oidc-provider (certified, OAuth 2.1 profile chosen
 * here), served by the gateway under /oauth, its records kept by the accounts service. Choices:
 * authorization code with PKCE (S256, required of every client); clients registered dynamically
 * (RFC 7591) or known by a metadata document at their https client_id (fetched through the
 * platform's address guard); tokens bound to one resource (RFC 8707), opaque (looked up, so a
 * revocation is immediate), short-lived; refresh tokens rotated on every use, a reused one
 * revoking its grant; revocation (RFC 7009). No implicit flow, no passwords, no client
 * credentials, no device flow.
 */

export interface OauthSettings {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /** Client ID Metadata Documents: hosts or networks allowed though private (the guard's `allow`). */
  metadataAllowedHosts: string[];
}

export interface ProviderDeps {
  registry: Registry;
  systemToken: () => Promise<string>;
  log: Logger;
  issuer: string;
  resources: Record<ResourceName, ProtectedResource>;
  /** The secret cookie keys are derived from (SVC_INTERNAL_SECRET, or the process's). */
  secret: string;
  trustProxy: boolean;
  settings: OauthSettings;
  /** A grant's tokens went: forget them at once. */
  revoked: (grantId: string) => void;
}

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/session/end',
  userinfo: '/oauth/userinfo',
  introspection: '/oauth/introspect',
  pushed_authorization_request: '/oauth/par',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
  credential: '/oauth/credential',
} as const;

/** Why a grant is revoked, from the request in progress. */
function reasonOf(ctx: KoaContextWithOIDC | undefined): string {
  const route = ctx?.oidc?.route;
  if (route === 'revocation') return 'revoked_by_client';
  if (route === 'token') return ctx?.oidc?.params?.grant_type === 'refresh_token' ? 'refresh_token_reused' : 'code_reused';
  return 'grant_ended';
}

export async function createProvider(deps: ProviderDeps): Promise<Provider> {
  const { default: OidcProvider, errors } = await import('oidc-provider');
  const accounts = accountsClient(deps.registry);
  const { privateJwkJson } = await accounts.getOauthServerKeys({}, { principalToken: await deps.systemToken(), deadlineMs: 10_000 });
  const cookieKey = Buffer.from(hkdfSync('sha256', deps.secret, 'svc.gateway.oauth', 'cookies/v1', 32)).toString('base64url');
  const byId = new Map(Object.values(deps.resources).map((r) => [r.id, r]));
  const { settings } = deps;

  const configuration: Configuration = {
    adapter: adapterClass({
      registry: deps.registry,
      systemToken: deps.systemToken,
      reason: () => reasonOf(OidcProvider.ctx),
      revoked: deps.revoked,
    }) as unknown as Configuration['adapter'],
    jwks: { keys: privateJwkJson.map((j) => JSON.parse(j)) },
    cookies: {
      keys: [cookieKey],
      names: { session: 'svc_oauth_session', interaction: 'svc_oauth_interaction', resume: 'svc_oauth_resume' },
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    routes: OAUTH_ROUTES,
    scopes: ['offline_access', ...new Set(Object.values(deps.resources).flatMap((r) => r.scopes))],
    claims: { openid: ['sub'] },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'RS256',
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      // A client revokes only its own tokens (another's are left alone, answered 200 as RFC 7009 says).
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId,
      },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      introspection: { enabled: false },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        cacheDuration: { min: 60, max: 3600 },
      },
      resourceIndicators: {
        enabled: true,
        // A client that names no resource gets a token for the MCP endpoint: still bound to one.
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf ?? deps.resources.mcp.id,
        // A token is for one resource: a refresh names it again or gets the grant's.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
          const r = byId.get(indicator);
          if (!r) throw new errors.InvalidTarget(`unknown resource ${indicator}: this server issues tokens for ${[...byId.keys()].join(' and ')}`);
          return { scope: r.scopes.join(' '), audience: r.id, accessTokenTTL: settings.accessTokenTtlSeconds, accessTokenFormat: 'opaque' };
        },
      },
    } as Configuration['features'],
    // Refresh tokens for every code a client allowed to refresh gets, rotated on each use.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: settings.accessTokenTtlSeconds,
      AuthorizationCode: 60,
      RefreshToken: settings.refreshTokenTtlSeconds,
      Grant: settings.refreshTokenTtlSeconds,
      Session: 24 * 3600,
      Interaction: 15 * 60,
      IdToken: 600,
    },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: async (_ctx, interaction) => `/oauth/interaction/${interaction.uid}` },
    allowOmittingSingleRegisteredRedirectUri: false,
    // Client metadata documents are fetched only from public addresses (the models' rule for
    // base URLs), connected to the very addresses checked, no redirects, 2.5 s and 5 KiB at most
    // (oidc-provider's own bounds).
    fetch: (async (url: string | URL, options: RequestInit) => {
      const checked = await checkOutboundUrl(String(url), { allow: settings.metadataAllowedHosts });
      return pinnedFetch(checked)(String(url), { method: options.method, headers: options.headers, signal: options.signal });
    }) as Configuration['fetch'],
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = errorPage(String(out.error ?? 'error'), String(out.error_description ?? 'The request could not be completed.'));
    },
  };
  const provider = new OidcProvider(deps.issuer, configuration);
  provider.proxy = deps.trustProxy;
  provider.on('server_error', (_ctx, err) => deps.log.warn({ err }, 'oauth server error'));
  return provider;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function errorPage(code: string, description: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign-in error</title></head><body><main><h1>The sign-in could not go on</h1><p>${escapeHtml(description)}</p><p>Code: <code>${escapeHtml(code)}</code></p></main></body></html>`;
}
