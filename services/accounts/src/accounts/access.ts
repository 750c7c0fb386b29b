import { type Actor, DomainError, type Principal } from '@svc/kit';

import type { Role } from './store.js';

export { actorOf, requireAuthority } from '@svc/kit';

/**
 * Who may do what (DESIGN §4, docs/accounts.md):
 * - authority changes (grants, members, hosts, settings, signing keys, new accounts) need a person
 *   through the API: an agent or host key answers 403 human_principal_required, so does the MCP
 *   channel; they also need the owner or admin role in the account;
 * - a resource of an account the caller cannot act in answers 404;
 * - a project-scoped key sees its project only and changes nothing account-wide.
 */

export const ACCOUNT_ID_RE = /^acct_[0-9a-z]{26}$/;
export const AGENT_ID_RE = /^agt_[0-9a-z]{26}$/;
export const HOST_ID_RE = /^host_[0-9a-z]{26}$/;
export const GRANT_ID_RE = /^grt_[0-9a-z]{26}$/;

/** The caller's standing in one account: its role, or `agent` for an agent acting in it. */
export type Standing = Role | 'agent' | 'host' | 'system';

export const accountNotFound = () => new DomainError('not_found', 'account_not_found', 'Account not found.');

export const SYSTEM_ACTOR: Actor = { kind: 'system', id: 'system', keyId: null, channel: 'internal', accountId: 'system' };

/** Owners and admins manage an account; members and agents use it. */
export function requireManager(standing: Standing): void {
  if (standing === 'owner' || standing === 'admin' || standing === 'system') return;
  throw new DomainError('forbidden', 'insufficient_role', 'This needs the owner or admin role in the account.');
}

/** Account-wide changes are out of reach of a project-scoped key. */
export function requireAccountWide(p: Principal): void {
  if (p.projectId) {
    throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}; account-wide changes need an unscoped key.`);
  }
}

/** A person may change authority in this account (what /accounts/me/chain reports). */
export function canChangeAuthority(p: Principal, standing: Standing | null): boolean {
  return p.kind === 'human' && p.channel !== 'mcp' && !p.projectId && (standing === 'owner' || standing === 'admin');
}

/** The scope a project-scoped key is confined to. */
export const projectScope = (projectId: string) => `project:${projectId}`;

/** Does `scope` lie inside `outer` (`project:a` holds `project:a/x`)? */
export function scopeWithin(scope: string, outer: string): boolean {
  return scope === outer || scope.startsWith(`${outer}/`);
}

/** A granted verb pattern (`hosts.call`, `hosts.*`, `hosts:*`, `*`) covers a verb. */
export function verbCovers(pattern: string, verb: string): boolean {
  if (pattern === '*' || pattern === verb) return true;
  return (pattern.endsWith('.*') || pattern.endsWith(':*')) && verb.startsWith(pattern.slice(0, -1));
}
