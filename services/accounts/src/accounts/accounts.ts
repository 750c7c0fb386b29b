import { z } from 'zod';

import { Email } from '@svc/contract';
import { DomainError, generateApiKey, hashSecret, keyPrefix, newId, type Principal } from '@svc/kit';

import { ACCOUNT_ID_RE, actorOf, canChangeAuthority, requireAccountWide, requireAuthority, type Standing } from './access.js';
import { AccountsCore, decodeCursor, encodeCursor, isUniqueViolation, limitOf, Name, type Page, parse } from './core.js';
import type { AccountRow, Role } from './store.js';

const CreateAccountInput = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('organization'), name: Name, email: z.undefined({ error: 'an organization has no email' }).optional() }),
  z.object({ kind: z.literal('user'), name: Name, email: Email.optional() }),
]);

export interface ChainLink {
  kind: 'agent' | 'user' | 'organization' | 'host';
  id: string;
  name: string;
  relation: 'self' | 'owner' | 'member';
  role?: string;
}

/** Accounts: listing, reading, creating (organizations by people, user accounts by the operator), the chain of authority. */
export class AccountOps extends AccountsCore {
  /** The accounts the caller can act in: their own and their organizations (an agent: its acting account). */
  async listAccounts(p: Principal, page: Page): Promise<{ rows: Array<AccountRow & { role?: string }>; nextCursor?: string }> {
    const limit = limitOf(page.limit);
    const after = decodeCursor(page.cursor, ACCOUNT_ID_RE);
    let all: Array<AccountRow & { role?: string }>;
    if (p.kind === 'human' && !p.projectId) {
      const own = await this.store.byId(p.userId!);
      const orgs = await this.store.organizationsOf(p.userId!);
      all = [...(own ? [{ ...own, role: 'owner' }] : []), ...orgs];
    } else {
      const { account, standing } = await this.access(p, p.accountId);
      all = [{ ...account, role: standing === 'agent' || standing === 'host' ? undefined : standing }];
    }
    all.sort((a, b) => (a.id < b.id ? -1 : 1));
    const rows = all.filter((a) => !after || a.id > after);
    const out = rows.slice(0, limit);
    return { rows: out, nextCursor: rows.length > limit ? encodeCursor(out[out.length - 1]!.id) : undefined };
  }

  async getAccount(p: Principal, id: string): Promise<AccountRow & { role?: string }> {
    const { account, standing } = await this.access(p, id);
    return { ...account, role: standing === 'agent' || standing === 'host' || standing === 'system' ? undefined : standing };
  }

