import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The event shape on the wire (DESIGN §5). */
export interface EventEnvelope<D = unknown> {
  id: string;
  type: string;
  occurredAt: string;
  accountId: string;
  data: D;
}

export type EventHandler = (event: EventEnvelope, meta: { subject: string }) => Promise<void>;

export interface Subscription {
  unsubscribe(): Promise<void>;
}

export interface SubscribeOptions {
  /**
   * With a durable name, each event is handled once by one replica of the subscribing service
   * (a JetStream durable consumer, redelivered until acked). Without, every replica gets every
   * event as it happens (a broadcast, for cache invalidation).
   */
  durable?: string;
}

/**
 * Domain events. Subjects are given without the namespace (`keys.key.revoked`); the bus puts
 * them under `<namespace>.` (`svc.keys.key.revoked` by default).
 */
export interface Bus {
  readonly kind: 'memory' | 'nats';
  publish(subject: string, event: EventEnvelope, headers?: Record<string, string>): Promise<void>;
  subscribe(subject: string, handler: EventHandler, options?: SubscribeOptions): Promise<Subscription>;
  /**
   * Request/reply (NATS core, not JetStream): sends `data` to one responder of `subject` and
   * resolves with its answer. Rejects with BusRequestError `no_responders` at once when nobody
   * listens, `timeout` when the responder does not answer within timeoutMs, `responder_failed`
   * when its handler threw. Subjects live outside the event stream (`<namespace>_rpc.<subject>`),
   * so a request is never stored or answered by JetStream.
   */
  request(subject: string, data: unknown, timeoutMs: number): Promise<unknown>;
  /**
   * Answers requests on `subject` (wildcards allowed). With several responders on one subject
   * (replicas), each request goes to one of them.
   */
  respond(subject: string, handler: RequestHandler): Promise<Subscription>;
  /**
   * Live signals (NATS core, never stored): every listener of a matching subject, on every
   * replica, gets `data` if it is listening now; nothing is kept for one that is not. For what a
   * reader can recover from the store (a thread's events) or may lose (a text delta).
   */
  signal(subject: string, data: unknown): void;
  listen(subject: string, handler: (data: unknown, meta: { subject: string }) => void): Promise<Subscription>;
  /**
   * A work queue (a JetStream work-queue stream, `<namespace>_work.<queue>`): each job goes to one
   * worker, is redelivered when the worker does not finish it (it crashed, or its handler threw)
   * and is removed once done. A job id dedupes enqueues within two minutes.
   */
  enqueue(queue: string, id: string, data: unknown): Promise<void>;
  work(queue: string, handler: JobHandler, options?: WorkOptions): Promise<Subscription>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Handles one job. Resolving finishes it; throwing hands it back for another try (after a short
 * wait). `working()` tells the queue the job is still in hand (a long job calls it more often than
 * `ackWaitMs`); a worker that stops calling it loses the job to another after `ackWaitMs`.
 */
export type JobHandler = (data: unknown, job: { id: string; attempt: number; working(): void }) => Promise<void>;

export interface WorkOptions {
  /** Jobs in hand at once per worker (default 4). */
  concurrency?: number;
  /** How long a job stays with a worker that gives no sign of life (default 15 s). */
  ackWaitMs?: number;
}

export type RequestHandler = (data: unknown, meta: { subject: string }) => Promise<unknown>;

export type BusRequestErrorCode = 'no_responders' | 'timeout' | 'responder_failed';

/** Why a bus request got no answer. */
export class BusRequestError extends Error {
  override name = 'BusRequestError';
  constructor(
    readonly code: BusRequestErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Reply envelope of request/reply: the handler's answer, or why it failed. */
export type ReplyEnvelope = { ok: true; data: unknown } | { ok: false; error: string };

export const rpcSubject = (namespace: string, subject: string) => `${namespace}_rpc.${subject}`;

const tracer = trace.getTracer('svc-bus');

/** Runs a handler inside a consumer span that continues the producer's trace. */
export function traced(subject: string, headers: Record<string, string>, fn: () => Promise<void>): Promise<void> {
  const parent = propagation.extract(context.active(), headers);
  return context.with(parent, () =>
    tracer.startActiveSpan(
      `${subject} process`,
      { kind: SpanKind.CONSUMER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject } },
      async (span) => {
        try {
          await fn();
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw err;
        } finally {
          span.end();
        }
      },
    ),
  );
}

/** The trace context of the current call, to carry in message headers. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
