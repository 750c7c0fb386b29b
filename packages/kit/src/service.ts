import type * as grpc from '@grpc/grpc-js';
import type { z } from 'zod';

import type { BackendName, Backends } from './backends.js';
import { CATALOGUE, mayCall, type ServiceName } from './catalogue.js';
import { type Config, loadSettings } from './config.js';
import {
  bindService,
  createRpcClient,
  type GrpcServerHandle,
  type Handlers,
  type RpcClient,
  type ServiceDefinition,
  startGrpcServer,
} from './grpc.js';
import { offerInProcess } from './in-process.js';
import type { Logger } from './log.js';
import { type Principal, PrincipalSigner } from './principal.js';
import type { Migration } from './storage/sql.js';
import { migrate } from './storage/sql.js';
import { tracingConfigured } from './tracing/enabled.js';

/**
 * Where each service's gRPC server is; filled from config or as services start in-process. A
 * service gets a view of it for itself (`for(name)`) whose clients are limited to the services the
 * catalogue declares it calls; the gateway's (and the stack's) is unrestricted.
 */
export class Registry {
  private readonly addresses: Map<ServiceName, string>;
  private readonly clients: Map<string, unknown>;
  /** The service whose view this is, if any. */
  readonly caller: ServiceName | undefined;

  constructor(
    initial: Partial<Record<ServiceName, string>>,
    /** The deadline of a unary call that names none (SVC_GRPC_DEADLINE_MS). */
    readonly deadlineMs: number,
    shared?: { addresses: Map<ServiceName, string>; clients: Map<string, unknown>; caller: ServiceName },
  ) {
    this.addresses = shared?.addresses ?? new Map(Object.entries(initial) as Array<[ServiceName, string]>);
    this.clients = shared?.clients ?? new Map();
    this.caller = shared?.caller;
  }

  /** The registry as `caller` sees it: the same addresses and connections, its declared downstreams only. */
  for(caller: ServiceName): Registry {
    return new Registry({}, this.deadlineMs, { addresses: this.addresses, clients: this.clients, caller });
  }

  set(name: ServiceName, address: string): void {
    this.addresses.set(name, address);
  }

  address(name: ServiceName): string | undefined {
    return this.addresses.get(name);
  }

