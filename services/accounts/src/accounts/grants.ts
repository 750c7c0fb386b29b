import { z } from 'zod';

import { GrantScope, GrantVerb } from '@svc/contract';
import { DomainError, newId, type Principal } from '@svc/kit';

import {
  ACCOUNT_ID_RE,
  actorOf,
  AGENT_ID_RE,
  GRANT_ID_RE,
  HOST_ID_RE,
  projectScope,
  requireAuthority,
  requireManager,
  scopeWithin,
  SYSTEM_ACTOR,
} from './access.js';
import { AccountsCore, decodeCursor, isUniqueViolation, limitOf, type Page, paged, parse } from './core.js';
import type { GrantRow } from './store.js';

export const Scope = GrantScope;
const GrantInput = z.object({
  granteeId: z.string().min(1, 'is required').max(64),
  verbs: z.array(GrantVerb).min(1, 'must hold at least one verb').max(50, 'may hold at most 50 verbs'),
  scope: Scope.optional(),
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }).optional(),
});

const grantNotFound = () => new DomainError('not_found', 'grant_not_found', 'Standing grant not found.');

/** Standing grants: given by an account's managers to agents, hosts and other accounts. */
export class Grants extends AccountsCore {
  async listGrants(p: Principal, accountId: string, page: Page): Promise<{ rows: GrantRow[]; nextCursor?: string }> {
    await this.access(p, accountId);
    const limit = limitOf(page.limit);
    const rows = await this.store.grantsOf(accountId, {
      before: decodeCursor(page.cursor, GRANT_ID_RE),
      limit: limit + 1,
      scopePrefix: p.projectId ? projectScope(p.projectId) : undefined,
    });
    return paged(rows, limit);
  }

  /** Grants the caller holds: given to its agent id, host id, person or acting account. */
  async listHeld(p: Principal, page: Page): Promise<{ rows: GrantRow[]; nextCursor?: string }> {
    const ids =
      p.kind === 'agent' ? [p.agentId!] : p.kind === 'host' ? [p.hostId!] : p.kind === 'human' ? [...new Set([p.userId!, p.accountId])] : [];
    const limit = limitOf(page.limit);
    const rows = ids.length ? await this.store.grantsHeld(ids, { before: decodeCursor(page.cursor, GRANT_ID_RE), limit: limit + 1 }) : [];
    return paged(rows, limit);
  }

  /**
   * The kind of a grantee the granting account can see. An account is addressed by its id (a
   * person shares with another by that id), so any existing account may be a grantee. An agent or
   * a host is visible only when it belongs to the granting account or to an account it shares an
   * organization with: one of any other account answers exactly as an id that does not exist, so
   * that a grant is no oracle for another tenant's principals.
   */
  private async granteeKind(accountId: string, granteeId: string): Promise<GrantRow['grantee_kind']> {
    const notFound = () => new DomainError('not_found', 'grantee_not_found', 'No agent, host or account has this id.');
    const visible = async (owner: string | undefined) =>
      owner !== undefined && (owner === accountId || (await this.store.sharesOrganization(accountId, owner)));
    if (ACCOUNT_ID_RE.test(granteeId)) {
      if (granteeId === accountId) {
        throw new DomainError('unprocessable', 'invalid_grantee', 'An account already holds every right on itself.');
      }
      if (!(await this.store.byId(granteeId))) throw notFound();
      return 'account';
    }
    if (HOST_ID_RE.test(granteeId)) {
      if (!(await visible((await this.store.hostById(granteeId))?.account_id))) throw notFound();
      return 'host';
    }
    if (AGENT_ID_RE.test(granteeId)) {
      if (!(await visible((await this.agents.agent(granteeId))?.owner_account_id))) throw notFound();
      return 'agent';
    }
    throw new DomainError('invalid_argument', 'invalid_request', 'granteeId: must be an agent (agt_…), host (host_…) or account (acct_…) id');
  }

