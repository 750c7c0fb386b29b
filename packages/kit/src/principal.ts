import { jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';

import { DomainError } from './errors.js';

/** Who is calling. Carried from the gateway to services in gRPC metadata, signed. */
export const PrincipalSchema = z.object({
  kind: z.enum(['human', 'agent', 'host', 'system']),
  userId: z.string().optional(),
  agentId: z.string().optional(),
  hostId: z.string().optional(),
  /** The account the request acts in (the caller's own, or an organization via x-svc-account). */
  accountId: z.string(),
  keyId: z.string().optional(),
  projectId: z.string().optional(),
  channel: z.enum(['api', 'mcp', 'internal']),
  /** Role in accountId when acting for an organization: owner, admin or member. */
  role: z.string().optional(),
  /**
   * The OAuth grant a request was made under (an access token, not an API key; docs/oauth.md):
   * such a principal never changes authority nor mints keys, whatever its channel.
   */
  grantId: z.string().optional(),
  /** The token allows only operations without effects (scope `mcp:read` or `api:read`). */
  readOnly: z.boolean().optional(),
});
export type Principal = z.infer<typeof PrincipalSchema>;

export const PRINCIPAL_METADATA_KEY = 'x-svc-principal';
const ISSUER = 'svc-gateway';
const AUDIENCE = 'svc-services';

/**
 * Signs and verifies principal tokens (JWT, HS256, short-lived) with the internal secret.
 * Verification results are cached by token until they expire, so a token reused for many
 * calls (the gateway caches one per verified key) costs one HMAC check.
 */
export class PrincipalSigner {
  private readonly key: Uint8Array;
  private readonly verified = new Map<string, { principal: Principal; exp: number }>();

  constructor(
    secret: string,
    private readonly ttlSeconds = 300,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  /** Returns the token and the time (ms) it stops being valid. */
  async sign(principal: Principal): Promise<{ token: string; expiresAt: number }> {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ p: principal })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .sign(this.key);
    return { token, expiresAt: (now + this.ttlSeconds) * 1000 };
  }

  async verify(token: string): Promise<Principal> {
    const hit = this.verified.get(token);
    if (hit && hit.exp > Date.now()) return hit.principal;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
      });
      const principal = PrincipalSchema.parse(payload.p);
      if (this.verified.size > 10_000) this.verified.clear();
      this.verified.set(token, { principal, exp: (payload.exp ?? 0) * 1000 });
      return principal;
    } catch (err) {
      throw new DomainError('unauthenticated', 'invalid_principal', 'The call carries no valid principal.', undefined, {
        cause: err,
      });
    }
  }
}

/** The account whose resources the principal acts on. */
export function actingAccount(p: Principal): string {
  return p.accountId;
}

export function isHuman(p: Principal): boolean {
  return p.kind === 'human' || p.kind === 'system';
}

/** Who did something, as services record it in rows, audit entries and events. */
export interface Actor {
  kind: 'human' | 'agent' | 'host' | 'system';
  id: string;
  keyId: string | null;
  channel: string;
  /** The account the actor acted in. */
  accountId: string;
}

export function actorOf(p: Principal): Actor {
  const id = p.kind === 'human' ? p.userId : p.kind === 'agent' ? p.agentId : p.kind === 'host' ? p.hostId : 'system';
  return { kind: p.kind, id: id ?? 'unknown', keyId: p.keyId ?? null, channel: p.channel, accountId: p.accountId };
}

/**
 * Authority changes (grants, members, hosts, settings, signing keys, provider keys): a person (or
 * the platform itself) through the API; an agent or host key, and the MCP channel, answer 403
 * human_principal_required. `what` names the change in the MCP refusal.
 */
export function requireAuthority(p: Principal, what = 'Authority changes are made'): void {
  requireHuman(p);
  if (p.channel === 'mcp') {
    throw new DomainError('forbidden', 'human_principal_required', `${what} by a person through the API, never through the MCP server.`);
  }
}

/** Authority-changing operations: only a person, through the API, may do them. */
export function requireHuman(p: Principal): void {
  if (!isHuman(p)) {
    throw new DomainError(
      'forbidden',
      'human_principal_required',
      'This operation changes authority and must be made by a person, not an agent or host key.',
    );
  }
}