  /**
   * A person creates an organization (and becomes its owner); the operator creates user accounts,
   * each with a first API key (plaintext returned once, imported into the keys service by hash).
   */
  async createAccount(
    p: Principal,
    input: { kind: string; name: string; email?: string },
  ): Promise<{ account: AccountRow & { role?: string }; key?: string; keyId?: string }> {
    requireAuthority(p);
    const body = parse(CreateAccountInput, { kind: input.kind, name: input.name, ...(input.email ? { email: input.email } : {}) });
    const actor = actorOf(p);
    if (body.kind === 'organization') {
      if (p.kind !== 'human') throw new DomainError('forbidden', 'human_principal_required', 'An organization is created by a person.');
      requireAccountWide(p);
      const id = newId('acct');
      const account = await this.sql.tx(async (q) => {
        const a = await this.store.insertAccount(q, { id, kind: 'organization', name: body.name, email: null, createdBy: actor });
        await this.store.upsertMembership(q, id, p.userId!, 'owner', actor);
        await this.audit(q, {
          accountId: id,
          action: 'organization.created',
          actor,
          target: { kind: 'account', id },
          data: { name: body.name, ownerId: p.userId },
        });
        await this.audit(q, {
          accountId: id,
          action: 'member.added',
          actor,
          target: { kind: 'account', id: p.userId! },
          data: { memberId: p.userId, role: 'owner' },
        });
        return a;
      });
      this.kick();
      return { account: { ...account, role: 'owner' } };
    }

    // A user account: the operator's privilege.
    const caller = p.kind === 'human' ? await this.store.byId(p.userId!) : null;
    if (!caller?.is_operator) {
      throw new DomainError('forbidden', 'operator_required', 'Only the platform operator creates user accounts.');
    }
    requireAccountWide(p);
    if (body.email && (await this.store.byEmail(body.email))) {
      throw new DomainError('conflict', 'email_taken', 'An account with this email already exists.');
    }
    const id = newId('acct');
    const plaintext = generateApiKey();
    const token = await this.deps.systemToken();
    const imported = await this.deps
      .keysClient()
      .importKey(
        { keyHash: hashSecret(plaintext), prefix: keyPrefix(plaintext), name: 'first key', accountId: id, ownerKind: 'human', ownerId: id },
        { principalToken: token },
      );
    try {
      const account = await this.sql.tx(async (q) => {
        const a = await this.store.insertAccount(q, { id, kind: 'user', name: body.name, email: body.email ?? null, createdBy: actor });
        const data = { name: body.name, email: body.email ?? null, firstKeyId: imported.key!.id };
        await this.audit(q, { accountId: id, action: 'account.created', actor, target: { kind: 'account', id }, data });
        await this.audit(q, { accountId: p.accountId, action: 'account.created', actor, target: { kind: 'account', id }, data });
        return a;
      });
      this.kick();
      return { account: { ...account, role: 'owner' }, key: plaintext, keyId: imported.key!.id };
    } catch (err) {
      // No account, no key: the imported key must not outlive the failed creation.
      await this.deps
        .keysClient()
        .revokeOwnerKeys({ ownerKind: 'human', ownerId: id }, { principalToken: token })
        .catch((e) => this.deps.log.warn({ err: e, accountId: id }, 'could not revoke the key of a failed account creation'));
      if (isUniqueViolation(err)) throw new DomainError('conflict', 'email_taken', 'An account with this email already exists.');
      throw err;
    }
  }

  /** The caller's chain of authority: agent → owner account → organization it acts in. */
  async chain(p: Principal): Promise<{ chain: ChainLink[]; standing: Standing | null }> {
    const links: ChainLink[] = [];
    const linkOf = (a: AccountRow, relation: ChainLink['relation'], role?: string): ChainLink => ({
      kind: a.kind,
      id: a.id,
      name: a.name,
      relation,
      ...(role ? { role } : {}),
    });
    let standing: Standing | null = null;
    if (p.kind === 'human') {
      const user = await this.store.byId(p.userId!);
      if (user) links.push(linkOf(user, 'self'));
      if (p.accountId !== p.userId) {
        const org = await this.store.byId(p.accountId);
        if (org) links.push(linkOf(org, 'member', p.role));
        standing = (p.role as Role | undefined) ?? null;
      } else standing = 'owner';
    } else if (p.kind === 'agent') {
      const agent = await this.agents.agent(p.agentId!);
      links.push({ kind: 'agent', id: p.agentId!, name: agent?.name ?? p.agentId!, relation: 'self' });
      const ownerId = agent?.owner_account_id ?? p.accountId;
      const owner = await this.store.byId(ownerId);
      if (owner) links.push(linkOf(owner, 'owner'));
      if (p.accountId !== ownerId) {
        const org = await this.store.byId(p.accountId);
        if (org) links.push(linkOf(org, 'member', p.role));
      }
      standing = 'agent';
    } else if (p.kind === 'host') {
      const host = p.hostId ? await this.store.hostById(p.hostId) : null;
      links.push({ kind: 'host', id: p.hostId ?? 'unknown', name: host?.name ?? 'host', relation: 'self' });
      const owner = await this.store.byId(p.accountId);
      if (owner) links.push(linkOf(owner, 'owner'));
      standing = 'host';
    }
    return { chain: links, standing };
  }

  canChangeAuthority(p: Principal, standing: Standing | null): boolean {
    return canChangeAuthority(p, standing);
  }
}