  /**
   * Creates a standing grant, or widens the live one for the same grantee and scope (verbs are
   * added, the later expiry wins). Sending the same grant again changes nothing (a retry).
   */
  async createGrant(
    p: Principal,
    accountId: string,
    input: { granteeId: string; verbs: string[]; scope?: string; expiresAt?: string },
  ): Promise<{ grant: GrantRow; outcome: 'created' | 'widened' | 'unchanged' }> {
    requireAuthority(p);
    const body = parse(GrantInput, input);
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    let scope = body.scope ?? (p.projectId ? projectScope(p.projectId) : 'account');
    if (p.projectId && !scopeWithin(scope, projectScope(p.projectId))) {
      throw new DomainError(
        'forbidden',
        'project_scope',
        `This key is limited to project ${p.projectId}: the scope must be ${projectScope(p.projectId)} or inside it.`,
      );
    }
    scope = scope.trim();
    const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw new DomainError('invalid_argument', 'invalid_request', 'expiresAt: must be in the future');
    }
    const verbs = [...new Set(body.verbs)].sort();
    const granteeKind = await this.granteeKind(accountId, body.granteeId);
    const actor = actorOf(p);
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await this.sql.tx(async (q) => {
          let existing = await this.store.liveGrantFor(q, accountId, body.granteeId, scope);
          if (existing?.expires_at && existing.expires_at.getTime() <= Date.now()) {
            // An expired grant is over: the new one starts afresh.
            await this.store.revokeGrant(q, existing.id, SYSTEM_ACTOR, existing.expires_at);
            existing = null;
          }
          if (!existing) {
            const grant = await this.store.insertGrant(q, {
              id: newId('grt'),
              account_id: accountId,
              grantee_kind: granteeKind,
              grantee_id: body.granteeId,
              verbs,
              scope,
              expires_at: expiresAt,
              created_by: actor,
            });
            await this.audit(q, {
              accountId,
              action: 'grant.created',
              actor,
              target: { kind: granteeKind, id: body.granteeId },
              data: { grantId: grant.id, verbs, scope, expiresAt: expiresAt?.toISOString() ?? null },
            });
            return { grant, outcome: 'created' as const };
          }
          const union = [...new Set([...existing.verbs, ...verbs])].sort();
          const expiry =
            existing.expires_at === null || expiresAt === null ? null : new Date(Math.max(existing.expires_at.getTime(), expiresAt.getTime()));
          const sameExpiry = (expiry?.getTime() ?? null) === (existing.expires_at?.getTime() ?? null);
          if (union.length === existing.verbs.length && sameExpiry) return { grant: existing, outcome: 'unchanged' as const };
          const grant = await this.store.widenGrant(q, existing.id, union, expiry);
          await this.audit(q, {
            accountId,
            action: 'grant.widened',
            actor,
            target: { kind: granteeKind, id: body.granteeId },
            data: {
              grantId: grant.id,
              verbs: union,
              addedVerbs: union.filter((v) => !existing!.verbs.includes(v)),
              scope,
              expiresAt: expiry?.toISOString() ?? null,
              previousExpiresAt: existing.expires_at?.toISOString() ?? null,
            },
          });
          return { grant, outcome: 'widened' as const };
        });
        if (out.outcome !== 'unchanged') this.kick();
        return out;
      } catch (err) {
        // Two first grants at once: the loser widens the winner's.
        if (isUniqueViolation(err) && attempt < 2) continue;
        throw err;
      }
    }
  }

  /** Deletes a grant at once; deleting it again succeeds (a retry). */
  async deleteGrant(p: Principal, id: string): Promise<void> {
    requireAuthority(p);
    if (!GRANT_ID_RE.test(id)) throw grantNotFound();
    const grant = (await this.store.grantById(id)) ?? (await this.store.revokedGrant(id));
    if (!grant) throw grantNotFound();
    const { standing } = await this.access(p, grant.account_id).catch((err) => {
      throw err instanceof DomainError && err.kind === 'not_found' ? grantNotFound() : err;
    });
    if (p.projectId && !scopeWithin(grant.scope, projectScope(p.projectId))) throw grantNotFound();
    requireManager(standing);
    if (grant.revoked_at) return;
    const actor = actorOf(p);
    const done = await this.sql.tx(async (q) => {
      const live = await this.store.grantById(id, q, true);
      if (!live) return false;
      await this.store.revokeGrant(q, id, actor);
      await this.audit(q, {
        accountId: live.account_id,
        action: 'grant.deleted',
        actor,
        target: { kind: live.grantee_kind, id: live.grantee_id },
        data: { grantId: id, verbs: live.verbs, scope: live.scope },
      });
      return true;
    });
    if (done) this.kick();
  }
}
