import { z } from 'zod';

import { allOperations, route } from '@svc/api';
import { createDispatcher, handlerProblems, type OperationHandler } from '@svc/dispatch';
import { createHashPool, createLogger, Registry } from '@svc/kit';

/**
 * The process's one dispatcher (docs/architecture.md, "The spine"): every `local` operation of the
 * route table from one table, checked at start, so a route whose handler is missing (or a handler
 * no route names) stops the process instead of answering 501 at the first call.
 */
const log = createLogger({ level: 'silent', service: 'test' });
const registry = new Registry({}, 1000);
const hashes = createHashPool({ name: 'test-sha256' });
const deps = { log, registry, backends: { blobs: async () => ({}) as never }, hashes };
const gateway: Record<string, OperationHandler> = { health: async () => ({}), ready: async () => ({}), openapi: async () => ({}) };

afterAll(async () => {
  await hashes.close();
  registry.close();
});

test('the platform table and the gateway operations serve every local route', () => {
  const d = createDispatcher({ ...deps, operations: gateway });
  expect(d.routes).toBe(allOperations);
  // The gateway's own alone leave the platform's unserved, each named.
  expect(handlerProblems(allOperations, gateway).join('\n')).toMatch(/names local operation "drive\.read", which has no handler/);
});

test('a local route without its handler fails at start, naming the route', () => {
  const { openapi: _, ...partial } = gateway;
  expect(() => createDispatcher({ ...deps, operations: partial })).toThrow(
    /openapi \(GET \/openapi\.json\) names local operation "openapi", which has no handler/,
  );
});

test('a process that does not serve some operations says which (the runtime: the gateway own)', () => {
  expect(() => createDispatcher({ ...deps, notServed: ['health', 'ready', 'openapi'] })).not.toThrow();
  expect(() => createDispatcher({ ...deps, notServed: ['health', 'ready', 'openapi', 'nothing'] })).toThrow(
    /operation handler "nothing" is named by no route/,
  );
});

test('a handler no route names fails at start', () => {
  expect(() => createDispatcher({ ...deps, operations: { ...gateway, stray: async () => ({}) } })).toThrow(
    /operation handler "stray" is named by no route/,
  );
});

test('a table of its own (a test front) is checked the same way', () => {
  const ping = route({
    id: 'test.ping',
    method: 'get',
    path: '/ping',
    summary: 'Ping.',
    tag: 'test',
    response: z.object({}),
    auth: 'none',
    principals: [],
    authority: false,
    handler: { kind: 'local', name: 'ping' },
  });
  expect(() => createDispatcher({ ...deps, routes: [ping] })).toThrow(/test\.ping .* names local operation "ping"/);
  expect(createDispatcher({ ...deps, routes: [ping], operations: { ping: async () => ({}) } }).operation('test.ping')).toBe(ping);
});
