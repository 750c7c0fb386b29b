import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';

import type { ErrorCode } from './error-codes.js';
import { DomainError, ERROR_KINDS, isErrorKind } from './errors.js';
import { MAX_REQUEST_BYTES } from './in-process.js';
import type { Logger } from './log.js';
import { type Principal, PRINCIPAL_METADATA_KEY, type PrincipalSigner } from './principal.js';
import { duplexCall, streamCall } from './stream.js';
import { UnaryCallError, UnaryChannel } from './unary.js';

/**
 * One method of a ts-proto generated service definition: unary, server-streaming
 * (`responseStream: true`), or bidirectional (`requestStream` and `responseStream`).
 */
interface MethodDef<Req, Res> {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize(value: Req): Buffer;
  requestDeserialize(value: Buffer): Req;
  responseSerialize(value: Res): Buffer;
  responseDeserialize(value: Buffer): Res;
}
/** A service's generated definition, its methods' request and response types erased (what every definition is). */
export type ServiceDefinition = Record<string, MethodDef<unknown, unknown>>;
type AnyDef = ServiceDefinition;
type ReqOf<M> = M extends MethodDef<infer Req, unknown> ? Req : never;
type ResOf<M> = M extends MethodDef<unknown, infer Res> ? Res : never;

export interface CallContext {
  principal: Principal;
  requestId: string;
  /** The signed principal token, to pass along when this service calls another as the caller. */
  principalToken: string;
  log: Logger;
  /**
   * Aborted when the caller gives up on the call (it reset its stream: a run's tool call aborted,
   * docs/threads.md, "Aborting a tool"), the deadline passes or the server stops. Work that can stop
   * with nothing applied (a script, a search, a read of a venue) passes it on; a change that commits
   * does not look at it.
   */
  signal: AbortSignal;
}

/** What a server-streaming handler gets: a CallContext, and a signal for when the call ends early. */
export interface StreamCallContext extends CallContext {
  /**
   * Aborted when the client cancels, the deadline passes or the server stops. The generator is then
   * stopped with return() (its `finally` runs) at its next yield; one that waits for something
   * (events, a model's next token) should pass the signal to the wait so it stops at once.
   */
  signal: AbortSignal;
}

/** A unary call's signal, made when a handler first asks for it (most never do). */
function lazySignal(call: grpc.ServerUnaryCall<unknown, unknown>): () => AbortSignal {
  let abort: AbortController | undefined;
  return () => {
    if (abort) return abort.signal;
    abort = new AbortController();
    if (call.cancelled) abort.abort();
    else call.once('cancelled', () => abort!.abort());
    return abort.signal;
  };
}

/**
 * The service's handlers: a unary method's returns its response; a server-streaming method's
 * returns an AsyncIterable (an async generator) of its responses.
 */
export type Handlers<D extends AnyDef> = {
  [K in keyof D]: D[K] extends { requestStream: true; responseStream: true }
    ? (requests: AsyncIterable<ReqOf<D[K]>>, ctx: StreamCallContext) => AsyncIterable<ResOf<D[K]>>
    : D[K] extends { responseStream: true }
      ? (request: ReqOf<D[K]>, ctx: StreamCallContext) => AsyncIterable<ResOf<D[K]>>
      : (request: ReqOf<D[K]>, ctx: CallContext) => Promise<ResOf<D[K]>>;
};
type UnaryHandler = (request: unknown, ctx: CallContext) => Promise<unknown>;
type StreamHandler = (request: unknown, ctx: StreamCallContext) => AsyncIterable<unknown>;

/** Channelz bookkeeping costs CPU on every call; nothing here reads it. */
const GRPC_OPTIONS = { 'grpc.enable_channelz': 0 } as const;

const ERROR_KIND_KEY = 'svc-error-kind';
const ERROR_CODE_KEY = 'svc-error-code';
const REQUEST_ID_KEY = 'x-request-id';

