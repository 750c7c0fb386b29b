import type { z } from 'zod';

import { type ErrorCode, type GrpcServiceName, type ServiceName, visibleName } from '@svc/kit';

import type { RpcDeclaration, RpcTarget } from './rpc.js';

export type { ServiceName };
export { visibleName };
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type PrincipalKind = 'human' | 'agent' | 'host';

/**
 * The validated input of an operation: path params, query and body, each parsed by its schema. A
 * route's mappers get it typed by the route's schemas (`InputOf`); code that serves any operation
 * (the dispatcher, local handlers) sees it erased, as this default.
 */
export interface RouteInput<P = Record<string, unknown>, Q = Record<string, unknown>, B = unknown, H = Record<string, unknown>> {
  params: P;
  query: Q;
  body: B;
  /** The headers the route declares (lowercase names), parsed by its `headers` schema. */
  headers: H;
  /** The bytes of a route that takes content (`content`), as the front received them. */
  content?: Content;
}

/** What a part of the input is without a schema: `{}` (params, query, headers) or `undefined` (body). */
type NoFields = Record<never, never>;
type Parsed<S, Absent> = S extends z.ZodType ? z.output<S> : Absent;

/** The input a route's mappers get: each part as its schema parses it (z.output: defaults filled in). */
export type InputOf<P, Q, B, H> = RouteInput<Parsed<P, NoFields>, Parsed<Q, NoFields>, Parsed<B, undefined>, Parsed<H, NoFields>>;

/**
 * A request body that is not JSON, as a front hands it over: the bytes of a raw body, or of the
 * first file part of a multipart form (with the form's fields before it).
 */
export interface Content {
  /** The bytes, streamed; reading stops early without consuming the rest. */
  stream: AsyncIterable<Buffer>;
  /** The content type the client declared for the bytes, if it said anything meaningful. */
  type?: string;
  /** The declared length in bytes, when the client sent one (a raw body's Content-Length). */
  length?: number;
  /** The file name a multipart file part carried. */
  filename?: string;
  /** The form fields that came before the file part (multipart only). */
  fields: Record<string, string>;
}

/** A request body that is not JSON (`Route.content`). */
export interface ContentBody {
  /** `bytes`: the raw body, any content type; `multipart`: multipart/form-data with a file part. */
  kinds: Array<'bytes' | 'multipart'>;
  /** The fields a multipart form may carry before its file part (documented in OpenAPI). */
  fields?: z.ZodObject;
  description: string;
}

/**
 * What a response mapper returns when it needs more than a JSON body: a status, headers
 * (ETag, Location, ...). Build it with `reply()`.
 */
export interface HttpReply<B = unknown> {
  readonly $reply: true;
  status?: number;
  headers?: Record<string, string>;
  body: B;
  /** The body already serialized as JSON (a cached answer): sent as is. */
  json?: string;
}

/** A reply of JSON text already made (a service's): sent as is; its shape is the service's, not checked here. */
export type JsonTextReply = HttpReply<undefined> & { json: string };

export function reply(body: undefined, opts: { status?: number; headers?: Record<string, string>; json: string }): JsonTextReply;
export function reply<B>(body: B, opts?: { status?: number; headers?: Record<string, string>; json?: string }): HttpReply<B>;
export function reply<B>(body: B, opts: { status?: number; headers?: Record<string, string>; json?: string } = {}): HttpReply<B> {
  return { $reply: true, body, ...opts };
}

export function isReply(v: unknown): v is HttpReply {
  return typeof v === 'object' && v !== null && (v as { $reply?: unknown }).$reply === true;
}

/**
 * How an operation maps to one gRPC method of a service, erased (the route table's form; a route
 * declares it as `{ rpc: 'service.method', ... }`, typed from the proto and the route's schemas,
 * see rpc.ts). The mappers are methods so that a typed one is one of these.
 */
export interface RpcHandler {
  kind: 'rpc';
  service: GrpcServiceName;
  method: string;
  /** Builds the gRPC request (default: params, query and body merged). */
  request?(input: RouteInput): unknown;
  /** Builds the answer from the gRPC response (default: the response as is). */
  response?(res: unknown, input: RouteInput): unknown;
  /**
   * The ids of the API keys this operation revokes (the one named, and those revoked with it down
   * its lineage, from the service's answer): the front forgets them before answering.
   */
  revokesKey?(input: RouteInput, res: unknown): string | string[];
  /** The call's deadline when the operation may take longer than SVC_GRPC_DEADLINE_MS (running code). */
  deadlineMs?: number;
  /**
   * The answer is the same for everyone acting in an account, changes rarely and is asked often
   * (GET /models): the dispatcher keeps it per acting account and input for `ttlMs`, and drops an
   * account's answers under `tag` when an operation that `invalidates` the tag succeeds for that
   * account, or when told (`AnswerCache.evict`, from the service's events on other replicas).
   */
  cache?: { tag: string; ttlMs: number };
  /** Tags of cached answers (`cache`) this operation changes for the acting account. */
  invalidates?: string[];
}

