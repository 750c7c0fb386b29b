import type { IncomingHttpHeaders } from 'node:http';

import type { Request } from 'express';

import { DomainError, type ErrorCode, type Principal } from '@svc/kit';

import type { Membership } from './open-streams.js';

/**
 * What a request presents (its secret, the account it acts in) and what verifying it yields: the
 * words the fronts and the authenticator (auth.ts) share, and the pieces its verifiers of API keys,
 * OAuth access tokens (oauth-tokens.ts) and host credentials (host-credentials.ts) have in common.
 */

/** A verified key, ready to use: its principal and the signed token that carries it to services. */
export interface AuthContext {
  principal: Principal;
  token: string;
  keyId: string;
  /** When the key expires (ms; null: never): what it holds open ends then (`hold`). */
  keyExpiresAt: number | null;
  /** Present when the credential is an OAuth access token (docs/oauth.md), not an API key. */
  oauth?: OauthAccess;
  /** When acting in an organization: the membership that allows it (what it holds open ends with it). */
  membership?: Membership;
  /**
   * When the credential's verification began (ms): what the request holds open ends at once if the
   * key (or grant) was revoked since, though the revocation came before the hold (`hold`).
   */
  authenticatedAt?: number;
}

/** What an OAuth access token allows, as its verification found it. */
export interface OauthAccess {
  grantId: string;
  clientId: string;
  /** Only operations (tools) without effects. */
  readOnly: boolean;
  /** MCP areas the token is limited to (none: every area). */
  toolsets: string[];
}

/** An access token as the authorization server knows it (fronts/oauth). */
export interface VerifiedToken extends OauthAccess {
  /** The person who approved the token. */
  userId: string;
  /** When the person chose so: the agent of theirs the token acts as (docs/oauth.md). */
  agentId?: string;
  /** When it expires (ms). */
  expiresAt: number;
}

/** Where a bearer token may be used: the resource it must have been issued for. */
export type TokenResource = 'mcp' | 'api';

/** Anything that is neither an API key nor a host credential and could be an access token. */
export const ACCESS_TOKEN_RE = /^(?!svch?_)[A-Za-z0-9_-]{20,512}$/;

/** A verification as the authenticator caches it. */
export interface CachedAuth extends AuthContext {
  /** When this entry must be re-verified (cache lifetime, token lifetime, key expiry). */
  until: number;
}

/** How long a verified key is trusted without asking the keys service (revocation events cut it short). */
export const VERIFIED_TTL_MS = 60_000;

export const unauthenticated = (code: ErrorCode, message: string) => new DomainError('unauthenticated', code, message);

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

/**
 * The account a request acts in, from its `x-svc-account` header (an organization the caller, or
 * the agent's owner, belongs to): the same on every front (API, MCP, WebDAV, Git), checked by
 * `Authenticator.authenticate` with the same membership and project rules.
 */
export function actingAccount(headers: IncomingHttpHeaders): string | undefined {
  const account = headers['x-svc-account'];
  return typeof account === 'string' && account ? account : undefined;
}

/**
 * The client address the failed-authentication and registration limits count by: `req.ip`, read
 * from the socket when no proxy is trusted (express would parse X-Forwarded-For only to ignore it).
 */
export const clientAddress = (req: Request): string => (req.app.get('trust proxy') ? req.ip : req.socket.remoteAddress) ?? 'unknown';
