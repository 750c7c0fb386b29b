import type { Handlers } from '@svc/kit';
import type { accounts } from '@svc/proto';

import type { Passkeys } from './passkeys.js';
import type { PasskeyRow } from './store.js';

type Def = typeof accounts.AccountsServiceService;
type PasskeyMethods = 'beginPasskeyCeremony' | 'registerPasskey' | 'signInWithPasskey' | 'listPasskeys' | 'deletePasskey';

const view = (k: PasskeyRow) => ({
  id: k.id,
  name: k.name,
  createdAt: k.created_at.toISOString(),
  lastUsedAt: k.last_used_at?.toISOString(),
  deviceType: k.device_type,
  backedUp: k.backed_up,
});

/** The gRPC handlers of passkeys (system only; docs/oauth.md, "Passkeys"). */
export function passkeyHandlers(passkeys: Passkeys): Pick<Handlers<Def>, PasskeyMethods> {
  return {
    async beginPasskeyCeremony(req, { principal }) {
      return { optionsJson: await passkeys.begin(principal, req) };
    },
    async registerPasskey(req, { principal }) {
      return { passkey: view(await passkeys.register(principal, req)) };
    },
    async signInWithPasskey(req, { principal }) {
      return passkeys.signIn(principal, req);
    },
    async listPasskeys(req, { principal }) {
      return { passkeys: (await passkeys.list(principal, req.userId)).map(view) };
    },
    async deletePasskey(req, { principal }) {
      return { removed: await passkeys.remove(principal, req.userId, req.passkeyId) };
    },
  };
}