/** An operation served by a handler registered with the dispatcher. */
export interface LocalHandler {
  kind: 'local';
  name: string;
}

/** An operation whose service has not landed: 501. */
export interface UnimplementedHandler {
  kind: 'unimplemented';
  service: ServiceName;
}

/**
 * One operation of the public API, declared once. The gateway's routing, input
 * validation, authority checks and the OpenAPI document all come from these entries.
 */
export interface Route {
  /** operationId, `<group>.<verb>`. */
  id: string;
  method: HttpMethod;
  /** Express-style path without the optional /v1 prefix (`/agents/:id/keys`). */
  path: string;
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** JSON body limit when the operation needs more than SVC_BODY_LIMIT (e.g. `16mb`). */
  bodyLimit?: string;
  /** A body that is not JSON (file content): never parsed by the front, streamed to the operation. */
  content?: ContentBody;
  /** Request headers the operation reads (lowercase names, e.g. `if-match`). */
  headers?: z.ZodObject;
  response: z.ZodType;
  /**
   * What a success answer is: JSON described by `response` (the default), or `bytes` (a file's
   * content, in its own content type, with Range support).
   */
  answer?: 'json' | 'bytes';
  /**
   * With `Accept: text/event-stream`, the answer is a live stream of server-sent events, each with
   * an `id` (a client resumes after it with `Last-Event-ID`) and this schema's data as JSON.
   */
  events?: { schema: z.ZodType; description: string };
  /** Success status (200 unless given). */
  status?: number;
  /**
   * The other statuses the operation answers, beyond the ones every operation of its kind has
   * (see openapi.ts): a conflict (409), a precondition (412, 428), a refusal of the rules (422), a
   * quota (413, 429 of a drive write), or
   * a second success (201 beside 200) with the same body. Documented in OpenAPI with these
   * descriptions (`{ description, body: 'response' }`: an error status that answers the operation's
   * own body, as GET /ready's 503 does); the tests' contract check (test/support/contract.ts) refuses any status not declared.
   */
  statuses?: Record<number, string | { description: string; body: 'response' }>;
  /**
   * The error codes of its own the operation may answer (the registry's, packages/kit/src/error-codes.ts),
   * beyond those every operation of its kind answers (openapi/errors.ts): OpenAPI lists them per
   * status (`x-svc-error-codes`), and the tests' contract check refuses an error code not listed.
   */
  errors?: ErrorCode[];
  /**
   * What the operation does to what is there (docs/architecture.md, "Effects"): `reads` (changes
   * nothing), `creates` (adds; nothing there changes), `updates` (changes in place; nothing is lost),
   * `deletes` (removes, cancels or ends something), `overwrites` (replaces something, which may be
   * lost). GET is `reads` and DELETE `deletes` unless they say otherwise; every POST, PUT and PATCH
   * of the route table says (a test holds them to it). The MCP tools' hints, read-only mode and OpenAPI's
   * `x-svc-effect` come from it.
   */
  effect?: Effect;
  /** It may reach outside the platform (a broker's venue, a user's machine, DNS): MCP's openWorldHint. */
  outside?: boolean;
  /**
   * An operation the platform's own fronts invoke (WebDAV, Git, public sites: the drive and profile
   * calls behind their protocols, `routes/<service>/internal.ts`), under the same principal rules as
   * every other: not served over HTTP, not in OpenAPI or the SDKs, no MCP tool. Its input is the
   * service's request as the front built it (the service validates it), and its answer the reply.
   */
  internal?: boolean;
  /** `none`: no credential needed. */
  auth: 'key' | 'none';
  /** Principal kinds that may call it at all. */
  principals: PrincipalKind[];
  /** Changes authority (grants, owners, settings, signing keys, hosts): agents get 403. */
  authority: boolean;
  /**
   * A person's own decision (approving an agent's tool call, docs/threads.md "Approvals"): only a
   * person through the API makes it; an agent or host key and the MCP channel get 403
   * `human_principal_required`, and it is no MCP tool. Unlike authority it is in the SDKs.
   */
  personOnly?: boolean;
  /**
   * How it is served: `rpc` maps to one gRPC method of a service; `local` names an operation
   * handler registered with the dispatcher (more than one unary call: content streamed to and from
   * the blob store, the gateway's own answers); `unimplemented` answers 501 until its service lands.
   */
  handler: RpcHandler | LocalHandler | UnimplementedHandler;
}

