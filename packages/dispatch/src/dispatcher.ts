import { type HttpReply, isReply, type Route, type RouteInput, routes as allRoutes } from '@svc/api';
import { DEFINITIONS } from '@svc/clients';
import { DomainError, type Principal, type Registry } from '@svc/kit';

import { checkPrincipal } from './access.js';
import type { Download } from './content.js';
import { type RawInput, validateInput } from './input.js';

/** Who invokes an operation, as a front authenticated them. */
export interface Invocation {
  requestId: string;
  /** The verified principal and the signed token that carries it to services (absent: no credential). */
  auth?: { principal: Principal; token: string };
  /** Only the answer's headers are wanted (HTTP HEAD). */
  head?: boolean;
}

export interface OperationContext extends Invocation {
  route: Route;
}

/** A file's content as an answer (`answer: 'bytes'`): what to send, and the bytes. */
export interface ContentAnswer {
  readonly $content: true;
  download: Download;
}

export const contentAnswer = (download: Download): ContentAnswer => ({ $content: true, download });

/**
 * An operation handler (`handler: {kind: 'local', name}`): the input is validated and the caller
 * checked. It answers with a JSON body, a `reply(...)` (status, headers) or a `contentAnswer(...)`.
 */
export type OperationHandler = (input: RouteInput, ctx: OperationContext) => Promise<unknown>;

/** What an operation answered, for a front to write in its own protocol. */
export type Answer = { kind: 'json'; status: number; headers: Record<string, string>; body: unknown } | { kind: 'content'; download: Download };

export interface DispatcherOptions {
  registry: Registry;
  /** The operations (default: the whole route table). */
  routes?: Route[];
  /** Operation handlers by name, for routes declared `local`. */
  handlers?: Record<string, OperationHandler>;
  /** Told of each key an operation revoked, before the answer goes out (to forget it at once). */
  onKeyRevoked?: (keyId: string) => void;
}

// Answers are per principal, and a key's creation carries the key itself: no cache keeps them.
const NO_STORE = { 'Cache-Control': 'no-store' };

function isContentAnswer(v: unknown): v is ContentAnswer {
  return typeof v === 'object' && v !== null && (v as { $content?: unknown }).$content === true;
}

/**
 * The one way into the platform's operations, shared by every front (the HTTP API, MCP, the
 * protocol fronts): principal and authority rules, input validation, the service call and the
 * answer's shape, all from the route table. Authentication is the front's (it knows how the
 * credential travels) and happens before.
 */
export class Dispatcher {
  readonly routes: Route[];
  private readonly byId = new Map<string, Route>();
  private readonly handlers: Record<string, OperationHandler>;

  constructor(private readonly options: DispatcherOptions) {
    this.routes = options.routes ?? allRoutes;
    for (const r of this.routes) this.byId.set(r.id, r);
    this.handlers = options.handlers ?? {};
  }

  operation(id: string): Route | undefined {
    return this.byId.get(id);
  }

  /** Adds operation handlers (a front's own operations: health, readiness, identity). */
  register(handlers: Record<string, OperationHandler>): void {
    Object.assign(this.handlers, handlers);
  }

  async invoke(operation: string | Route, raw: RawInput, inv: Invocation): Promise<Answer> {
    const route = typeof operation === 'string' ? this.byId.get(operation) : operation;
    if (!route) throw new DomainError('not_found', 'unknown_operation', `There is no operation ${String(operation)}.`);
    if (route.auth === 'key') {
      if (!inv.auth) throw new DomainError('unauthenticated', 'missing_api_key', 'An API key is required: Authorization: Bearer <key>.');
      checkPrincipal(inv.auth.principal, route);
    }
    const h = route.handler;
    if (h.kind === 'unimplemented') {
      throw new DomainError('not_implemented', 'not_implemented', `${route.method.toUpperCase()} ${route.path} is not implemented yet.`);
    }
    if (raw.unreadableBody) throw raw.unreadableBody;
    const input = validateInput(route, raw);
    if (route.content && raw.content) input.content = await raw.content();
    const status = route.status ?? 200;

    if (h.kind === 'local') {
      const handler = this.handlers[h.name];
      if (!handler) throw new DomainError('not_implemented', 'not_implemented', 'This operation is not implemented yet.');
      const out = await handler(input, { ...inv, route });
      if (isContentAnswer(out)) return { kind: 'content', download: out.download };
      return json(out, status, {});
    }

    const def = DEFINITIONS[h.service];
    const client = this.options.registry.client(h.service, def[0], def[1]) as Record<string, (r: unknown, o: unknown) => Promise<unknown>>;
    const request = h.request ? h.request(input) : { ...input.params, ...input.query, ...(input.body ?? {}) };
    const result = await client[h.method]!(request, { principalToken: inv.auth?.token, requestId: inv.requestId });
    if (h.revokesKey) this.options.onKeyRevoked?.(h.revokesKey(input));
    return json(h.response ? h.response(result, input) : result, status, NO_STORE);
  }
}

function json(out: unknown, status: number, headers: Record<string, string>): Answer {
  if (isReply(out)) {
    const r = out as HttpReply;
    return { kind: 'json', status: r.status ?? status, headers: { ...headers, ...r.headers }, body: r.body };
  }
  return { kind: 'json', status, headers, body: out };
}
