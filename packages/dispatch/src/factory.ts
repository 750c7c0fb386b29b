import { allOperations, type Route } from '@svc/api';

import type { ContentDeps } from './content.js';
import { Dispatcher, type DispatcherOptions, type OperationHandler } from './dispatcher.js';
import { driveOperations } from './operations/drive.js';
import type { RunCodeFn } from './operations/drive-code.js';
import { identityOperations } from './operations/identity.js';
import type { LiveStreams } from './operations/live-streams.js';
import { threadOperations } from './operations/threads.js';
import { tradingOperations } from './operations/trading.js';

/** What a process gives the factory: what its operations need, and its own. */
export interface DispatcherDeps extends ContentDeps, Omit<DispatcherOptions, 'handlers' | 'log'> {
  /** One count of live event streams per key, whichever operation serves them (threads, trading). */
  streams?: LiveStreams;
  /** How a drive code operation runs a script (default: the mcp service's sandbox, or code mode). */
  runCode?: RunCodeFn;
  /**
   * The process's own operations, beside the platform's (the gateway's: liveness, readiness, the
   * OpenAPI document). They are checked against the route table as the platform's are.
   */
  operations?: Record<string, OperationHandler>;
  /**
   * `local` operations this process does not serve, by name (the runtime: the gateway's own): they
   * answer 501, and the factory checks each names a `local` route. Any other unserved one is a
   * start failure.
   */
  notServed?: string[];
}

/** The platform's `local` operations, by name: one table, whoever serves them. */
function platformOperations(deps: DispatcherDeps): Record<string, OperationHandler> {
  return {
    ...driveOperations(deps),
    ...identityOperations(deps),
    ...threadOperations(deps),
    ...tradingOperations(deps),
  };
}

/** The names of the `local` operations of a route table. */
const localNames = (routes: Route[]) => new Set(routes.flatMap((r) => (r.handler.kind === 'local' ? [r.handler.name] : [])));

/**
 * The problems of a handler table against its routes: a `local` route without a handler, a
 * handler (or an unserved name) no route names. Empty when they match.
 */
export function handlerProblems(routes: Route[], handlers: Record<string, OperationHandler>, notServed: string[] = []): string[] {
  const named = localNames(routes);
  // A subset of the table (a test's) may leave some of the platform's handlers without a route.
  const known = routes === allOperations ? named : new Set([...named, ...localNames(allOperations)]);
  const problems: string[] = [];
  for (const r of routes) {
    if (r.handler.kind !== 'local') continue;
    const name = r.handler.name;
    if (!handlers[name] && !notServed.includes(name))
      problems.push(`${r.id} (${r.method.toUpperCase()} ${r.path}) names local operation "${name}", which has no handler`);
  }
  for (const name of [...Object.keys(handlers), ...notServed]) {
    if (!known.has(name)) problems.push(`operation handler "${name}" is named by no route`);
  }
  return problems;
}

/**
 * The process's one dispatcher (docs/architecture.md, "The spine"): every `local` operation of the
 * route table registered from one table (the platform's, and the process's own), checked at start.
 * It throws, naming them, when a `local` route has no handler or a handler no route.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const routes = deps.routes ?? allOperations;
  const handlers = { ...platformOperations(deps), ...deps.operations };
  const problems = handlerProblems(routes, handlers, deps.notServed);
  if (problems.length) throw new Error(`The dispatcher's operations do not match the route table:\n  ${problems.join('\n  ')}`);
  const { registry, onKeyRevoked, answers, scriptTools, log, limiter } = deps;
  return new Dispatcher({ registry, routes, handlers, onKeyRevoked, answers, scriptTools, log, limiter });
}
