import { DomainError, type Handlers } from '@svc/kit';
import { accounts } from '@svc/proto';

import type { AccountRow, AccountStore } from './store.js';

type Def = typeof accounts.AccountsServiceService;

const toAccount = (a: AccountRow): accounts.Account => ({
  id: a.id,
  kind: a.kind,
  name: a.name,
  createdAt: a.created_at.toISOString(),
  email: a.email ?? undefined,
});

// A non-member gets the same answer as for an account that does not exist.
const accountNotFound = () => new DomainError('not_found', 'account_not_found', 'Account not found.');

export function handlers(store: AccountStore): Handlers<Def> {
  return {
    async getMe(_req, { principal: p }) {
      const own = p.kind === 'human' ? p.userId! : p.accountId;
      const account = await store.byId(own);
      const orgs = p.kind === 'human' ? await store.organizationsOf(p.userId!) : [];
      return {
        account: account ? toAccount(account) : undefined,
        organizations: orgs.map((o) => ({ account: toAccount(o), role: o.role })),
      };
    },
    async resolveActingAccount(req, { principal: p }) {
      if (p.kind !== 'system') throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
      if (req.accountId === req.userId) return { accountId: req.accountId, role: 'owner' };
      const role = await store.membership(req.accountId, req.userId);
      if (!role) throw accountNotFound();
      return { accountId: req.accountId, role };
    },
  };
}
