import type * as grpc from '@grpc/grpc-js';

import type { BackendName, Backends } from './backends.js';
import type { Config, ServiceName } from './config.js';
import { bindService, createRpcClient, type GrpcServerHandle, type Handlers, type RpcClient, startGrpcServer } from './grpc.js';
import type { Logger } from './log.js';
import { type Principal, PrincipalSigner } from './principal.js';
import type { Migration } from './storage/sql.js';
import { migrate } from './storage/sql.js';

/** Where each service's gRPC server is; filled from config or as services start in-process. */
export class Registry {
  private readonly addresses = new Map<ServiceName, string>();
  private readonly clients = new Map<string, unknown>();

  constructor(
    initial: Partial<Record<ServiceName, string>>,
    private readonly deadlineMs: number,
  ) {
    for (const [k, v] of Object.entries(initial)) this.addresses.set(k as ServiceName, v);
  }

  set(name: ServiceName, address: string): void {
    this.addresses.set(name, address);
  }

  address(name: ServiceName): string | undefined {
    return this.addresses.get(name);
  }

  /** A typed client, created on first use. */
  client<D extends Record<string, any>>(name: ServiceName, definition: D, grpcServiceName: string): RpcClient<D> {
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

export interface ServiceContext {
  config: Config;
  log: Logger;
  backends: Backends;
  signer: PrincipalSigner;
  registry: Registry;
  /** A token for calls the service makes on its own behalf (bootstrap, background work). */
  systemToken(): Promise<string>;
}

export interface ServiceInstance<D extends Record<string, any>> {
  handlers: Handlers<D>;
  /** Background work that starts once the server serves (relays, consumers, timers). */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

export interface ServiceModule<D extends Record<string, any> = Record<string, any>> {
  name: ServiceName;
  /** Full gRPC service name, also the health-check service name. */
  grpcServiceName: string;
  definition: D;
  /** Backends whose failure makes the service NOT_SERVING. */
  needs: BackendName[];
  /** The schema this service owns, and its migrations. */
  schema?: string;
  migrations?: Migration[];
  create(ctx: ServiceContext): Promise<ServiceInstance<D>>;
}

export interface RunningService {
  name: ServiceName;
  address: string;
  grpc: GrpcServerHandle;
  stop(graceMs: number): Promise<void>;
}

export function defineService<D extends Record<string, any>>(m: ServiceModule<D>): ServiceModule<D> {
  return m;
}

export function createSystemTokenSource(signer: PrincipalSigner): () => Promise<string> {
  let cached: { token: string; expiresAt: number } | null = null;
  const principal: Principal = { kind: 'system', accountId: 'system', channel: 'internal' };
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
  deps: { config: Config; log: Logger; backends: Backends; registry: Registry; host: string; port: number },
): Promise<RunningService> {
  const log = deps.log.child({ component: module.name });
  const signer = new PrincipalSigner(deps.config.internalSecret);
  const ctx: ServiceContext = {
    config: deps.config,
    log,
    backends: deps.backends,
    signer,
    registry: deps.registry,
    systemToken: createSystemTokenSource(signer),
  };
  const applied = await runMigrations(module, deps.backends);
  if (applied.length) log.info({ applied }, 'migrations applied');
  const instance = await module.create(ctx);
  const handle = await startGrpcServer({
    host: deps.host,
    port: deps.port,
    serviceName: module.grpcServiceName,
    services: [
      {
        definition: module.definition as unknown as grpc.ServiceDefinition,
        implementation: bindService(module.definition, instance.handlers, { signer, log }),
      },
    ],
  });
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
      await handle.shutdown(graceMs);
      await instance.stop?.();
    },
  };
}
