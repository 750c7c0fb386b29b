import { z } from 'zod';

import { route } from '../route.js';

/** The model listing. Its service has not landed: the route answers 501 with the error body. */
export const modelsRoutes = [
  route({
    id: 'models.list',
    method: 'get',
    path: '/models',
    summary: 'List the models the caller can use (not implemented yet: answers 501).',
    tag: 'models',
    response: z.object({ models: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'ModelList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'unimplemented', service: 'models' },
  }),
];
