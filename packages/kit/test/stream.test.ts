import * as grpc from '@grpc/grpc-js';
import { context, propagation, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import {
  bindService,
  createLogger,
  createRpcClient,
  DomainError,
  type GrpcServerHandle,
  type Handlers,
  PrincipalSigner,
  type RpcClient,
  startGrpcServer,
  streamCall,
  type StreamCallContext,
  UnaryCallError,
  UnaryChannel,
} from '@svc/kit';

// Server-streaming calls through the kit, both ends real: bindService on a grpc-js server, the
// kit's typed client over its own HTTP/2 channel. The service is written here by hand, in the
// shape ts-proto generates (JSON instead of protobuf on the wire: only the framing matters here).
interface TicksRequest {
  count: number;
  size?: number;
}
interface Tick {
  n: number;
  account: string;
  requestId: string;
  pad?: string;
}
const json = <T>() => ({ serialize: (v: T) => Buffer.from(JSON.stringify(v)), deserialize: (b: Buffer) => JSON.parse(b.toString()) as T });
const req = json<TicksRequest>();
const tick = json<Tick>();
const TickService = {
  ticks: {
    path: '/test.stream.v1.TickService/Ticks' as const,
    requestStream: false as const,
    responseStream: true as const,
    requestSerialize: req.serialize,
    requestDeserialize: req.deserialize,
    responseSerialize: tick.serialize,
    responseDeserialize: tick.deserialize,
  },
  echo: {
    path: '/test.stream.v1.TickService/Echo' as const,
    requestStream: false as const,
    responseStream: false as const,
    requestSerialize: req.serialize,
    requestDeserialize: req.deserialize,
    responseSerialize: req.serialize,
    responseDeserialize: req.deserialize,
  },
};
type Def = typeof TickService;

const SECRET = 's'.repeat(40);
const signer = new PrincipalSigner(SECRET);
const log = createLogger({ level: 'silent', service: 'test' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Each test says what the server's generator does.
let produce: (request: TicksRequest, ctx: StreamCallContext) => AsyncIterable<Tick>;
const started: TicksRequest[] = [];
const handlers: Handlers<Def> = {
  ticks(request, ctx) {
    started.push(request);
    return produce(request, ctx);
  },
  async echo(request) {
    return request;
  },
};
async function* counting(request: TicksRequest, ctx: StreamCallContext): AsyncGenerator<Tick> {
  for (let n = 0; n < request.count; n++) yield { n, account: ctx.principal.accountId, requestId: ctx.requestId };
}

// The metadata each streaming call arrived with, as grpc-js hands it to the kit's handler.
const arrived: grpc.Metadata[] = [];
let server: GrpcServerHandle;
let client: RpcClient<Def>;
let token: string;

beforeAll(async () => {
  const implementation = bindService(TickService, handlers, { signer, log });
  const served = implementation.ticks as grpc.handleServerStreamingCall<unknown, unknown>;
  implementation.ticks = (call: grpc.ServerWritableStream<unknown, unknown>) => {
    arrived.push(call.metadata);
    served(call);
  };
  server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    serviceName: 'test.stream.v1.TickService',
    services: [{ definition: TickService as unknown as grpc.ServiceDefinition, implementation }],
  });
  server.setServing('SERVING');
  client = createRpcClient(TickService, 'test.stream.v1.TickService', server.address, { deadlineMs: 2000 });
  token = (await signer.sign({ kind: 'human', userId: 'acct_me', accountId: 'acct_me', channel: 'api' })).token;
});
afterAll(async () => {
  client.close();
  await server.shutdown(100);
});

/** Reads a stream to its end: the messages, then the DomainError it failed with (if it did). */
async function drain<T>(stream: AsyncIterable<T>): Promise<{ messages: T[]; error?: string; err?: DomainError }> {
  const messages: T[] = [];
  try {
    for await (const m of stream) messages.push(m);
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    const e = err as DomainError;
    return { messages, error: `${e.kind}/${e.code}: ${e.message}`, err: e };
  }
  return { messages };
}

/** A promise resolved by the server generator's `finally`, with whether its signal was aborted then. */
function finallyProbe() {
  let ran!: (aborted: boolean) => void;
  const promise = new Promise<boolean>((r) => (ran = r));
  return { ran, promise };
}

test('messages arrive in order with the principal and request id; an empty stream just ends', async () => {
  produce = counting;
  const { messages, error } = await drain(client.ticks({ count: 200 }, { principalToken: token, requestId: 'req_s1' }));
  expect(error).toBeUndefined();
  expect(messages.map((m) => m.n)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  expect(messages[0]).toEqual({ n: 0, account: 'acct_me', requestId: 'req_s1' });
  expect(await drain(client.ticks({ count: 0 }, { principalToken: token }))).toEqual({ messages: [] });
  // Unary methods of the same client are unchanged.
  await expect(client.echo({ count: 7 }, { principalToken: token })).resolves.toEqual({ count: 7 });
});

test('a slow reader holds the server back (backpressure) instead of buffering the stream', async () => {
  const total = 10_000;
  let produced = 0;
  produce = async function* (request, ctx) {
    for (let n = 0; n < request.count; n++) {
      produced = n + 1;
      yield { n, account: ctx.principal.accountId, requestId: '', pad: 'x'.repeat(request.size ?? 0) };
    }
  };
  const stream = client.ticks({ count: total, size: 1024 }, { principalToken: token })[Symbol.asyncIterator]();
  for (let i = 0; i < 3; i++) expect((await stream.next()).value?.n).toBe(i);
  // The reader stops. Wait until the server stops producing too (or has produced everything).
  let last = -1;
  while (produced !== last && produced < total) {
    last = produced;
    await sleep(200);
  }
  // ~10 MiB in all; what is in flight is bounded by the HTTP/2 windows and a few small buffers.
  expect(produced).toBeLessThan(1000);
  // Meanwhile the connection still serves other calls.
  await expect(client.echo({ count: 1 }, { principalToken: token })).resolves.toEqual({ count: 1 });
  let next = 3;
  for (let r = await stream.next(); !r.done; r = await stream.next()) expect(r.value.n).toBe(next++);
  expect(next).toBe(total);
}, 120_000); // 10,000 messages read one by one: seconds, far more on a loaded machine

test('a reader that breaks out cancels the call: the server generator stops and its finally runs', async () => {
  // A generator that yields as fast as it may...
  const busy = finallyProbe();
  produce = async function* (_request, ctx) {
    try {
      for (let n = 0; ; n++) yield { n, account: '', requestId: '' };
    } finally {
      busy.ran(ctx.signal.aborted);
    }
  };
  let seen = 0;
  for await (const m of client.ticks({ count: 0 }, { principalToken: token })) {
    expect(m.n).toBe(seen++);
    if (seen === 3) break;
  }
  expect(await busy.promise).toBe(true);

  // ...and one waiting for an event that never comes, which passes its signal to the wait.
  const waiting = finallyProbe();
  produce = async function* (_request, ctx) {
    try {
      yield { n: 0, account: '', requestId: '' };
      await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    } finally {
      waiting.ran(ctx.signal.aborted);
    }
  };
  for await (const m of client.ticks({ count: 0 }, { principalToken: token })) {
    expect(m.n).toBe(0);
    break;
  }
  expect(await waiting.promise).toBe(true);
});

test('a stream past its deadline fails as deadline_exceeded after the messages before it; the server stops', async () => {
  const stopped = finallyProbe();
  produce = async function* (_request, ctx) {
    try {
      yield { n: 0, account: '', requestId: '' };
      await sleep(1000);
      yield { n: 1, account: '', requestId: '' };
    } finally {
      stopped.ran(ctx.signal.aborted);
    }
  };
  const { messages, error } = await drain(client.ticks({ count: 0 }, { principalToken: token, deadlineMs: 300 }));
  expect(messages.map((m) => m.n)).toEqual([0]);
  expect(error).toBe('deadline_exceeded/upstream_timeout: The TickService did not answer in time.');
  // The generator was asleep, not at a yield: it is stopped when it next yields.
  expect(await stopped.promise).toBe(true);
});

test('a DomainError thrown mid-stream arrives with its code and details after the messages before it', async () => {
  produce = async function* (request, ctx) {
    yield* counting(request, ctx);
    throw new DomainError('not_found', 'thread_not_found', 'Thread not found.', { threadId: 'thr_1' });
  };
  const failed = await drain(client.ticks({ count: 3 }, { principalToken: token }));
  expect(failed.messages.map((m) => m.n)).toEqual([0, 1, 2]);
  expect(failed.error).toBe('not_found/thread_not_found: Thread not found.');
  expect(failed.err?.details).toEqual({ threadId: 'thr_1' });

  produce = async function* (request, ctx) {
    yield* counting(request, ctx);
    throw new Error('database password is hunter2');
  };
  const crashed = await drain(client.ticks({ count: 2 }, { principalToken: token }));
  expect(crashed.messages.map((m) => m.n)).toEqual([0, 1]);
  expect(crashed.error).toBe('internal/internal_error: Internal error.');
});

test('a stream without a principal, or with a forged one, is refused before the handler runs', async () => {
  produce = counting;
  const before = started.length;
  const missing = await drain(client.ticks({ count: 3 }, { principalToken: '' }));
  expect(missing).toMatchObject({ messages: [], error: expect.stringMatching(/^unauthenticated\//) });
  const forged = (await new PrincipalSigner('z'.repeat(40)).sign({ kind: 'system', accountId: 'system', channel: 'internal' })).token;
  expect(await drain(client.ticks({ count: 3 }, { principalToken: forged }))).toEqual({
    messages: [],
    error: 'unauthenticated/invalid_principal: The call carries no valid principal.',
    err: expect.any(DomainError),
  });
  expect(started.length).toBe(before);
});

test('messages that span HTTP/2 frames arrive whole; one over the size limit ends the stream', async () => {
  produce = async function* () {
    for (const size of [40_000, 0, 200_000]) yield { n: size, account: '', requestId: '', pad: 'y'.repeat(size) };
  };
  const channel = new UnaryChannel(server.address, 100_000);
  const sizes: number[] = [];
  let failure: unknown;
  try {
    const raw = streamCall(channel, TickService.ticks.path, req.serialize({ count: 0 }), { headers: { 'x-svc-principal': token } });
    for await (const m of raw) {
      const t = tick.deserialize(m);
      expect(t.pad).toBe('y'.repeat(t.n));
      sizes.push(t.n);
    }
  } catch (err) {
    failure = err;
  }
  channel.close();
  expect(sizes).toEqual([40_000, 0]);
  expect(failure).toBeInstanceOf(UnaryCallError);
  expect((failure as UnaryCallError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
});

test('a stream open when its server rotates the connection ends as unavailable; a new call goes through', async () => {
  // startGrpcServer rotates after 5 minutes (+30 s of grace); the same on a short clock.
  const rotating = new grpc.Server({ 'grpc.max_connection_age_ms': 500, 'grpc.max_connection_age_grace_ms': 200 });
  rotating.addService(TickService as unknown as grpc.ServiceDefinition, bindService(TickService, handlers, { signer, log }));
  const port = await new Promise<number>((resolve, reject) =>
    rotating.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const c = createRpcClient(TickService, 'test.stream.v1.TickService', `127.0.0.1:${port}`, { deadlineMs: 2000 });
  const stopped = finallyProbe();
  produce = async function* (_request, ctx) {
    try {
      yield { n: 0, account: '', requestId: '' };
      await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    } finally {
      stopped.ran(ctx.signal.aborted);
    }
  };
  const cut = await drain(c.ticks({ count: 0 }, { principalToken: token }));
  expect(cut.messages.map((m) => m.n)).toEqual([0]);
  expect(cut.error).toBe('unavailable/service_unavailable: The TickService is unavailable.');
  expect(await stopped.promise).toBe(true);
  produce = counting;
  expect((await drain(c.ticks({ count: 3 }, { principalToken: token }))).messages.map((m) => m.n)).toEqual([0, 1, 2]);
  c.close();
  rotating.forceShutdown();
});

test('trace context reaches the server; the client span covers the whole stream', async () => {
  // What the tracing SDK sets up (tracing/register.ts), with spans kept in memory.
  const exporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  try {
    produce = counting;
    const parent = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.SAMPLED };
    // The call is made inside the caller's context and read outside it: the context is the one at the call.
    const stream = context.with(trace.setSpanContext(context.active(), parent), () => client.ticks({ count: 5 }, { principalToken: token }));
    const read: number[] = [];
    for await (const m of stream) {
      read.push(m.n);
      // Still streaming: the client span has not ended.
      expect(exporter.getFinishedSpans()).toEqual([]);
    }
    expect(read).toEqual([0, 1, 2, 3, 4]);

    const [span] = exporter.getFinishedSpans();
    expect(span).toMatchObject({ name: 'grpc.test.stream.v1.TickService/Ticks', kind: SpanKind.CLIENT });
    expect(span!.spanContext().traceId).toBe(parent.traceId);
    expect(span!.parentSpanContext?.spanId).toBe(parent.spanId);
    expect(span!.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'Ticks', 'rpc.grpc.status_code': 0 });
    // The server got the trace context with the client span as the parent of what it does.
    const traceparent = arrived[arrived.length - 1]!.get('traceparent')[0];
    expect(traceparent).toBe(`00-${parent.traceId}-${span!.spanContext().spanId}-01`);
  } finally {
    trace.disable();
    propagation.disable();
    context.disable();
  }
});
