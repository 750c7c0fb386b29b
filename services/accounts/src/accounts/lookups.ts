import { z } from 'zod';

import { DomainError, type Principal } from '@svc/kit';

import { ACCOUNT_ID_RE, actorOf, canChangeAuthority, HOST_ID_RE, requireManager, type Standing } from './access.js';
import { AccountsCore, Name, parse } from './core.js';
import type { AuditRow, GrantRow, HostRow, MemberRow } from './store.js';

const hostNotFound = () => new DomainError('not_found', 'host_not_found', 'Host not found.');
const HostName = z.object({ name: Name });

/**
 * One thing at a time (docs/accounts.md): a host, renaming it, a member, an audit event, and
 * what the caller may do in its acting account. What the caller cannot see is not found.
 */
export class Lookups extends AccountsCore {
  /** A live host of an account the caller has standing in. */
  private async host(p: Principal, hostId: string): Promise<{ host: HostRow; standing: Standing }> {
    const h = HOST_ID_RE.test(hostId) ? await this.store.hostById(hostId) : null;
    if (!h) throw hostNotFound();
    if (p.kind === 'host' && p.hostId === h.id) return { host: h, standing: 'host' };
    try {
      const { standing } = await this.access(p, h.account_id);
      return { host: h, standing };
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found') throw hostNotFound();
      throw err;
    }
  }

  async getHost(p: Principal, hostId: string): Promise<HostRow> {
    return (await this.host(p, hostId)).host;
  }

  /** Renames a host: a manager of its account (a name is no authority: an agent of a manager's key may not, its standing is agent). */
  async renameHost(p: Principal, hostId: string, name: string): Promise<HostRow> {
    const body = parse(HostName, { name });
    const { host, standing } = await this.host(p, hostId);
    requireManager(standing);
    if (host.name === body.name) return host;
    const actor = actorOf(p);
    const renamed = await this.sql.tx(async (q) => {
      const h = await this.store.hostById(hostId, q, true);
      if (!h) throw hostNotFound();
      const next = await this.store.renameHost(q, hostId, body.name);
      await this.audit(q, {
        accountId: h.account_id,
        action: 'host.renamed',
        actor,
        target: { kind: 'host', id: h.id },
        data: { hostId: h.id, name: body.name, previousName: h.name },
      });
      return next;
    });
    this.kick();
    return renamed;
  }

  async getMember(p: Principal, accountId: string, memberId: string): Promise<MemberRow> {
    const { account } = await this.access(p, accountId);
    const notMember = () => new DomainError('not_found', 'member_not_found', 'This person is not a member.');
    if (!ACCOUNT_ID_RE.test(memberId)) throw notMember();
    if (account.kind === 'user') {
      if (memberId !== account.id) throw notMember();
      return { ...account, role: 'owner', added_at: account.created_at };
    }
    const m = await this.store.member(accountId, memberId);
    if (!m) throw notMember();
    return m;
  }

  async getAuditEvent(p: Principal, accountId: string, eventId: string): Promise<AuditRow> {
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    const e = /^evt_[0-9a-z]{26}$/.test(eventId) ? await this.store.auditById(accountId, eventId) : null;
    if (!e) throw new DomainError('not_found', 'audit_event_not_found', 'Audit event not found.');
    return e;
  }

  /** What the caller may do in its acting account: its standing, whether authority changes are open to it, the grants it holds. */
  async permissions(p: Principal): Promise<{ standing: Standing; canChangeAuthority: boolean; canManage: boolean; held: GrantRow[] }> {
    const { standing } = await this.access(p, p.accountId);
    const ids =
      p.kind === 'agent' ? [p.agentId!] : p.kind === 'host' ? [p.hostId!] : p.kind === 'human' ? [...new Set([p.userId!, p.accountId])] : [];
    const held = ids.length ? await this.store.grantsHeld(ids, { limit: 100 }) : [];
    return {
      standing,
      canChangeAuthority: canChangeAuthority(p, standing),
      canManage: standing === 'owner' || standing === 'admin',
      held,
    };
  }
}