/** The parts of a route its schemas type (the rest of `Route` is the same declared as erased). */
type Typed = 'params' | 'query' | 'body' | 'headers' | 'response' | 'handler';

/**
 * A route as declared: `Route` with its schemas' types kept (P, Q, B, H: params, query, body,
 * headers; R: response) and its rpc handler's target (T, `service.method`), so that the handler's
 * mappers are typed by them: `request` gets `InputOf` the schemas and builds the method's request,
 * `response` reads the method's response and returns an `Answer` of the response schema. `G`: the
 * fields a helper gives (`routeWith`).
 */
export type RouteDeclaration<P, Q, B, H, R extends z.ZodType, T extends RpcTarget, Rq, G extends keyof Route = never> = Omit<Route, Typed | G> & {
  params?: P;
  query?: Q;
  body?: B;
  headers?: H;
  response: R;
  handler: RpcDeclaration<T, InputOf<P, Q, B, H>, Answer<R>, Rq> | LocalHandler | UnimplementedHandler;
};

/**
 * What a response mapper may return: the response schema's input (z.input: a field with a default
 * may be left out), directly or in a `reply()`, or JSON text a service made (`JsonTextReply`). Its
 * string enums are widened to `string`: the proto carries them as strings, and the schema states
 * which values the service sends.
 */
export type Answer<R extends z.ZodType> = Widened<z.input<R>> | HttpReply<Widened<z.input<R>>> | JsonTextReply;
type Widened<T> = T extends string
  ? string
  : T extends readonly (infer E)[]
    ? Widened<E>[]
    : T extends Record<string, unknown>
      ? { [K in keyof T]: Widened<T[K]> }
      : T;

type ObjectSchema = z.ZodObject | undefined;

/** A function that declares an operation (`G`: the fields it is given), typed by its schemas (see `RouteDeclaration`). */
export type RouteDeclarer<G extends keyof Route = never> = <
  P extends ObjectSchema = undefined,
  Q extends ObjectSchema = undefined,
  B extends z.ZodType | undefined = undefined,
  H extends ObjectSchema = undefined,
  R extends z.ZodType = z.ZodType,
  T extends RpcTarget = never,
  Rq = unknown,
>(
  r: RouteDeclaration<P, Q, B, H, R, T, Rq, G>,
) => Route;

/** Declares one operation, typed by its schemas, in the erased form the route table holds. */
export const route: RouteDeclarer = (r) => ({ ...r, handler: erased(r.handler) }) as Route;

/** The route table's form of a declared handler: `rpc: 'service.method'` split (once, as the module loads). */
function erased(h: { rpc: string } | LocalHandler | UnimplementedHandler): Route['handler'] {
  if (!('rpc' in h)) return h;
  const { rpc, ...map } = h;
  const dot = rpc.indexOf('.');
  return { kind: 'rpc', service: rpc.slice(0, dot) as GrpcServiceName, method: rpc.slice(dot + 1), ...map };
}

/** A `route` with some fields given (a group's tag and authority): the declarations say the rest. */
export function routeWith<G extends keyof Route>(given: Pick<Route, G>): RouteDeclarer<G> {
  // The given fields and the declaration's make a whole route, which TypeScript cannot see for a generic G.
  return (r) => route({ ...given, ...r } as unknown as Parameters<RouteDeclarer>[0]);
}

/** What an operation does to what is there (Route.effect). */
export type Effect = 'reads' | 'creates' | 'updates' | 'deletes' | 'overwrites';

/**
 * An operation's effect: its own, or its method's (GET reads, DELETE deletes, PUT overwrites, PATCH
 * updates, POST creates). Every POST, PUT and PATCH of the route table declares its own
 * (packages/tools/test/tools.test.ts holds it to that); the method's is for routes made elsewhere.
 */
export function effectOf(r: Pick<Route, 'effect' | 'method'>): Effect {
  if (r.effect) return r.effect;
  return ({ get: 'reads', delete: 'deletes', put: 'overwrites', patch: 'updates', post: 'creates' } as const)[r.method];
}

/** Repeating it with the same input changes nothing more: it reads, or its method says so (PUT, DELETE). */
export const isIdempotent = (r: Pick<Route, 'effect' | 'method'>): boolean => effectOf(r) === 'reads' || r.method === 'put' || r.method === 'delete';

// Shared schemas: declared in @svc/contract (below the route table, used by the services too) and
// re-exported here, where the route files import them from.
export {
  AccountId,
  AgentId,
  DisplayName,
  ErrorBody,
  ListQuery,
  MAX_JSON_DEPTH,
  Nullable,
  prefixedId,
  ProjectId,
  StreamHeaders,
  Success,
  Timestamp,
} from '@svc/contract';