/**
 * The most an error's details may take (JSON bytes): they travel in the call's trailers, and
 * trailers past the peer's header list limit broke the call (a 504 at the gateway) and the
 * connection with it (503s for the calls after). Larger details are left out, with a warning.
 */
export const ERROR_DETAILS_MAX_BYTES = 8 * 1024;

function toServiceError(err: unknown, log: Logger, method: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (err instanceof DomainError) {
    metadata.set(ERROR_KIND_KEY, err.kind);
    metadata.set(ERROR_CODE_KEY, err.code);
    if (err.details) {
      const details = Buffer.from(JSON.stringify(err.details));
      if (details.length <= ERROR_DETAILS_MAX_BYTES) metadata.set('svc-error-details-bin', details);
      else log.warn({ method, code: err.code, bytes: details.length }, 'error details over their bound left out');
    }
    return { code: ERROR_KINDS[err.kind].grpc, details: err.message, metadata };
  }
  log.error({ err, method }, 'unhandled error in gRPC handler');
  metadata.set(ERROR_KIND_KEY, 'internal');
  metadata.set(ERROR_CODE_KEY, 'internal_error');
  return { code: grpc.status.INTERNAL, details: 'Internal error.', metadata };
}

/**
 * Turns async handlers into a grpc-js service implementation: every call must carry a valid
 * signed principal, and every thrown DomainError becomes a gRPC status with its kind and code.
 * Methods whose definition says `responseStream: true` are served by serveStream.
 */
export function bindService<D extends AnyDef>(
  definition: D,
  handlers: Handlers<D>,
  deps: { signer: PrincipalSigner; log: Logger },
): grpc.UntypedServiceImplementation {
  const impl: grpc.UntypedServiceImplementation = {};
  for (const name of Object.keys(definition)) {
    if (definition[name]!.responseStream) {
      const handler = handlers[name as keyof D] as unknown as StreamHandler;
      // A bidirectional call's handler reads the caller's messages from the call itself (a readable stream of them).
      const input = definition[name]!.requestStream
        ? (call: grpc.ServerWritableStream<unknown, unknown>) => call as unknown as AsyncIterable<unknown>
        : (call: grpc.ServerWritableStream<unknown, unknown>) => call.request;
      impl[name] = (call: grpc.ServerWritableStream<unknown, unknown>) => serveStream(call, handler, deps, name, input(call));
      continue;
    }
    const handler = handlers[name as keyof D] as unknown as UnaryHandler;
    impl[name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const signal = lazySignal(call);
      verifyCallPrincipal(call.metadata, deps, signal)
        .then((ctx) => handler(call.request as never, ctx))
        .then(
          (res) => callback(null, res),
          (err: unknown) => callback(toServiceError(err, requestLogger(deps.log, call.metadata), name)),
        );
    };
  }
  return impl;
}

/**
 * Serves one server-streaming call: verifies the principal as for unary calls, writes each message
 * the handler yields, waiting for 'drain' when grpc-js's buffer is full (HTTP/2 flow control reaches
 * back from a slow reader to here, so nothing piles up), then ends the call with OK, or with the
 * status and trailing metadata of what the handler threw, after the messages before it. When the
 * call ends early (client cancel, deadline, server shutdown) the signal aborts and the generator
 * is stopped with return().
 */
