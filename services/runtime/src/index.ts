import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';

import { AgentStore, ApprovalsDomain, LiveEvents, RUN_QUEUE, ThreadsDomain, ThreadStore } from '@svc/agents';
import { routes } from '@svc/api';
import { modelsClient } from '@svc/clients';
import { createDispatcher } from '@svc/dispatch';
import {
  type Backends,
  type Config,
  createHashPool,
  type Logger,
  newId,
  PrincipalSigner,
  type Registry,
  runMigrations,
  type ServiceModule,
  type Subscription,
} from '@svc/kit';
import type { models_infer } from '@svc/proto';
import { ToolCatalogue } from '@svc/tools';

import { type Infer, RunExecutor } from './run.js';
import { startScheduler } from './schedules.js';
import type { RuntimeSettings } from './settings.js';
import { AgentTools } from './tools.js';

export { type RuntimeSettings, runtimeSettingsSchema } from './settings.js';

/** The gateway's own operations (liveness, readiness, the OpenAPI document): not served here. */
const GATEWAY_OPERATIONS = ['health', 'ready', 'openapi'];

/** How often a worker looks for runs nobody holds (a worker died, a job was lost before its enqueue). */
const SWEEP_MS = 5_000;

export interface RunningRuntime {
  worker: string;
  /** The health port, when it serves one (its own Deployment). */
  port?: number;
  stop(graceMs: number): Promise<void>;
}

/**
 * The runtime: the agents service's run workers (catalogue component `runtime`, its own Deployment,
 * scaled on its own). It takes runs from the JetStream work queue and executes them as the thread's
 * agent: models through ModelsService.Infer, tools through the dispatcher (the API's own paths).
 * It shares the agents service's schema (it is that service's worker role) and runs its migrations
 * too, so it can start first.
 */
export async function startRuntime(deps: {
  config: Config;
  log: Logger;
  backends: Backends;
  registry: Registry;
  settings: RuntimeSettings;
  /** The agents module (its migrations). */
  agentsModule: ServiceModule;
  /** Serve GET /health and /ready here (a Deployment of its own: the chart's probes). */
  health?: { host: string; port: number };
}): Promise<RunningRuntime> {
  const log = deps.log.child({ component: 'runtime' });
  await runMigrations(deps.agentsModule, deps.backends);
  const sql = await deps.backends.sql();
  const bus = await deps.backends.bus();
  const registry = deps.registry.for('runtime');
  const signer = new PrincipalSigner(deps.config.internalSecret);
  const hashes = createHashPool({ name: 'runtime-sha256' });
  // Every `local` operation of the route table but the gateway's own (no tool calls them).
  const dispatcher = createDispatcher({ log, registry, backends: deps.backends, hashes, notServed: GATEWAY_OPERATIONS });
  let catalogue: ToolCatalogue | undefined; // built at the first run that offers tools, not at start
  const tools = new AgentTools(() => (catalogue ??= ToolCatalogue.fromRoutes(routes)), dispatcher, signer);
  const infer: Infer = (req, principal, signal) => abortable(inferCall(registry, tools, req, principal), signal);
  const worker = `${os.hostname()}:${process.pid}:${newId('wrk').slice(-8)}`;
  const threads = new ThreadStore(sql);
  const agents = new AgentStore(sql);
  const live = new LiveEvents(async () => bus);
  const approvals = new ApprovalsDomain(new ThreadsDomain({ sql, agents, live, bus: async () => bus }));
  const executor = new RunExecutor({
    sql,
    threads,
    agents,
    approvals,
    live,
    bus,
    infer,
    tools,
    settings: deps.settings,
    worker,
    log,
  });
  const work: Subscription = await bus.work(
    RUN_QUEUE,
    async (data, job) => {
      const runId = (data as { runId?: unknown })?.runId;
      if (typeof runId !== 'string') return;
      await executor.execute(runId, job.working);
    },
    { concurrency: deps.settings.SVC_RUNTIME_CONCURRENCY, ackWaitMs: deps.settings.SVC_RUN_LEASE_MS },
  );
  // Runs nobody holds go back on the queue: queued ones whose job was lost, running ones whose
  // worker stopped renewing its lease. The job id changes every sweep window, so replicas that
  // sweep at once enqueue one job.
  const sweep = setInterval(() => {
    void (async () => {
      const stale = await sql.query<{ id: string }>(
        `SELECT id FROM agents.runs WHERE status IN ('queued', 'running') AND waiting_for IS NULL AND (lease_until IS NULL OR lease_until < now())
            AND created_at < now() - interval '10 seconds' LIMIT 100`,
      );
      const window = Math.floor(Date.now() / (SWEEP_MS * 2));
      for (const r of stale) await bus.enqueue(RUN_QUEUE, `${r.id}:${window}`, { runId: r.id });
      // Requests for a person past their expiry count as rejected, and their runs go on (docs/threads.md, "Approvals").
      await approvals.expireDue();
    })().catch((err) => log.warn({ err: (err as Error).message }, 'run sweep failed'));
  }, SWEEP_MS);
  sweep.unref();
  const stopScheduler = startScheduler({ sql, bus, log });
  const health = deps.health ? await serveHealth(deps.health, () => Promise.all([sql.ping(), bus.ping()])) : undefined;
  log.info({ worker, concurrency: deps.settings.SVC_RUNTIME_CONCURRENCY, port: health?.port }, 'runtime taking runs');
  return {
    worker,
    port: health?.port,
    async stop() {
      await health?.close();
      clearInterval(sweep);
      stopScheduler();
      await work.unsubscribe();
      await hashes.close();
    },
  };
}

async function* inferCall(
  registry: Registry,
  tools: AgentTools,
  req: models_infer.InferRequest,
  principal: Parameters<Infer>[1],
): AsyncGenerator<models_infer.InferEvent> {
  const token = await tools.token(principal);
  yield* modelsClient(registry).infer(req, { principalToken: token, requestId: req.chargeKey });
}

/** The stream, ended (and its call cancelled) as soon as `signal` aborts, not at its next message. */
async function* abortable<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  try {
    for (;;) {
      const next = await Promise.race([it.next(), aborted]);
      if (next === 'aborted' || next.done) return;
      yield next.value;
    }
  } finally {
    void it.return?.();
  }
}

/** GET /health (the process answers) and /ready (its database and bus answer), for probes. */
async function serveHealth(at: { host: string; port: number }, ready: () => Promise<unknown>) {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      // A 503 says when to retry, as every 503 of the platform does.
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...(status === 503 ? { 'retry-after': '1' } : {}) });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(405, { error: { code: 'method_not_allowed', message: 'GET only.', requestId: '' } });
    if (path === '/health') return send(200, { status: 'ok' });
    if (path === '/ready') {
      return void ready().then(
        () => send(200, { status: 'ready' }),
        () => send(503, { status: 'not_ready' }),
      );
    }
    send(404, { error: { code: 'not_found', message: `No route for ${req.method} ${path}.`, requestId: '' } });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
