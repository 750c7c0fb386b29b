import { z } from 'zod';

import { type Effect, type HttpMethod, route } from '@svc/api';
import { Dispatcher } from '@svc/dispatch';
import { DomainError, type Principal, type Registry } from '@svc/kit';

/**
 * The effects policy (docs/architecture.md, "Effects"): what an operation does decides whether a
 * read-only caller may call it, the same at every front: a read-only token (principal.readOnly, an
 * OAuth `api:read` grant) and a read-only connection (Invocation.readOnly, MCP's readonly=true) call
 * only operations that read, a POST that reads included.
 */
const op = (id: string, method: HttpMethod, effect?: Effect) =>
  route({
    id,
    method,
    path: `/${id}`,
    summary: id,
    tag: 'test',
    body: method === 'get' ? undefined : z.object({}),
    response: z.object({ ok: z.boolean() }),
    effect,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: id },
  });
const routes = [op('list', 'get'), op('search', 'post', 'reads'), op('make', 'post', 'creates'), op('drop', 'delete')];
const handlers = Object.fromEntries(routes.map((r) => [r.id, async () => ({ ok: true })]));
const d = new Dispatcher({ registry: {} as Registry, routes, handlers });

const person: Principal = { kind: 'human', userId: 'usr_1', accountId: 'usr_1', channel: 'api' };
const readOnlyToken: Principal = { ...person, grantId: 'grt_1', readOnly: true };

const outcome = (id: string, principal: Principal, readOnly?: boolean) =>
  d.invoke(id, { body: {} }, { requestId: 'r', auth: { principal, token: 't' }, readOnly }).then(
    (a) => (a.kind === 'json' ? a.status : a.kind),
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );

test('a read-only token calls what reads (a POST that reads too), nothing else', async () => {
  expect(await Promise.all(routes.map((r) => outcome(r.id, readOnlyToken)))).toEqual([200, 200, 'read_only_token', 'read_only_token']);
  expect(await Promise.all(routes.map((r) => outcome(r.id, person)))).toEqual([200, 200, 200, 200]);
});

test('a read-only connection (MCP readonly=true) is held to the same rule at the dispatcher', async () => {
  expect(await Promise.all(routes.map((r) => outcome(r.id, person, true)))).toEqual([200, 200, 'read_only_mode', 'read_only_mode']);
});