function serveStream(
  call: grpc.ServerWritableStream<unknown, unknown>,
  handler: StreamHandler,
  deps: { signer: PrincipalSigner; log: Logger },
  method: string,
  input: unknown,
): void {
  const abort = new AbortController();
  let wake: (() => void) | undefined;
  // grpc-js emits 'cancelled' when the stream closes, also after a normal end (then nothing waits).
  call.once('cancelled', () => {
    abort.abort();
    wake?.();
  });
  const run = async () => {
    const ctx: StreamCallContext = await verifyCallPrincipal(call.metadata, deps, () => abort.signal);
    if (call.cancelled) return;
    const messages = handler(input, ctx)[Symbol.asyncIterator]();
    // A generator that finished or threw needs no return(); one stopped at a yield does.
    let suspended = false;
    try {
      for (;;) {
        suspended = false;
        const next = await messages.next();
        if (next.done) return;
        suspended = true;
        if (call.cancelled) return;
        if (!call.write(next.value)) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            call.once('drain', resolve);
          });
          wake = undefined;
        }
        if (call.cancelled) return;
      }
    } finally {
      if (suspended) await messages.return?.();
    }
  };
  run().then(
    () => {
      if (!call.cancelled) call.end();
    },
    (err: unknown) => {
      const log = requestLogger(deps.log, call.metadata);
      // An early-ended call has no one to tell; a generator that stops by throwing (an AbortError) is expected.
      if (call.cancelled) log.debug({ err, method }, 'streaming handler ended after its call was cancelled');
      else call.emit('error', toServiceError(err, log, method));
    },
  );
}

export interface GrpcServerHandle {
  server: grpc.Server;
  address: string;
  health: HealthImplementation;
  setServing(status: ServingStatus): void;
  /** Stops taking calls, lets in-flight calls finish within graceMs, then forces the rest. */
  shutdown(graceMs: number): Promise<void>;
}

