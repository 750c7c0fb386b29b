import { z } from 'zod';

import { route } from '../../route.js';

export const systemRoutes = [
  route({
    id: 'system.health',
    method: 'get',
    path: '/health',
    summary: 'Liveness: the gateway process is up.',
    tag: 'system',
    response: z.object({ status: z.literal('ok') }),
    auth: 'none',
    principals: [],
    authority: false,
    handler: { kind: 'local', name: 'health' },
  }),
  route({
    id: 'system.ready',
    statuses: {
      503: {
        description:
          'A backend or service is down (`unavailable`: the same body, saying which), or the gateway is stopping (`draining`), with `Retry-After`.',
        body: 'response',
      },
    },
    method: 'get',
    path: '/ready',
    summary:
      'Readiness: every backend and service the gateway needs, checked now (503 when one is down). Whether each is up, and ' +
      'why not when a backend said so in words meant for callers (`cause`, e.g. `database_busy: ...`): addresses and errors go to the gateway log.',
    tag: 'system',
    response: z.object({
      status: z.enum(['ready', 'unavailable', 'draining']),
      backends: z.record(z.string(), z.object({ ok: z.boolean(), cause: z.string().optional() })),
      services: z.record(z.string(), z.object({ ok: z.boolean() })),
    }),
    auth: 'none',
    principals: [],
    authority: false,
    handler: { kind: 'local', name: 'ready' },
  }),
  route({
    id: 'system.openapi',
    method: 'get',
    path: '/openapi.json',
    summary: 'This API as an OpenAPI 3.1 document.',
    tag: 'system',
    response: z.record(z.string(), z.unknown()),
    auth: 'none',
    principals: [],
    authority: false,
    handler: { kind: 'local', name: 'openapi' },
  }),
];
