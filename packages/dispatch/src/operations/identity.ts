import { reply } from '@svc/api';
import { accountsClient } from '@svc/clients';
import type { Registry } from '@svc/kit';
import type * as proto from '@svc/proto';

import type { OperationHandler } from '../dispatcher.js';

const noStore = Object.freeze({ 'Cache-Control': 'no-store' });
/** How long GET /me answers from its per-principal cache. */
const ME_CACHE_MS = 5000;

/** The caller's identity (GET /me, the tool whoami): shared by every front that serves it. */
export function identityOperations(deps: { registry: Registry }): Record<string, OperationHandler> {
  const meCache = new Map<string, { answer: ReturnType<typeof reply>; until: number }>();
  return {
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
