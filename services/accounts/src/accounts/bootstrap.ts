import fs from 'node:fs';
import path from 'node:path';

import { z } from 'zod';

import { keysClient } from '@svc/clients';
import { API_KEY_RE, defineSettings, generateApiKey, hashSecret, keyPrefix, newId, type ServiceContext, waitForDependency } from '@svc/kit';

import type { AccountStore } from './store.js';

export const BOOTSTRAP_KEY_FILE = 'bootstrap-key';

/** The accounts service's own settings: SVC_BOOTSTRAP_KEY, the operator's first key (used only while no account exists). */
export const accountsSettingsSchema = defineSettings({
  SVC_BOOTSTRAP_KEY: z.string().regex(API_KEY_RE, 'must be svc_ followed by 64 lowercase hex characters').optional(),
});
type AccountsContext = ServiceContext<z.output<typeof accountsSettingsSchema>>;

/** The operator's first key: SVC_BOOTSTRAP_KEY, or one generated into <data dir>/bootstrap-key (0600). */
function bootstrapKey(ctx: AccountsContext): { key: string; file?: string } {
  if (ctx.settings.SVC_BOOTSTRAP_KEY) return { key: ctx.settings.SVC_BOOTSTRAP_KEY };
  const file = path.resolve(ctx.config.SVC_DATA_DIR, BOOTSTRAP_KEY_FILE);
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (API_KEY_RE.test(existing)) return { key: existing, file };
  } catch {
    // not written yet
  }
  const key = generateApiKey();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, key + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return { key, file };
}

/**
 * DESIGN §2: when the store has no accounts, create the operator (a person) whose first API key
 * is the bootstrap key. Safe to run on every start and from several replicas: the key import is
 * idempotent by hash, and the account insert only happens into an empty table.
 */
export async function bootstrap(ctx: AccountsContext, store: AccountStore): Promise<void> {
  if ((await store.count()) > 0) return;
  const { key, file } = bootstrapKey(ctx);
  const client = keysClient(ctx.registry);
  const operatorId = newId('acct');
  // The keys service may not be up yet (its pod starts beside this one): wait for it, within SVC_START_WAIT_SECONDS.
  const imported = await waitForDependency(
    'the keys service',
    async () =>
      client.importKey(
        {
          keyHash: hashSecret(key),
          prefix: keyPrefix(key),
          name: 'bootstrap',
          accountId: operatorId,
          ownerKind: 'human',
          ownerId: operatorId,
        },
        { principalToken: await ctx.systemToken() },
      ),
    { log: ctx.log, maxMs: ctx.config.SVC_START_WAIT_SECONDS * 1000, signal: ctx.startSignal },
  );
  // A key imported by an earlier, interrupted bootstrap keeps its account id: adopt it.
  const accountId = imported.key!.accountId;
  await store.insertOperatorIfEmpty(accountId);
  ctx.log.info(file ? { accountId, keyFile: file } : { accountId, keyFrom: 'SVC_BOOTSTRAP_KEY' }, 'bootstrap: operator account created');
}
