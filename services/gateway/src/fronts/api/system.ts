import { buildOpenApi, reply, type Route } from '@svc/api';
import type { OperationHandler } from '@svc/dispatch';
import type { Backends, Logger, Registry, ServiceName } from '@svc/kit';

import { checkHealth } from '../../health-client.js';

export interface SystemDeps {
  registry: Registry;
  backends: Backends;
  /** Services whose health decides readiness. */
  services: ServiceName[];
  version: string;
  routes: Route[];
  /** Where readiness failures are written with their details (addresses, errors). */
  log: Logger;
  /** True once the gateway is stopping: not ready, whatever the backends say. */
  draining?: () => boolean;
}

/** The gateway's own operations: liveness, readiness, the OpenAPI document (given to createDispatcher). */
export function systemOperations(deps: SystemDeps): Record<string, OperationHandler> {
  // Built at the first request for it, not at start (a few hundred milliseconds of JSON Schema).
  let openapi: ReturnType<typeof buildOpenApi> | undefined;
  return {
    async health() {
      return { status: 'ok' };
    },
    async ready() {
      // Stopping (SIGTERM): out of the Service's endpoints at once; the answer's Retry-After and
      // `Connection: close` send the caller elsewhere (http-server.ts, applyAnswerRules).
      if (deps.draining?.()) return reply({ status: 'draining', backends: {}, services: {} }, { status: 503 });
      // The database too when this process opened it (all services in one process): the embedded
      // one is the process's own, and a wedged one is why every service is down.
      const backends = await deps.backends.check(deps.backends.isOpen('sql') ? ['cache', 'bus', 'sql'] : ['cache', 'bus']);
      const services: Record<string, { ok: boolean; address: string; error?: string }> = {};
      await Promise.all(
        deps.services.map(async (name) => {
          const address = deps.registry.address(name) ?? `${name}:50051`;
          services[name] = { address, ...(await checkHealth(address)) };
        }),
      );
      const ok = Object.values(backends).every((b) => b.ok) && Object.values(services).every((s) => s.ok);
      // The answer needs no key, so it says only what is up, and why in words meant for callers (a
      // backend's DomainError, e.g. `database_busy`); addresses and error texts (socket paths,
      // hosts) go to the operator's log instead.
      if (!ok) deps.log.warn({ backends, services }, 'not ready');
      const oks = (r: Record<string, { ok: boolean; cause?: string }>) =>
        Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.cause ? { ok: v.ok, cause: v.cause } : { ok: v.ok }]));
      return reply({ status: ok ? 'ready' : 'unavailable', backends: oks(backends), services: oks(services) }, { status: ok ? 200 : 503 });
    },
    async openapi() {
      return (openapi ??= buildOpenApi(deps.routes, { version: deps.version }));
    },
  };
}
