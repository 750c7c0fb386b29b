import { type Effect, effectOf, type HttpMethod, type PrincipalKind } from '@svc/api';
import { DomainError, type Principal } from '@svc/kit';

/** Who may call an operation: the principal kinds, and whether it changes authority. */
export interface Access {
  principals: PrincipalKind[];
  /** Changes authority (grants, owners, settings, signing keys, hosts): only a person may call it. */
  authority: boolean;
  /** A person's decision through the API (Route.personOnly): no agent or host key, no MCP channel. */
  personOnly?: boolean;
}

/**
 * The principal rules, the same for every front: an authority-changing operation needs a person
 * (403 `human_principal_required`), and only the declared kinds may call at all (403
 * `principal_not_allowed`). The system principal (the platform's own calls) passes.
 */
export function checkPrincipal(principal: Principal, access: Access & { id?: string; method?: HttpMethod; effect?: Effect }): void {
  const kind = principal.kind;
  if (principal.grantId !== undefined) checkOauthToken(principal, access);
  if (access.authority && kind !== 'human') {
    throw new DomainError(
      'forbidden',
      'human_principal_required',
      'This operation changes authority and must be made by a person, not an agent or host key.',
    );
  }
  if (access.personOnly && (kind !== 'human' || principal.channel === 'mcp')) {
    throw new DomainError(
      'forbidden',
      'human_principal_required',
      'A person makes this decision through the API: not an agent or host key, not the MCP channel.',
    );
  }
  if (kind !== 'system' && !access.principals.includes(kind)) {
    throw new DomainError('forbidden', 'principal_not_allowed', `A ${kind} key cannot call this operation.`);
  }
}

/** Operations that make a credential: an OAuth token must not turn itself into a key that outlives its grant. */
const MINTS_KEYS = new Set(['apiKeys.create', 'meApiKeys.create', 'meApiKeys.rotate', 'agentKeys.create']);

/**
 * A request made with an OAuth access token (docs/oauth.md): like every non-person channel it
 * never creates or widens a grant (no authority change, no key minted), and a read-only token
 * calls only operations without effects.
 */
function checkOauthToken(principal: Principal, access: Access & { id?: string; method?: HttpMethod; effect?: Effect }): void {
  if (access.authority) {
    throw new DomainError(
      'forbidden',
      'human_principal_required',
      'Authority changes are made by a person with an API key, never with an OAuth token.',
    );
  }
  if (access.id !== undefined && MINTS_KEYS.has(access.id)) {
    throw new DomainError('forbidden', 'oauth_token_cannot_mint_keys', 'An OAuth token cannot create or rotate API keys.');
  }
  // What the operation does (Route.effect), as MCP's read-only mode judges it: a POST that reads is a read.
  if (principal.readOnly && access.method !== undefined && effectOf({ method: access.method, effect: access.effect }) !== 'reads') {
    throw new DomainError('forbidden', 'read_only_token', 'This token was granted read-only access: it calls only operations without effects.');
  }
}
