/**
 * The protected resources the authorization server issues tokens for, and their scopes
 * (docs/oauth.md). A token is bound to one resource (RFC 8707): the MCP endpoint (`<base>/mcp`)
 * or the HTTP API (`<base>/v1`), and is refused by the other.
 *
 * Scopes: `mcp:read` (tools without effects only) and `mcp:write` (every tool a person's key may
 * call through MCP); `mcp:toolset:<area>` narrows the tools to those areas (any number of them;
 * none: every area). For the API: `api:read` (GET operations only) and `api:write`.
 */

export type ResourceName = 'mcp' | 'api';

export interface ProtectedResource {
  name: ResourceName;
  /** Its identifier: the URL a client names in `resource`. */
  id: string;
  /** The path of its metadata (RFC 9728: the well-known prefix before the resource's path). */
  metadataPath: string;
  scopes: string[];
  /** The scope asked for in a 401's challenge: what full use needs. */
  challengeScope: string;
}

export const READ_SCOPE = { mcp: 'mcp:read', api: 'api:read' } as const;
export const WRITE_SCOPE = { mcp: 'mcp:write', api: 'api:write' } as const;
export const TOOLSET_SCOPE_PREFIX = 'mcp:toolset:';

export function protectedResources(base: string, areas: readonly string[]): Record<ResourceName, ProtectedResource> {
  return {
    mcp: {
      name: 'mcp',
      id: `${base}/mcp`,
      metadataPath: '/.well-known/oauth-protected-resource/mcp',
      scopes: [READ_SCOPE.mcp, WRITE_SCOPE.mcp, ...areas.map((a) => `${TOOLSET_SCOPE_PREFIX}${a}`)],
      challengeScope: WRITE_SCOPE.mcp,
    },
    api: {
      name: 'api',
      id: `${base}/v1`,
      metadataPath: '/.well-known/oauth-protected-resource/v1',
      scopes: [READ_SCOPE.api, WRITE_SCOPE.api],
      challengeScope: WRITE_SCOPE.api,
    },
  };
}

/** What a set of granted scopes allows on a resource; null when it allows nothing there. */
export function accessOf(resource: ResourceName, scopes: ReadonlySet<string>): { readOnly: boolean; toolsets: string[] } | null {
  const write = scopes.has(WRITE_SCOPE[resource]);
  if (!write && !scopes.has(READ_SCOPE[resource])) return null;
  const toolsets =
    resource === 'mcp' ? [...scopes].filter((s) => s.startsWith(TOOLSET_SCOPE_PREFIX)).map((s) => s.slice(TOOLSET_SCOPE_PREFIX.length)) : [];
  return { readOnly: !write, toolsets: toolsets.sort() };
}

/** A scope as a person narrows it to read only: each write scope becomes its read scope. */
export function narrowScope(scope: string): string {
  if (scope === WRITE_SCOPE.mcp) return READ_SCOPE.mcp;
  if (scope === WRITE_SCOPE.api) return READ_SCOPE.api;
  return scope;
}

/** A scope in words, for the consent page. */
export function describeScope(scope: string): string {
  if (scope === 'mcp:read')
    return 'Use the MCP tools that only read: list, search and read your files, threads, models and more. Nothing is changed.';
  if (scope === 'mcp:write') return 'Use every MCP tool a person may use: read, and also create, change and delete (files, threads, sites, orders).';
  if (scope.startsWith(TOOLSET_SCOPE_PREFIX)) return `Limited to the tools of the area "${scope.slice(TOOLSET_SCOPE_PREFIX.length)}".`;
  if (scope === 'api:read') return 'Call the API operations that only read (GET).';
  if (scope === 'api:write') return 'Call every API operation a person may call, except changes of authority and API keys.';
  if (scope === 'offline_access') return 'Stay connected: renew its access without asking you again, until you revoke it.';
  return scope;
}

/** The metadata of a protected resource (RFC 9728). */
export function resourceMetadata(r: ProtectedResource, issuer: string): Record<string, unknown> {
  return {
    resource: r.id,
    authorization_servers: [issuer],
    scopes_supported: r.scopes,
    bearer_methods_supported: ['header'],
    resource_name: r.name === 'mcp' ? 'svc MCP server' : 'svc API',
    resource_documentation: `${issuer}/openapi.json`,
  };
}

/** The challenge of a 401 (RFC 6750, RFC 9728 §5.1): where the metadata is, and the scope needed. */
export function challenge(
  r: ProtectedResource,
  issuer: string,
  error?: { code: 'invalid_token' | 'insufficient_scope'; description: string },
): string {
  const parts = ['Bearer realm="svc"', `resource_metadata="${issuer}${r.metadataPath}"`, `scope="${r.challengeScope}"`];
  if (error) parts.push(`error="${error.code}"`, `error_description="${error.description.replace(/["\\]/g, '')}"`);
  return parts.join(', ');
}