  /** A typed client, created on first use. Throws when the caller has not declared `name` as a downstream. */
  client<D extends ServiceDefinition>(name: ServiceName, definition: D, grpcServiceName: string): RpcClient<D> {
    if (this.caller && !mayCall(this.caller, name)) {
      throw new Error(
        `the ${this.caller} service calls ${name}, which the service catalogue does not declare as its downstream (packages/kit/src/catalogue.ts)`,
      );
    }
    const address = this.addresses.get(name) ?? `${name}:50051`;
    const key = `${grpcServiceName}@${address}`;
    let c = this.clients.get(key) as RpcClient<D> | undefined;
    if (!c) {
      c = createRpcClient(definition, grpcServiceName, address, { deadlineMs: this.deadlineMs });
      this.clients.set(key, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) (c as { close(): void }).close();
    this.clients.clear();
  }
}

/** A module's own settings: an object schema keyed by environment variable (SVC_<NAME>_*). */
export type SettingsSchema = z.ZodObject;
type NoSettings = z.ZodObject<Record<string, never>>;

export interface ServiceContext<S = unknown> {
  config: Config;
  log: Logger;
  backends: Backends;
  signer: PrincipalSigner;
  /** This service's view: clients of the services it declares it calls (the catalogue's `calls`). */
  registry: Registry;
  /** The service's own settings, parsed by its module's `settings` schema. */
  settings: S;
  /** A token for calls the service makes on its own behalf (bootstrap, background work). */
  systemToken(): Promise<string>;
  /** Aborted when the process is told to stop (SIGTERM) before its start is done: a wait at start ends. */
  startSignal?: AbortSignal;
}

export interface ServiceInstance<D extends ServiceDefinition> {
  handlers: Handlers<D>;
  /** Background work that starts once the server serves (relays, consumers, timers). */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

export interface ServiceModule<D extends ServiceDefinition = ServiceDefinition, S extends SettingsSchema = SettingsSchema> {
  name: ServiceName;
  /** Full gRPC service name, also the health-check service name (the catalogue's). */
  grpcServiceName: string;
  /**
   * Its methods: one gRPC service's, or the union of the services of its areas (the agents
   * service's AgentsService, ThreadsService, MemoryService, ...: one proto package, one server).
   */
  definition: D;
  /**
   * The gRPC service that held all of its methods in an earlier release: each method is answered
   * under that service's path too (`/svc.agents.v1.AgentsService/SetMemory` as well as
   * `/svc.agents.v1.MemoryService/SetMemory`), so that callers of that release keep working while
   * a rolling upgrade mixes replicas. Remove it one release after the split.
   */
  formerly?: string;
  /** Backends whose failure makes the service NOT_SERVING. */
  needs: BackendName[];
  /** The schema this service owns, and its migrations. */
  schema?: string;
  migrations?: Migration[];
  /** Settings of this service alone, validated when the stack starts (loadSettings); `ctx.settings` holds them. */
  settings?: S;
  create(ctx: ServiceContext<z.output<S>>): Promise<ServiceInstance<D>>;
}

export interface RunningService {
  name: ServiceName;
  address: string;
  grpc: GrpcServerHandle;
  stop(graceMs: number): Promise<void>;
}

/**
 * Declares a service module. Its gRPC service name comes from the catalogue; a module that states
 * one must agree with it.
 */
export function defineService<D extends ServiceDefinition, S extends SettingsSchema = NoSettings>(
  m: Omit<ServiceModule<D, S>, 'grpcServiceName'> & { grpcServiceName?: string },
): ServiceModule<D, S> {
  const declared = CATALOGUE[m.name].grpc;
  if (!declared) throw new Error(`${m.name} has no gRPC service in the service catalogue`);
  if (m.grpcServiceName !== undefined && m.grpcServiceName !== declared) {
    throw new Error(`${m.name}: grpcServiceName ${m.grpcServiceName} disagrees with the service catalogue (${declared})`);
  }
  return { ...m, grpcServiceName: declared };
}

/** The platform's own principal (what a system token carries). */
export const SYSTEM_PRINCIPAL: Readonly<Principal> = Object.freeze({ kind: 'system', accountId: 'system', channel: 'internal' });

export function createSystemTokenSource(signer: PrincipalSigner): () => Promise<string> {
  let cached: { token: string; expiresAt: number } | null = null;
  const principal: Principal = { ...SYSTEM_PRINCIPAL };
  return async () => {
    if (!cached || cached.expiresAt - Date.now() < 60_000) cached = await signer.sign(principal);
    return cached.token;
  };
}

export async function runMigrations(module: ServiceModule, backends: Backends): Promise<string[]> {
  if (!module.schema) return [];
  return migrate(await backends.sql(), module.schema, module.migrations ?? []);
}

/** Starts one service: migrations, gRPC server with health, background work, health loop. */
export async function runService(
  module: ServiceModule,
  deps: {
    config: Config;
    log: Logger;
    backends: Backends;
    registry: Registry;
    host: string;
    port: number;
    /** The module's settings, already read (the stack reads every module's at once); else read from process.env. */
    settings?: unknown;
    /** Aborted by SIGTERM during the start (ServiceContext.startSignal). */
    startSignal?: AbortSignal;
  },
): Promise<RunningService> {
  const log = deps.log.child({ component: module.name });
  const signer = new PrincipalSigner(deps.config.internalSecret);
  // The module's settings schema parsed them (deps.settings, or here): the types agree.
  const ctx: ServiceContext<z.output<SettingsSchema>> = {
    config: deps.config,
    log,
    backends: deps.backends,
    signer,
    registry: deps.registry.for(module.name),
    settings: (deps.settings ?? (module.settings ? loadSettings({ [module.name]: module.settings })[module.name] : {})) as z.output<SettingsSchema>,
    systemToken: createSystemTokenSource(signer),
    startSignal: deps.startSignal,
  };
  const applied = await runMigrations(module, deps.backends);
  if (applied.length) log.info({ applied }, 'migrations applied');
  const instance = await module.create(ctx);
  const implementation = bindService(module.definition, instance.handlers, { signer, log });
  const handle = await startGrpcServer({
    host: deps.host,
    port: deps.port,
    serviceName: module.grpcServiceName,
    services: [
      { definition: module.definition as unknown as grpc.ServiceDefinition, implementation },
      ...(module.formerly ? [{ definition: formerPaths(module.definition, module.formerly), implementation }] : []),
    ],
  });
  // Callers in this process reach the same implementation without HTTP/2 (in-process.ts), unless
  // SVC_GRPC_TRANSPORT=wire or tracing is on (grpc-js's instrumentation makes the server spans).
  const withdraw =
    deps.config.SVC_GRPC_TRANSPORT === 'in-process' && !tracingConfigured(process.env)
      ? offerInProcess(handle.address, module.definition, implementation)
      : undefined;
  deps.registry.set(module.name, handle.address);
  await instance.start?.();

  // Health follows the backends: NOT_SERVING while one the service needs is down.
  const probe = async () => {
    const result = await deps.backends.check(module.needs);
    const ok = Object.values(result).every((r) => r.ok);
    handle.setServing(ok ? 'SERVING' : 'NOT_SERVING');
    if (!ok) log.warn({ backends: result }, 'a backend is down; health is NOT_SERVING');
  };
  await probe();
  const timer = setInterval(() => void probe(), 5000);
  timer.unref();
  log.info({ address: handle.address }, 'service started');

  return {
    name: module.name,
    address: handle.address,
    grpc: handle,
    async stop(graceMs) {
      clearInterval(timer);
      // New calls go over the wire, to a server that refuses them; calls running finish.
      withdraw?.();
      await handle.shutdown(graceMs);
      await instance.stop?.();
    },
  };
}

/**
 * The methods of a split service under the path of the one service that held them before
 * (`ServiceModule.formerly`); the methods still in that service are left out (they are served
 * already).
 */
export function formerPaths(definition: Record<string, { path: string }>, formerly: string): grpc.ServiceDefinition {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    const [, service, rpc] = method.path.split('/');
    if (service !== formerly) out[name] = { ...method, path: `/${formerly}/${rpc}` };
  }
  return out as unknown as grpc.ServiceDefinition;
}
