import { allOperations, effectOf, type Route, type RouteInput } from '@svc/api';
import { DEFINITIONS } from '@svc/clients';
import { DomainError, type Logger, type Principal, type Registry } from '@svc/kit';

import { checkPrincipal } from './access.js';
import { AnswerCache } from './answer-cache.js';
import { type Answer, answerOf, type HeaderSink } from './answers.js';
import { type IdempotencyClaim, idempotent, takesIdempotencyKey } from './idempotency.js';
import { type RawInput, validateInput } from './input.js';
import type { Admission, OperationClass, RateLimiter } from './rate-limits.js';

/** Who invokes an operation, as a front authenticated them. */
export interface Invocation {
  requestId: string;
  /** The verified principal and the signed token that carries it to services (absent: no credential). */
  auth?: { principal: Principal; token: string };
  /** Only the answer's headers are wanted (HTTP HEAD). */
  head?: boolean;
  /**
   * The caller takes a stream of events (HTTP: `Accept: text/event-stream`): an operation that
   * declares `events` then answers with them; others ignore it.
   */
  stream?: boolean;
  /**
   * The caller gives up on the call (a run's tool call aborted, docs/threads.md): a service call is
   * reset, which the service sees as its call's signal; a local operation gets it as `ctx.signal`.
   */
  signal?: AbortSignal;
  /**
   * The tools a script this call runs may call (code mode, docs/run-code.md "Calling tools"), as
   * the front that made the call allows them to its caller; absent: the dispatcher's own
   * (DispatcherOptions.scriptTools), if any.
   */
  tools?: ScriptTools;
  /**
   * The caller's idempotency key for this call (docs/reliability.md): a POST operation's answer is
   * recorded under it and replayed to the same call with the same key (idempotency.ts); other
   * operations ignore it.
   */
  idempotency?: IdempotencyClaim;
  /**
   * The call draws no rate-limit token: its front metered the request that carries it already (an
   * MCP message, by its tool's class), or it is a front's own lookup for the request it serves.
   * Otherwise a caller's call to an operation takes a token of the operation's class (rate-limits.ts).
   */
  metered?: boolean;
  /**
   * Where the dispatcher's policies set headers of the answer, decided before the operation runs and
   * kept on a refusal too: the rate limit's `RateLimit` and `RateLimit-Policy`, a replay's
   * `Idempotent-Replayed` (an HTTP front passes its response). A front whose protocol has no
   * headers leaves it out.
   */
  headers?: HeaderSink;
  /**
   * The caller acts read-only (MCP's read-only mode, docs/mcp.md): an operation whose effect is not
   * `reads` is refused (403 `read_only_mode`), whatever the front. A read-only token's principal
   * (principal.readOnly) is held to the same rule by checkPrincipal.
   */
  readOnly?: boolean;
}

/**
 * The tools a script may call, on behalf of the caller of the operation that runs it: `names`
 * become the script's helpers, and `call` runs one call under every rule of a direct tool call
 * (the caller's principal, its view, rate limits), answering the tool's result or error body.
 */
export interface ScriptTools {
  names: string[];
  call(name: string, args: unknown, signal: AbortSignal): Promise<{ result: Record<string, unknown>; isError: boolean }>;
}

export interface OperationContext extends Invocation {
  route: Route;
  /** The tools of a script this operation runs (code mode): the invocation's, else the dispatcher's; undefined: none. */
  scriptTools(): Promise<ScriptTools | undefined>;
}

/**
 * An operation handler (`handler: {kind: 'local', name}`): the input is validated and the caller
 * checked. It answers with a JSON body, a `reply(...)` (status, headers), a `contentAnswer(...)`, or
 * (when `ctx.stream` and the route declares `events`) an `eventsAnswer(...)`.
 */
export type OperationHandler = (input: RouteInput, ctx: OperationContext) => Promise<unknown>;

