import { z } from 'zod';

import type { GrpcServiceName } from '@svc/kit';

import type { Effect, PrincipalKind, Route } from '../route.js';

/**
 * An internal operation (Route.internal): one call of `service.method` that a protocol front makes
 * through the dispatcher as its caller, with the request it built, answering the service's reply.
 * Its id is `internal.<service>.<method>`, its HTTP method the one its effect would have. Made in the
 * route table's erased form: its input is the service's request as the front built it, which no
 * schema of the route describes (the service validates it).
 */
export function internalRoute(
  service: GrpcServiceName,
  method: string,
  r: { summary: string; effect: Effect; principals: PrincipalKind[]; deadlineMs?: number },
): Route {
  return {
    id: `internal.${service}.${method}`,
    method: r.effect === 'reads' ? 'get' : r.effect === 'deletes' ? 'delete' : 'post',
    path: `/internal/${service}/${method}`,
    summary: r.summary,
    tag: 'internal',
    internal: true,
    response: z.unknown(),
    effect: r.effect,
    auth: 'key',
    principals: r.principals,
    authority: false,
    handler: { kind: 'rpc', service, method, request: (input) => input.body, deadlineMs: r.deadlineMs },
  };
}

/** The id of the internal operation that is one call of `service.method`. */
export const internalId = (service: string, method: string) => `internal.${service}.${method}`;
