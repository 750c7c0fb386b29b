import { accountsClient, keysClient } from '@svc/clients';
import { defineService, type OutboxRelay, startOutboxRelay, type Subscription } from '@svc/kit';
import { agents } from '@svc/proto';

import { AgentsDomain } from './agents.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { SCHEMA } from './store.js';

export { type AgentsDeps, AgentsDomain } from './agents.js';
export { migrations } from './migrations/index.js';
export { SCHEMA } from './store.js';

/**
 * The agents service: agents as principals and default agents (threads, messages and runs come
 * with a later issue).
 */
export const agentsService = defineService({
  name: 'agents',
  definition: agents.AgentsServiceService,
  // Not 'bus': events wait in the outbox through a NATS outage.
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  async create(ctx) {
    const sql = await ctx.backends.sql();
    let relay: OutboxRelay | undefined;
    let consumer: Subscription | undefined;
    const domain = new AgentsDomain({
      sql,
      outbox: () => relay,
      accountsClient: () => accountsClient(ctx.registry),
      keysClient: () => keysClient(ctx.registry),
      systemToken: () => ctx.systemToken(),
      log: ctx.log,
    });
    return {
      handlers: handlers(domain),
      async start() {
        const bus = await ctx.backends.bus();
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        // A deleted agent's keys are revoked in the request; this catches a key made meanwhile.
        // Revocation is idempotent, so a redelivered event is harmless.
        consumer = await bus.subscribe(
          'agents.agent.deleted',
          async (event) => {
            const id = (event.data as { agent?: { id?: string } }).agent?.id;
            if (id) await domain.onDeleted(id);
          },
          { durable: 'agents-revoke-deleted' },
        );
      },
      async stop() {
        await consumer?.unsubscribe();
        await relay?.stop();
      },
    };
  },
});
