import { buildOpenApi, type HttpReply, reply, type Route } from '@svc/api';
import { accountsClient } from '@svc/clients';
import type { OperationHandler } from '@svc/dispatch';
import type { Backends, Logger, Registry, ServiceName } from '@svc/kit';
import type * as proto from '@svc/proto';

import { checkHealth } from '../../health-client.js';

const noStore = Object.freeze({ 'Cache-Control': 'no-store' });
/** How long GET /me answers from its per-principal cache. */
const ME_CACHE_MS = 5000;

export interface SystemDeps {
  registry: Registry;
  backends: Backends;
  /** Services whose health decides readiness. */
  services: ServiceName[];
  version: string;
  routes: Route[];
  /** Where readiness failures are written with their details (addresses, errors). */
  log: Logger;
}

/** The gateway's own operations: liveness, readiness, the OpenAPI document, the caller's identity. */
export function systemOperations(deps: SystemDeps): Record<string, OperationHandler> {
  const openapi = buildOpenApi(deps.routes, { version: deps.version });
  const meCache = new Map<string, { answer: HttpReply; until: number }>();
  return {
    async health() {
      return { status: 'ok' };
    },
    async ready() {
      const backends = await deps.backends.check(['cache', 'bus']);
      const services: Record<string, { ok: boolean; address: string; error?: string }> = {};
      await Promise.all(
        deps.services.map(async (name) => {
          const address = deps.registry.address(name) ?? `${name}:50051`;
          services[name] = { address, ...(await checkHealth(address)) };
        }),
      );
      const ok = Object.values(backends).every((b) => b.ok) && Object.values(services).every((s) => s.ok);
      // The answer needs no key, so it says only what is up: addresses and error texts (socket
      // paths, hosts) go to the operator's log instead.
      if (!ok) deps.log.warn({ backends, services }, 'not ready');
      const oks = (r: Record<string, { ok: boolean }>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { ok: v.ok }]));
      return reply({ status: ok ? 'ready' : 'unavailable', backends: oks(backends), services: oks(services) }, { status: ok ? 200 : 503 });
    },
    async openapi() {
      return openapi;
    },
    async me(_input, ctx) {
      const { principal: p, token } = ctx.auth!;
      // The identity changes rarely: answered from a short per-principal cache, so a client that
      // polls /me (or a load balancer check with a key) costs no service call.
      const hit = meCache.get(token);
      if (hit && hit.until > Date.now()) return hit.answer;
      const client = accountsClient(deps.registry);
      const me = await client.getMe({}, { principalToken: token, requestId: ctx.requestId });
      const ref = (a: proto.accounts.Account) => ({ id: a.id, kind: a.kind, name: a.name, createdAt: a.createdAt });
      const body = {
        kind: p.kind,
        userId: p.userId ?? null,
        agentId: p.agentId ?? null,
        accountId: p.accountId,
        // A host has no API key: its id stands for the credential.
        keyId: p.keyId ?? p.hostId,
        projectId: p.projectId ?? null,
        account: me.account ? ref(me.account) : null,
        organizations: me.organizations.map((m) => ({ ...ref(m.account!), role: m.role })),
      };
      if (meCache.size > 10_000) meCache.clear();
      const answer = reply(body, { headers: noStore, json: JSON.stringify(body) });
      meCache.set(token, { answer, until: Date.now() + ME_CACHE_MS });
      return answer;
    },
  };
}
