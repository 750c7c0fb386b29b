import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';

import { accountsService } from '@svc/accounts';
import { agentsService } from '@svc/agents';
import { driveService } from '@svc/drive';
import { type GatewaySettings, gatewaySettingsSchema, type RunningGateway, startGateway } from '@svc/gateway';
import { keysService } from '@svc/keys';
import {
  Backends,
  type Config,
  createLogger,
  loadConfig,
  loadSettings,
  type Logger,
  Registry,
  runMigrations,
  type RunningService,
  runService,
  type ServiceModule,
  StartAborted,
} from '@svc/kit';
import { modelsService } from '@svc/models';
import { profilesService } from '@svc/profiles';
import { type RunningRuntime, type RuntimeSettings, runtimeSettingsSchema, startRuntime } from '@svc/runtime';
import { sandboxService } from '@svc/sandbox';
import { tradingService } from '@svc/trading';

// package.json is outside src/ (tsc's rootDir), so it is read at run time rather than imported.
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const VERSION: string = require('../package.json').version;

/**
 * Every gRPC service of the catalogue (packages/kit/src/catalogue.ts), in its order: a service
 * starts after the services it calls (accounts bootstraps the operator's key through keys).
 * test/platform/catalogue.test.ts holds this list to the catalogue.
 */
export const MODULES: ServiceModule[] = [
  keysService,
  accountsService,
  driveService,
  agentsService,
  modelsService,
  tradingService,
  profilesService,
  sandboxService,
] as ServiceModule[];

export interface Stack {
  config: Config;
  log: Logger;
  backends: Backends;
  registry: Registry;
  services: RunningService[];
  gateway?: RunningGateway;
  /** Gateway port, when this process runs the gateway. */
  port?: number;
  stop(): Promise<void>;
}

/**
 * Runs SVC_SERVICE: `all` (the default) starts every service on free loopback ports and the
 * gateway on PORT; a service name starts that service alone on GRPC_PORT (how Kubernetes runs it).
 */
export async function startStack(
  env: NodeJS.ProcessEnv = process.env,
  options: {
    logDestination?: { write(line: string): void };
    /** SIGTERM during the start: what is started so far is stopped and the start throws StartAborted. */
    signal?: AbortSignal;
  } = {},
): Promise<Stack> {
  const config = loadConfig(env);
  // V8 reads it whenever it sets the heap's next limit, so it works set now (issue 36: a 1 MiB
  // upload's CPU fell by a sixth to a quarter, full collections from ~26 to ~3 per 200 uploads).
  // Set always, 0 too (V8's own choice), so that the value a stack is given is the one in force.
  v8.setFlagsFromString(`--heap-growing-percent=${config.SVC_HEAP_GROWING_PERCENT}`);
  // Each service's own settings (a module's `settings`), every module's, so that a bad value stops
  // any start as the shared ones do. Read from `env`, then the process environment.
  const settings: Record<string, unknown> = loadSettings(
    {
      ...Object.fromEntries(MODULES.filter((m) => m.settings).map((m) => [m.name, m.settings!])),
      gateway: gatewaySettingsSchema,
      runtime: runtimeSettingsSchema,
    },
    env === process.env ? env : { ...process.env, ...Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')) },
  );
  const log = createLogger({
    level: config.LOG_LEVEL,
    service: config.SVC_SERVICE === 'all' ? 'svc' : config.SVC_SERVICE,
    destination: options.logDestination,
  });
  const backends = new Backends(config, log);
  const registry = new Registry(config.addresses, config.SVC_GRPC_DEADLINE_MS);
  const all = config.SVC_SERVICE === 'all';
  const selected = all ? MODULES : MODULES.filter((m) => m.name === config.SVC_SERVICE);
  const services: RunningService[] = [];
  // All in one process: services talk gRPC over Unix sockets in a private folder (cheaper than
  // loopback TCP, and two stacks never collide); GRPC_HOST overrides it.
  const socketDir = all && !config.GRPC_HOST ? fs.mkdtempSync(path.join(os.tmpdir(), 'svc-')) : undefined;
  let gateway: RunningGateway | undefined;
  let runtime: RunningRuntime | undefined;

  // Ends within SVC_SHUTDOWN_GRACE_MS whatever a part does (a call that never ends, a wedged
  // database): the in-flight calls drain first, each part within what is left of the bound, and
  // the backends close within the rest (a part of the bound is kept for them).
  const stop = async () => {
    const grace = config.SVC_SHUTDOWN_GRACE_MS;
    const end = Date.now() + grace;
    const drained = end - Math.min(3000, Math.floor(grace / 3));
    const left = (until: number) => Math.max(0, until - Date.now());
    const step = (part: string, run: (ms: number) => Promise<void> | undefined) => bounded(log, part, run(left(drained)), left(drained));
    await step('gateway', (ms) => gateway?.stop(ms));
    await step('runtime', (ms) => runtime?.stop(ms));
    for (const s of [...services].reverse()) await step(s.name, (ms) => s.stop(ms));
    registry.close();
    await backends.close(left(end));
    if (socketDir) fs.rmSync(socketDir, { recursive: true, force: true });
  };

  // Between two parts of the start (and within a wait for another service: startSignal).
  const notStopped = () => {
    if (options.signal?.aborted) throw new StartAborted();
  };
  try {
    if (config.SVC_MIGRATE_ONLY) {
      for (const m of selected) log.info({ service: m.name, applied: await runMigrations(m, backends) }, 'migrations done');
      await backends.close();
      return { config, log, backends, registry, services, stop: async () => {} };
    }
    for (const m of selected) {
      notStopped();
      services.push(
        await runService(m, {
          config,
          log,
          backends,
          registry,
          settings: settings[m.name],
          host: config.GRPC_HOST ?? (all ? `unix:${path.join(socketDir!, `${m.name}.sock`)}` : '0.0.0.0'),
          port: all ? 0 : (config.GRPC_PORT ?? 50051),
          startSignal: options.signal,
        }),
      );
    }
    notStopped();
    if (all || config.SVC_SERVICE === 'runtime') {
      runtime = await startRuntime({
        config,
        log,
        backends,
        registry,
        settings: settings.runtime as RuntimeSettings,
        agentsModule: agentsService as ServiceModule,
        // Its own Deployment: health and readiness on PORT for the probes.
        ...(config.SVC_SERVICE === 'runtime' ? { health: { host: config.HOST, port: config.PORT } } : {}),
      });
    }
    notStopped();
    if (all || config.SVC_SERVICE === 'gateway') {
      gateway = await startGateway({
        config,
        log,
        backends,
        registry,
        host: config.HOST,
        port: config.PORT,
        version: VERSION,
        settings: settings.gateway as GatewaySettings,
      });
    }
    notStopped();
  } catch (err) {
    if (err instanceof StartAborted) log.info({}, 'stopped while starting: what had started is stopped');
    await stop().catch(() => {});
    throw err;
  }
  return { config, log, backends, registry, services, gateway, port: gateway?.port ?? runtime?.port, stop };
}

/** Waits for p at most ms; a part that takes longer is left running (the process is ending) and logged. */
async function bounded(log: Logger, part: string, p: Promise<void> | undefined, ms: number): Promise<void> {
  if (!p) return;
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    p.then(
      () => false,
      (err: unknown) => {
        log.warn({ err, part }, 'stopping failed');
        return false;
      },
    ),
    new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), ms))),
  ]);
  clearTimeout(timer);
  if (late) log.warn({ part, ms }, 'did not stop within the shutdown bound; left running');
}