export interface DispatcherOptions {
  registry: Registry;
  /** The operations (default: the whole route table, internal operations included). */
  routes?: Route[];
  /** Operation handlers by name, for routes declared `local` (createDispatcher registers and checks them). */
  handlers?: Record<string, OperationHandler>;
  /** Told of each key an operation revoked, before the answer goes out (to forget it at once). */
  onKeyRevoked?: (keyId: string) => void;
  /** Where answers of routes that declare `cache` are kept (the gateway's, evicted on events); default its own. */
  answers?: AnswerCache;
  /** The tools a script run by an invocation that brings none may call (the API front's code mode). */
  scriptTools?: (inv: Invocation) => Promise<ScriptTools | undefined>;
  /** Where failures to record an idempotent answer are told. */
  log?: Logger;
  /** The token buckets every caller's calls draw on (absent: nothing is limited). */
  limiter?: RateLimiter;
}

// Answers are per principal, and a key's creation carries the key itself: no cache keeps them.
const NO_STORE: Readonly<Record<string, string>> = Object.freeze({ 'Cache-Control': 'no-store' });
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const NONE: Record<string, never> = Object.freeze({});

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
  private readonly invokers = new Map<Route, (raw: RawInput, inv: Invocation) => Promise<Answer>>();
  readonly answers: AnswerCache;

  constructor(private readonly options: DispatcherOptions) {
    this.routes = options.routes ?? allOperations;
    this.answers = options.answers ?? new AnswerCache();
    for (const r of this.routes) this.byId.set(r.id, r);
    this.handlers = options.handlers ?? {};
  }

  operation(id: string): Route | undefined {
    return this.byId.get(id);
  }

  /**
   * Invokes an operation: by id, or by its route. The route's invoker is compiled on first use
   * (what the declaration decides, decided once), so a call does only what its operation needs.
   */
  invoke(operation: string | Route, raw: RawInput, inv: Invocation): Promise<Answer> {
    const route = typeof operation === 'string' ? this.byId.get(operation) : operation;
    if (!route) return Promise.reject(new DomainError('not_found', 'unknown_operation', `There is no operation ${String(operation)}.`));
    let invoker = this.invokers.get(route);
    if (!invoker) this.invokers.set(route, (invoker = this.compile(route)));
    // Admission in order: the caller's rate limit (a refusal there leaves a key unclaimed), then the
    // idempotency key, then the operation's own rules (its invoker).
    if (this.options.limiter && inv.auth && !inv.metered && !route.internal) {
      try {
        const metering = this.meter(route, inv.auth.principal, inv.headers);
        if (metering) {
          const run = invoker;
          return metering.then(() => this.keyed(route, run, raw, inv));
        }
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.keyed(route, invoker, raw, inv);
  }

  private keyed(route: Route, invoker: (raw: RawInput, inv: Invocation) => Promise<Answer>, raw: RawInput, inv: Invocation): Promise<Answer> {
    if (inv.idempotency && takesIdempotencyKey(route)) return idempotent(this.options, route, inv.idempotency, raw, inv, (r) => invoker(r, inv));
    return invoker(raw, inv);
  }

  /**
   * Takes a rate-limit token for a caller's request (an operation, or a protocol front's own
   * request by class: a WebDAV method, an MCP message) and sets the answer's RateLimit headers;
   * throws the 429 when a bucket is empty. Synchronous while the replica's leases last (no promise
   * on most calls); nothing without a limiter.
   */
  meter(what: Route | OperationClass, principal: Principal, headers?: HeaderSink): void | Promise<void> {
    const limiter = this.options.limiter;
    if (!limiter) return;
    const settle = (admission: Admission) => {
      if (headers) for (const [k, v] of Object.entries(admission.headers)) headers.setHeader(k, v);
      if (admission.denied) throw admission.denied;
    };
    const admitted = limiter.admit(what, principal);
    return admitted instanceof Promise ? admitted.then(settle) : settle(admitted);
  }

  private compile(route: Route): (raw: RawInput, inv: Invocation) => Promise<Answer> {
    const h = route.handler;
    const needsKey = route.auth === 'key';
    const status = route.status ?? 200;
    const streams = route.events !== undefined;
    const internal = route.internal === true;
    const reads = effectOf(route) === 'reads';
    const admit = (raw: RawInput, inv: Invocation): RouteInput => {
      if (needsKey) {
        if (!inv.auth) throw new DomainError('unauthenticated', 'missing_api_key', 'An API key is required: Authorization: Bearer <key>.');
        checkPrincipal(inv.auth.principal, route);
      }
      if (inv.readOnly && !reads) {
        throw new DomainError('forbidden', 'read_only_mode', 'This operation changes things, and this connection is read-only (readonly=true).');
      }
      if (h.kind === 'unimplemented') {
        throw new DomainError('not_implemented', 'not_implemented', `${route.method.toUpperCase()} ${route.path} is not implemented yet.`);
      }
      if (raw.unreadableBody) throw raw.unreadableBody;
      // An internal operation's input is the service's request, built by a front: its service checks it.
      return internal ? { params: NONE, query: NONE, body: raw.body, headers: NONE } : validateInput(route, raw);
    };

    if (h.kind === 'local' || h.kind === 'unimplemented') {
      const name = h.kind === 'local' ? h.name : '';
      return async (raw, inv) => {
        const input = admit(raw, inv);
        if (route.content && raw.content) input.content = await raw.content();
        const handler = this.handlers[name];
        if (!handler) throw new DomainError('not_implemented', 'not_implemented', 'This operation is not implemented yet.');
        const ctx: OperationContext = {
          requestId: inv.requestId,
          auth: inv.auth,
          head: inv.head,
          stream: streams && inv.stream === true,
          signal: inv.signal,
          route,
          scriptTools: async () => inv.tools ?? this.options.scriptTools?.(inv),
        };
        return answerOf(await handler(input, ctx), status, NO_HEADERS);
      };
    }

    const [definition, grpcName] = DEFINITIONS[h.service];
    const deadline = h.deadlineMs !== undefined ? { deadlineMs: h.deadlineMs } : {};
    const call = async (input: RouteInput, inv: Invocation) => {
      const client = this.options.registry.client(h.service, definition, grpcName) as Record<string, (r: unknown, o: unknown) => Promise<unknown>>;
      const request = h.request ? h.request(input) : { ...input.params, ...input.query, ...(input.body ?? {}) };
      const result = await client[h.method]!(request, { principalToken: inv.auth?.token, requestId: inv.requestId, signal: inv.signal, ...deadline });
      if (h.revokesKey && this.options.onKeyRevoked) for (const id of new Set([h.revokesKey(input, result)].flat())) this.options.onKeyRevoked(id);
      if (h.invalidates && inv.auth) for (const tag of h.invalidates) this.answers.evict(tag, inv.auth.principal.accountId);
      return answerOf(h.response ? h.response(result, input) : result, status, NO_STORE);
    };
    const cache = h.cache;
    if (!cache || !needsKey) return async (raw, inv) => call(admit(raw, inv), inv);
    // A cached answer: the same for everyone acting in the account, kept already serialised.
    return async (raw, inv) => {
      const input = admit(raw, inv);
      const accountId = inv.auth!.principal.accountId;
      const key = JSON.stringify([route.id, input.params, input.query]);
      const hit = this.answers.get(cache.tag, accountId, key);
      if (hit) return hit;
      const answer = await call(input, inv);
      if (answer.kind === 'json' && answer.status < 300) {
        const kept = { ...answer, text: answer.text ?? JSON.stringify(answer.body) };
        this.answers.set(cache.tag, accountId, key, kept, cache.ttlMs);
        return kept;
      }
      return answer;
    };
  }
}