export async function startGrpcServer(options: {
  host: string;
  port: number;
  serviceName: string;
  services: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }>;
}): Promise<GrpcServerHandle> {
  const server = new grpc.Server({
    ...GRPC_OPTIONS,
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    // Clients reconnect every few minutes, so new replicas behind a Kubernetes Service get
    // traffic after a scale-up (connections are long-lived and balanced per connection).
    'grpc.max_connection_age_ms': 5 * 60_000,
    'grpc.max_connection_age_grace_ms': 30_000,
  });
  for (const s of options.services) {
    // A service with no methods yet serves health only.
    if (Object.keys(s.definition).length) server.addService(s.definition, s.implementation);
  }
  const health = new HealthImplementation({ '': 'NOT_SERVING', [options.serviceName]: 'NOT_SERVING' });
  health.addToServer(server);
  // `unix:/path` binds a Unix socket (the all-in-one stack's default); otherwise host:port.
  const unix = options.host.startsWith('unix:');
  const target = unix ? options.host : `${options.host}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    server,
    address: unix ? options.host : `${host}:${port}`,
    health,
    setServing(status) {
      health.setStatus('', status);
      health.setStatus(options.serviceName, status);
    },
    shutdown(graceMs) {
      // Readiness (the probe's `grpc.health.v1` check, of either name) fails at once.
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(options.serviceName, 'NOT_SERVING');
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/**
 * Per-call options of a typed client. `deadlineMs` of a unary call defaults to the client's; a
 * streaming call's covers the whole stream and there is none unless given (see stream.ts).
 */
export interface RpcCallOptions {
  principalToken: string;
  requestId?: string;
  deadlineMs?: number;
  /**
   * Gives up on the call: a stream ends at once (see StreamCallOptions.signal); a unary call's
   * stream is reset, which the server sees as its call cancelled (CallContext.signal), and the call
   * rejects with the DomainError `call_aborted`.
   */
  signal?: AbortSignal;
}

/**
 * A typed client: a unary method returns a promise, a server-streaming one an AsyncIterable, a
 * bidirectional one takes an AsyncIterable of requests (sent as it yields them) and returns one of
 * responses.
 */
export type RpcClient<D extends AnyDef> = {
  [K in keyof D]: D[K] extends { requestStream: true; responseStream: true }
    ? (requests: AsyncIterable<ReqOf<D[K]>>, options: RpcCallOptions) => AsyncIterable<ResOf<D[K]>>
    : D[K] extends { responseStream: true }
      ? (request: ReqOf<D[K]>, options: RpcCallOptions) => AsyncIterable<ResOf<D[K]>>
      : (request: ReqOf<D[K]>, options: RpcCallOptions) => Promise<ResOf<D[K]>>;
} & { close(): void };

/**
 * A request written for the wire. A number its field's type cannot carry (a JSON integer past
 * 2^31 - 1 for an int32, a negative one for a uint32: the route's schema let it through) is the
 * caller's mistake, a 400, never an internal error (found by the stateful fuzzer).
 */
export function encodeRequest<Req>(serialize: (value: Req) => Buffer, request: Req): Buffer {
  try {
    return serialize(request);
  } catch (err) {
    const m = /^invalid (u?int32|u?int64|s?fixed32|s?fixed64|sint32|sint64|float): (.*)$/.exec((err as Error).message ?? '');
    if (m)
      throw new DomainError(
        'invalid_argument',
        'invalid_request',
        `A number in the request is out of the range its field takes (${m[1]}): ${m[2]!.slice(0, 40)}.`,
      );
    throw err;
  }
}

/**
 * A client for one service, with a default deadline for unary calls. A DomainError thrown by the
 * service arrives here as the same DomainError, so it crosses any number of hops unchanged.
 * Calls go over UnaryChannel (the gRPC wire protocol on node:http2; see unary.ts for why), and
 * so do streams (stream.ts): `for await (const m of client.method(req, opts))` reads one; a
 * `break` cancels it on the server; a failure is thrown after the messages sent before it.
 */
export function createRpcClient<D extends AnyDef>(
  definition: D,
  serviceName: string,
  address: string,
  defaults: { deadlineMs: number },
): RpcClient<D> {
  const channel = new UnaryChannel(address);
  const out: Record<string, unknown> = { close: () => channel.close() };
  for (const [name, method] of Object.entries(definition)) {
    const { path, requestSerialize, responseDeserialize } = method;
    if (method.responseStream && method.requestStream) {
      out[name] = (requests: AsyncIterable<unknown>, options: RpcCallOptions) => {
        const headers: Record<string, string> = { [PRINCIPAL_METADATA_KEY]: options.principalToken };
        if (options.requestId) headers[REQUEST_ID_KEY] = options.requestId;
        const encoded = (async function* () {
          for await (const r of requests) yield encodeRequest(requestSerialize, r);
        })();
        const raw = duplexCall(channel, path, encoded, { headers, deadlineMs: options.deadlineMs, signal: options.signal });
        return typedStream(raw, responseDeserialize, serviceName);
      };
      continue;
    }
    if (method.responseStream) {
      out[name] = (request: unknown, options: RpcCallOptions) => {
        const headers: Record<string, string> = { [PRINCIPAL_METADATA_KEY]: options.principalToken };
        if (options.requestId) headers[REQUEST_ID_KEY] = options.requestId;
        const raw = streamCall(channel, path, encodeRequest(requestSerialize, request), {
          headers,
          deadlineMs: options.deadlineMs,
          signal: options.signal,
        });
        return typedStream(raw, responseDeserialize, serviceName);
      };
      continue;
    }
    // A method of an area service split out of the component's one service (ServiceModule.formerly):
    // a replica of the release before the split knows it only under that service's path.
    const [, service, rpc] = path.split('/');
    const former = service !== serviceName ? `/${serviceName}/${rpc}` : undefined;
    out[name] = async (request: unknown, options: RpcCallOptions) => {
      const headers: Record<string, string> = { [PRINCIPAL_METADATA_KEY]: options.principalToken };
      if (options.requestId) headers[REQUEST_ID_KEY] = options.requestId;
      const message = encodeRequest(requestSerialize, request);
      const call = (at: string) =>
        channel.call(at, message, { headers, deadlineMs: options.deadlineMs ?? defaults.deadlineMs, signal: options.signal });
      try {
        return responseDeserialize(await call(path).catch((err: unknown) => (former && unknownMethod(err) ? call(former) : Promise.reject(err))));
      } catch (err) {
        if (options.signal?.aborted) throw callAborted(err);
        if (err instanceof UnaryCallError) throw fromStatus(err.code, err.details, (k) => err.get(k), serviceName, err);
        throw err;
      }
    };
  }
  return out as RpcClient<D>;
}

/** The server does not know the method (UNIMPLEMENTED from grpc-js itself, not a service's `not_implemented`): nothing ran. */
const unknownMethod = (err: unknown): boolean =>
  err instanceof UnaryCallError && err.code === grpc.status.UNIMPLEMENTED && err.get(ERROR_KIND_KEY) === undefined;

/** A stream's messages decoded, and its failure as the DomainError a unary call would throw. */
async function* typedStream<Res>(
  raw: AsyncGenerator<Buffer>,
  deserialize: (b: Buffer) => Res,
  serviceName: string,
): AsyncGenerator<Res, void, undefined> {
  try {
    for await (const m of raw) yield deserialize(m);
  } catch (err) {
    if (err instanceof UnaryCallError) throw fromStatus(err.code, err.details, (k) => err.get(k), serviceName, err);
    throw err;
  }
}

/** The DomainError of a failed call: the service's own when it sent one, else one per status. */
function fromStatus(
  status: number,
  details: string,
  get: (key: string) => string | Buffer | undefined,
  serviceName: string,
  cause: Error,
): DomainError {
  const kind = get(ERROR_KIND_KEY);
  const code = get(ERROR_CODE_KEY);
  if (isErrorKind(kind) && typeof code === 'string') {
    const raw = get('svc-error-details-bin');
    const extra = Buffer.isBuffer(raw) ? (JSON.parse(raw.toString()) as Record<string, unknown>) : undefined;
    // A code another service of the platform sent: one of the registry's (error-codes.ts).
    return new DomainError(kind, code as ErrorCode, details, extra, { cause });
  }
  const short = serviceName.split('.').slice(-1)[0];
  switch (status) {
    case grpc.status.DEADLINE_EXCEEDED:
      return new DomainError('deadline_exceeded', 'upstream_timeout', `The ${short} did not answer in time.`, undefined, { cause });
    case grpc.status.UNIMPLEMENTED:
      return new DomainError('not_implemented', 'not_implemented', 'This operation is not implemented yet.', undefined, { cause });
    case grpc.status.UNAVAILABLE:
    case grpc.status.CANCELLED:
      return new DomainError('unavailable', 'service_unavailable', `The ${short} is unavailable.`, undefined, { cause });
    default:
      return new DomainError('internal', 'upstream_error', 'An internal service failed.', undefined, { cause });
  }
}

/** A call its caller gave up on (RpcCallOptions.signal). */
export const callAborted = (cause?: unknown) =>
  new DomainError('unavailable', 'call_aborted', 'The call was aborted by its caller.', undefined, { cause });

/** The CallContext of an incoming call: its signed principal verified. */
async function verifyCallPrincipal(
  metadata: grpc.Metadata,
  deps: { signer: PrincipalSigner; log: Logger },
  signal: () => AbortSignal,
): Promise<CallContext> {
  const token = metadata.get(PRINCIPAL_METADATA_KEY)[0];
  if (typeof token !== 'string') {
    throw new DomainError('unauthenticated', 'missing_principal', 'The call carries no principal.');
  }
  const principal = await deps.signer.verify(token);
  const requestId = String(metadata.get(REQUEST_ID_KEY)[0] ?? '');
  let log: Logger | undefined;
  return {
    principal,
    requestId,
    principalToken: token,
    // The request's child logger is made only when something logs (not on every call).
    get log() {
      return (log ??= requestLogger(deps.log, metadata));
    },
    get signal() {
      return signal();
    },
  };
}

/** The logger of one call: the service's, with the caller's request id. */
function requestLogger(base: Logger, metadata: grpc.Metadata): Logger {
  const requestId = metadata.get(REQUEST_ID_KEY)[0];
  return requestId ? base.child({ requestId: String(requestId) }) : base;
}
