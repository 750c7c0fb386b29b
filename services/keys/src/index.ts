import { defineService, type OutboxRelay, startOutboxRelay, type Subscription } from '@svc/kit';
import { keys } from '@svc/proto';

import { IdempotencyRecords } from './idempotency/idempotency.js';
import { KeysDomain } from './keys/keys.js';
import { KeyOps } from './keys/manage.js';
import { SCHEMA } from './keys/store.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { keysSettings, keysSettingsSchema } from './settings.js';

export { KeysDomain } from './keys/keys.js';
export { LINEAGE_REPAIR_SQL } from './migrations/index.js';
export { keysSettingsSchema } from './settings.js';

/** How often gateway-counted usage is written to PostgreSQL. */
const USAGE_FLUSH_MS = 2000;

export const keysService = defineService({
  name: 'keys',
  definition: keys.KeysServiceService,
  needs: ['sql', 'cache', 'bus'],
  schema: SCHEMA,
  migrations,
  settings: keysSettingsSchema,
  async create(ctx) {
    const settings = keysSettings(ctx.settings);
    const [sql, cache, bus] = await Promise.all([ctx.backends.sql(), ctx.backends.cache(), ctx.backends.bus()]);
    let relay: OutboxRelay | undefined;
    // Keys call no other service: an agent's keys are managed through the agents service, which
    // checks the agent is the caller's and calls the *AgentKey methods (catalogue: agents -> keys).
    const domain = new KeysDomain(sql, cache, () => relay);
    const idempotency = new IdempotencyRecords(sql, settings.idempotency);
    let timer: NodeJS.Timeout | undefined;
    let sweeper: NodeJS.Timeout | undefined;
    let revoked: Subscription | undefined;
    return {
      handlers: handlers(domain, idempotency, new KeyOps(domain, sql, cache, () => relay)),
      async start() {
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        // Each revocation's cache entry is deleted at least once, even when the delete made by
        // the revoking call failed (a durable consumer is redelivered until it succeeds).
        revoked = await bus.subscribe('keys.key.revoked', async (event) => domain.forgetVerification((event.data as { id: string }).id), {
          durable: 'keys-verify-cache',
        });
        timer = setInterval(() => {
          domain.flushUsage().catch((err) => ctx.log.warn({ err }, 'usage flush failed'));
        }, USAGE_FLUSH_MS);
        timer.unref();
        // Expired Idempotency-Key records go; every replica sweeps (a delete of few rows, harmless twice).
        sweeper = setInterval(() => {
          idempotency.sweep().catch((err) => ctx.log.warn({ err }, 'idempotency sweep failed'));
        }, settings.sweepEveryMs);
        sweeper.unref();
      },
      async stop() {
        clearInterval(timer);
        clearInterval(sweeper);
        await domain.flushUsage().catch(() => {});
        await revoked?.unsubscribe();
        await relay?.stop();
      },
    };
  },
});
