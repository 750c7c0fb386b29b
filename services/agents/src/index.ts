import { accountsClient, agentsDefinition, keysClient } from '@svc/clients';
import { defineService, type OutboxRelay, startOutboxRelay, type Subscription } from '@svc/kit';

import { type AgentRecords, AgentsDomain } from './agents/agents.js';
import { AgentKeys } from './agents/keys.js';
import { AgentOps } from './agents/manage.js';
import { SCHEMA } from './agents/store.js';
import { createAreas } from './memory/areas.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { ThreadExtras } from './threads/activity.js';
import { ApprovalsDomain } from './threads/approvals.js';
import { LiveEvents } from './threads/live.js';
import { ThreadOps } from './threads/manage.js';
import { ThreadsDomain } from './threads/threads.js';

export { type AgentRecord, type AgentRecords, type AgentsDeps, AgentsDomain } from './agents/agents.js';
export { AgentKeys } from './agents/keys.js';
export { type AgentRow, AgentStore } from './agents/store.js';
export { SCHEMA } from './agents/store.js';
export { migrations } from './migrations/index.js';
export { ScheduleFirer } from './schedules/fire.js';
export { ApprovalsDomain, ASK_PERSON, needsApproval, newApprovalId, requestEvent, WITHDRAWN_BY_INTERRUPT } from './threads/approvals.js';
export { type ApprovalRow, ApprovalStore } from './threads/approvals-store.js';
export { activeWatchers, LiveEvents } from './threads/live.js';
export { type ContextMessage, type EventRow, type NewEvent, type Producer, type RunRow, ThreadStore } from './threads/store.js';
export { RUN_QUEUE, ThreadsDomain } from './threads/threads.js';
export { DEFAULT_TOOLS, toolAllowed } from '@svc/tools';

/**
 * The agents service: agents as principals, default agents, and threads with their events, runs
 * and inbox (the runtime, services/runtime, executes the runs).
 */
export const agentsService = defineService({
  name: 'agents',
  // One gRPC service per area (proto/svc/agents/v1/<area>.proto), on one server.
  definition: agentsDefinition,
  // Until the release after the split, each method is answered under AgentsService's path too.
  formerly: 'svc.agents.v1.AgentsService',
  // Not 'bus': events wait in the outbox through a NATS outage.
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  async create(ctx) {
    const sql = await ctx.backends.sql();
    let relay: OutboxRelay | undefined;
    let consumer: Subscription | undefined;
    let stopped = false;
    const system = async () => ({ principalToken: await ctx.systemToken() });
    // The accounts service's records of agents (the chain of authority, grants to agents).
    const records: AgentRecords = {
      async sync(agents) {
        await accountsClient(ctx.registry).syncAgents({ agents }, await system());
      },
      async forget(id) {
        await accountsClient(ctx.registry).forgetAgent({ id }, await system());
      },
    };
    const domain = new AgentsDomain({
      sql,
      outbox: () => relay,
      accountsClient: () => accountsClient(ctx.registry),
      keysClient: () => keysClient(ctx.registry),
      records,
      systemToken: () => ctx.systemToken(),
      log: ctx.log,
    });
    const live = new LiveEvents(() => ctx.backends.bus());
    const threads = new ThreadsDomain({ sql, agents: domain.store, live, bus: () => ctx.backends.bus() });
    const approvals = new ApprovalsDomain(threads);
    threads.waits = approvals;
    const threadOps = new ThreadOps(threads, sql);
    const agentKeys = new AgentKeys(domain, { keysClient: () => keysClient(ctx.registry), systemToken: () => ctx.systemToken() });
    // Every agent's record, once per start: agents from before the records, and any change whose
    // record and event both went missing. Retried while the accounts service is not up yet.
    const recordAll = async () => {
      for (let attempt = 0; !stopped; attempt++) {
        try {
          const n = await domain.recordAll();
          ctx.log.info({ agents: n }, 'agents recorded in the accounts service');
          return;
        } catch (err) {
          ctx.log.warn({ err: (err as Error).message, attempt }, 'recording agents in the accounts service failed; retrying');
          await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** attempt, 30_000)).unref());
        }
      }
    };
    return {
      handlers: handlers(
        domain,
        agentKeys,
        threads,
        live,
        threadOps,
        new AgentOps(domain, threads, threadOps),
        new ThreadExtras(threads, threadOps, sql),
        createAreas(sql, threads, () => relay),
        approvals,
      ),
      async start() {
        void recordAll();
        const bus = await ctx.backends.bus();
        await live.start();
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
        stopped = true;
        await consumer?.unsubscribe();
        await live.stop();
        await relay?.stop();
      },
    };
  },
});
