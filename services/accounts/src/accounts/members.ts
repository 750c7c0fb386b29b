import { z } from 'zod';

import { DomainError, type Principal } from '@svc/kit';

import { ACCOUNT_ID_RE, actorOf, requireAccountWide, requireAuthority, requireManager } from './access.js';
import { AccountsCore, decodeCursor, limitOf, type Page, paged, parse } from './core.js';
import type { MemberRow } from './store.js';

const RoleInput = z.enum(['owner', 'admin', 'member'], { error: 'must be owner, admin or member' });

/** The members of an organization and their roles. */
export class Members extends AccountsCore {
  async listMembers(p: Principal, accountId: string, page: Page): Promise<{ rows: MemberRow[]; nextCursor?: string }> {
    const { account } = await this.access(p, accountId);
    const limit = limitOf(page.limit);
    if (account.kind === 'user') {
      // A person's own account has one member: that person.
      return { rows: [{ ...account, role: 'owner', added_at: account.created_at }] };
    }
    const rows = await this.store.members(accountId, decodeCursor(page.cursor, ACCOUNT_ID_RE), limit + 1);
    return paged(rows, limit);
  }

  /** Adds a person to an organization, or changes their role. Owners manage owners; admins the rest. */
  async addMember(p: Principal, accountId: string, memberId: string, roleIn: string): Promise<{ member: MemberRow; created: boolean }> {
    requireAuthority(p);
    const role = parse(RoleInput, roleIn, 'invalid_request');
    const { account, standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    if (account.kind !== 'organization') {
      throw new DomainError('unprocessable', 'not_an_organization', 'Only an organization has members.');
    }
    if (!ACCOUNT_ID_RE.test(memberId)) throw new DomainError('invalid_argument', 'invalid_request', 'accountId: must be an account id (acct_…)');
    const person = await this.store.byId(memberId);
    if (!person) throw new DomainError('not_found', 'member_not_found', 'No user account has this id.');
    if (person.kind !== 'user') throw new DomainError('unprocessable', 'invalid_member', 'Members are people: a user account id.');
    const actor = actorOf(p);
    const result = await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const current = await this.store.lockMembership(q, accountId, memberId);
      if (standing === 'admin' && (role === 'owner' || current?.role === 'owner')) {
        throw new DomainError('forbidden', 'insufficient_role', 'Only an owner adds owners or changes an owner’s role.');
      }
      if (current?.role === role) return { addedAt: current.created_at, created: false, changed: false };
      if (current?.role === 'owner' && (await this.store.ownerCount(q, accountId)) <= 1) {
        throw new DomainError('conflict', 'last_owner', 'An organization keeps at least one owner.');
      }
      const addedAt = await this.store.upsertMembership(q, accountId, memberId, role, actor);
      await this.audit(q, {
        accountId,
        action: current ? 'member.role_changed' : 'member.added',
        actor,
        target: { kind: 'account', id: memberId },
        data: { memberId, role, ...(current ? { previousRole: current.role } : {}) },
      });
      return { addedAt, created: !current, changed: true };
    });
    if (result.changed) this.kick();
    return { member: { ...person, role, added_at: result.addedAt }, created: result.created };
  }

  /** Removes a member; anyone may leave, owners and admins remove others (admins not owners). */
  async removeMember(p: Principal, accountId: string, memberId: string): Promise<void> {
    requireAuthority(p);
    const { account, standing } = await this.access(p, accountId);
    const self = p.kind === 'human' && memberId === p.userId;
    if (!self) requireManager(standing);
    requireAccountWide(p);
    if (account.kind !== 'organization') throw new DomainError('unprocessable', 'not_an_organization', 'Only an organization has members.');
    const actor = actorOf(p);
    await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const current = await this.store.lockMembership(q, accountId, memberId);
      if (!current) throw new DomainError('not_found', 'member_not_found', 'This person is not a member.');
      if (!self && standing === 'admin' && current.role === 'owner') {
        throw new DomainError('forbidden', 'insufficient_role', 'Only an owner removes an owner.');
      }
      if (current.role === 'owner' && (await this.store.ownerCount(q, accountId)) <= 1) {
        throw new DomainError('conflict', 'last_owner', 'An organization keeps at least one owner.');
      }
      await this.store.deleteMembership(q, accountId, memberId);
      await this.audit(q, {
        accountId,
        action: 'member.removed',
        actor,
        target: { kind: 'account', id: memberId },
        data: { memberId, role: current.role },
      });
    });
    this.kick();
  }
}
