import { keysClient } from '@svc/clients';
import { defineService, handleOnce, type OutboxRelay, startOutboxRelay, type Subscription } from '@svc/kit';
import { accounts } from '@svc/proto';

import { accountsSettingsSchema, bootstrap } from './accounts/bootstrap.js';
import { AgentDirectory } from './accounts/directory.js';
import { AccountsDomain } from './accounts/index.js';
import { KeyVault, vaultSecret } from './accounts/signing-keys.js';
import { AccountStore, SCHEMA } from './accounts/store.js';
import { migrations } from './migrations/index.js';
import { OauthRecords } from './oauth/oauth.js';
import { oauthHandlers } from './oauth/server.js';
import { OauthStore } from './oauth/store.js';
import { Passkeys } from './passkeys/passkeys.js';
import { passkeyHandlers } from './passkeys/server.js';
import { PasskeyStore } from './passkeys/store.js';
import { handlers } from './server.js';

export { scopeWithin, verbCovers } from './accounts/access.js';
export { accountsSettingsSchema } from './accounts/bootstrap.js';
export { type AccountsDeps, AccountsDomain } from './accounts/index.js';
export { generateSigningKey, KeyVault, privateKeyFrom, signCompact, vaultSecret, verifyCompact } from './accounts/signing-keys.js';
export { AccountStore, SCHEMA } from './accounts/store.js';
export { migrations } from './migrations/index.js';
export { checkIfMatch, DEFAULT_SETTINGS, mergePatch, settingsEtag, SettingsSchema, validateSettings } from './settings.js';

/** How often expired OAuth records are deleted. */
const OAUTH_SWEEP_MS = 5 * 60_000;

export const accountsService = defineService({
  name: 'accounts',
  definition: accounts.AccountsServiceService,
  // Not 'bus': events wait in the outbox through a NATS outage, and the gateway needs this service
  // (ResolveActingAccount) to stay in rotation; only host calls fail (503) meanwhile.
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  settings: accountsSettingsSchema,
  async create(ctx) {
    const sql = await ctx.backends.sql();
    const store = new AccountStore(sql);
    let relay: OutboxRelay | undefined;
    let consumer: Subscription | undefined;
    const deps = {
      store,
      outbox: () => relay,
      bus: () => ctx.backends.bus(),
      vault: new KeyVault(vaultSecret(ctx.config)),
      keysClient: () => keysClient(ctx.registry),
      systemToken: () => ctx.systemToken(),
      log: ctx.log,
    };
    const domain = new AccountsDomain(deps);
    // The OAuth authorization server's records (docs/oauth.md); expired ones are swept on a timer.
    const oauth = new OauthRecords({ ...deps, oauth: new OauthStore(sql) });
    // Passkeys, the people's sign-in to the gateway's pages; their spent challenges go on the same timer.
    const passkeys = new Passkeys({ ...deps, passkeys: new PasskeyStore(sql) });
    let sweeper: NodeJS.Timeout | undefined;
    return {
      handlers: { ...handlers(domain, store), ...oauthHandlers(oauth), ...passkeyHandlers(passkeys) },
      async start() {
        await bootstrap(ctx, store);
        const bus = await ctx.backends.bus();
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        // Agents created, deleted or moved to another owner enter the audit trail of their accounts;
        // every agent event also writes the agent's record again (the agents service writes it in
        // the request; this repairs one that call could not make: older versions change nothing).
        consumer = await bus.subscribe(
          'agents.agent.>',
          async (event) => {
            const record = AgentDirectory.recordOf(event);
            if (record) await store.syncAgents(sql, [record]);
            const rows = domain.auditRowsForAgentEvent(event);
            if (!rows.length) return;
            await handleOnce(sql, SCHEMA, 'audit-agents', event, async (q) => {
              for (const r of rows) await store.insertAudit(q, r);
            });
          },
          { durable: 'accounts-audit-agents' },
        );
        sweeper = setInterval(() => {
          oauth.sweep().catch((err: unknown) => ctx.log.warn({ err }, 'oauth sweep failed'));
          passkeys.sweep().catch((err: unknown) => ctx.log.warn({ err }, 'passkey challenge sweep failed'));
        }, OAUTH_SWEEP_MS);
        sweeper.unref();
      },
      async stop() {
        clearInterval(sweeper);
        await consumer?.unsubscribe();
        await relay?.stop();
      },
    };
  },
});
