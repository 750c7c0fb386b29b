import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type * as Nats from 'nats';
import type { JetStreamClient, NatsConnection } from 'nats';

import { observeConsumer } from '../tracing/metrics.js';
import { createJetStreamPublisher } from './jetstream-publish.js';
import { outsideTransactions } from './sql-guard.js';

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
type ReplyEnvelope = { ok: true; data: unknown } | { ok: false; error: string };

const rpcSubject = (namespace: string, subject: string) => `${namespace}_rpc.${subject}`;

const tracer = trace.getTracer('svc-bus');

/** Runs a handler inside a consumer span that continues the producer's trace. */
function traced(subject: string, headers: Record<string, string>, fn: () => Promise<void>): Promise<void> {
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

function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

/** In-process bus for the embedded stack: same semantics, including dedupe by event id. */
export function createMemoryBus(namespace: string, onError: (err: unknown) => void = () => {}): Bus {
  const subs = new Set<{ pattern: string; handler: EventHandler; durable?: string }>();
  const responders = new Set<{ pattern: string; handler: RequestHandler }>();
  const listeners = new Set<{ pattern: string; handler: (data: unknown, meta: { subject: string }) => void }>();
  const queues = new Map<string, MemoryQueue>();
  const queue = (name: string) => {
    let q = queues.get(name);
    if (!q) queues.set(name, (q = new MemoryQueue(onError)));
    return q;
  };
  const seen = new Set<string>();
  return {
    kind: 'memory',
    async publish(subject, event, headers = currentTraceHeaders()) {
      if (seen.has(event.id)) return;
      seen.add(event.id);
      if (seen.size > 50_000) seen.clear();
      const full = `${namespace}.${subject}`;
      const durables = new Set<string>();
      for (const sub of subs) {
        if (!subjectMatches(sub.pattern, full)) continue;
        if (sub.durable) {
          if (durables.has(sub.durable)) continue; // one delivery per durable consumer
          durables.add(sub.durable);
        }
        // Delivered as work of its own: not inside a transaction the publisher may be in.
        const deliver = (attempt: number): void => {
          outsideTransactions(() =>
            setImmediate(() => {
              traced(full, headers, () => sub.handler(event, { subject: full })).catch((err) => {
                onError(err);
                if (sub.durable && attempt < 5) setTimeout(() => deliver(attempt + 1), 100 * 2 ** attempt);
              });
            }),
          );
        };
        deliver(0);
      }
    },
    async subscribe(subject, handler, options = {}) {
      const sub = { pattern: `${namespace}.${subject}`, handler, durable: options.durable };
      subs.add(sub);
      return { unsubscribe: async () => void subs.delete(sub) };
    },
    async request(subject, data, timeoutMs) {
      const full = rpcSubject(namespace, subject);
      const matching = [...responders].filter((r) => subjectMatches(r.pattern, full));
      if (!matching.length) throw new BusRequestError('no_responders', `No responder for ${subject}.`);
      const r = matching[Math.floor(Math.random() * matching.length)]!;
      // A copy, as over the wire: neither side can change the other's objects.
      const payload = data === undefined ? undefined : JSON.parse(JSON.stringify(data));
      const headers = currentTraceHeaders();
      let timer: NodeJS.Timeout | undefined;
      const answer = new Promise<unknown>((resolve, reject) => {
        setImmediate(() => {
          let out: unknown;
          traced(full, headers, async () => {
            out = await r.handler(payload, { subject: full });
          }).then(
            () => resolve(out === undefined ? null : JSON.parse(JSON.stringify(out))),
            (err) => reject(new BusRequestError('responder_failed', (err as Error)?.message ?? 'The responder failed.')),
          );
        });
      });
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new BusRequestError('timeout', `No answer on ${subject} within ${timeoutMs} ms.`)), timeoutMs);
      });
      try {
        return await Promise.race([answer, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async respond(subject, handler) {
      const r = { pattern: rpcSubject(namespace, subject), handler };
      responders.add(r);
      return { unsubscribe: async () => void responders.delete(r) };
    },
    signal(subject, data) {
      const full = `${namespace}_live.${subject}`;
      const payload = JSON.stringify(data ?? null);
      for (const l of listeners) {
        if (!subjectMatches(l.pattern, full)) continue;
        outsideTransactions(() =>
          setImmediate(() => {
            try {
              l.handler(JSON.parse(payload), { subject: full });
            } catch (err) {
              onError(err);
            }
          }),
        );
      }
    },
    async listen(subject, handler) {
      const l = { pattern: `${namespace}_live.${subject}`, handler };
      listeners.add(l);
      return { unsubscribe: async () => void listeners.delete(l) };
    },
    async enqueue(name, id, data) {
      queue(name).push(id, JSON.parse(JSON.stringify(data ?? null)));
    },
    async work(name, handler, options = {}) {
      return queue(name).addWorker(handler, options.concurrency ?? 4);
    },
    async ping() {},
    async close() {
      subs.clear();
      responders.clear();
      listeners.clear();
      for (const q of queues.values()) q.close();
    },
  };
}

/** NATS JetStream: one stream per namespace holding `<namespace>.>`, dedupe by Nats-Msg-Id. */
export async function createNatsBus(url: string, namespace: string, onError: (err: unknown) => void = () => {}): Promise<Bus> {
  // Loaded here, not at the top: the embedded stack, with its in-process bus, never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const nats = require('nats') as typeof Nats;
  const { AckPolicy, connect, DeliverPolicy, ErrorCode, headers: natsHeaders, RetentionPolicy } = nats;
  // noAsyncTraces: the client would otherwise capture two stack traces per request (a JetStream
  // publish is one), a measurable part of publishing events under load (docs/trading.md).
  const nc: NatsConnection = await connect({ servers: url, name: `svc-${process.pid}`, maxReconnectAttempts: -1, noAsyncTraces: true });
  const jsm = await nc.jetstreamManager();
  const stream = namespace.toUpperCase();
  const config = {
    name: stream,
    subjects: [`${namespace}.>`],
    retention: RetentionPolicy.Limits,
    max_age: 7 * 24 * 3600 * 1e9,
    duplicate_window: 120 * 1e9,
  };
  try {
    await jsm.streams.info(stream);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (err) {
      // Another replica created it first.
      await jsm.streams.info(stream).catch(() => Promise.reject(err));
    }
  }
  const js: JetStreamClient = nc.jetstream();
  const publisher = createJetStreamPublisher(nats, nc, onError);
  // The work queues' stream, made on first use: a job is removed once a worker acks it.
  const workName = `${stream}_WORK`;
  let workReady: Promise<void> | undefined;
  const workStream = () =>
    (workReady ??= (async () => {
      const cfg = { name: workName, subjects: [`${namespace}_work.>`], retention: RetentionPolicy.Workqueue, duplicate_window: 120 * 1e9 };
      try {
        await jsm.streams.info(workName);
      } catch {
        await jsm.streams.add(cfg).catch(async (err) => {
          await jsm.streams.info(workName).catch(() => Promise.reject(err));
        });
      }
    })().catch((err) => {
      workReady = undefined;
      throw err;
    }));
  const encode = (e: EventEnvelope) => Buffer.from(JSON.stringify(e));
  const decode = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString('utf8')) as EventEnvelope;
  const toRecord = (h: ReturnType<typeof natsHeaders> | undefined) => {
    const out: Record<string, string> = {};
    if (h) for (const [k, v] of h) out[k.toLowerCase()] = v[0] ?? '';
    return out;
  };
  const encodeJson = (v: unknown) => Buffer.from(JSON.stringify(v === undefined ? null : v));
  const decodeJson = (b: Uint8Array): unknown => (b.length ? JSON.parse(Buffer.from(b).toString('utf8')) : null);
  return {
    kind: 'nats',
    async publish(subject, event, headers = currentTraceHeaders()) {
      await publisher.publish(`${namespace}.${subject}`, encode(event), event.id, headers);
    },
    async subscribe(subject, handler, options = {}) {
      const full = `${namespace}.${subject}`;
      if (!options.durable) {
        const sub = nc.subscribe(full, {
          callback: (err, msg) => {
            if (err) return onError(err);
            traced(msg.subject, toRecord(msg.headers), () => handler(decode(msg.data), { subject: msg.subject })).catch(onError);
          },
        });
        return { unsubscribe: async () => sub.unsubscribe() };
      }
      const durable = `${options.durable}`.replace(/[^A-Za-z0-9_-]/g, '_');
      try {
        await jsm.consumers.info(stream, durable);
      } catch {
        await jsm.consumers.add(stream, {
          durable_name: durable,
          filter_subject: full,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.New,
          ack_wait: 30 * 1e9,
          max_deliver: 20,
        });
      }
      const consumer = await js.consumers.get(stream, durable);
      const messages = await consumer.consume({ max_messages: 64 });
      const unobserve = observeConsumer(stream, durable, async () => {
        const i = await jsm.consumers.info(stream, durable);
        return i.num_pending + i.num_ack_pending;
      });
      void (async () => {
        for await (const msg of messages) {
          try {
            await traced(msg.subject, toRecord(msg.headers), () => handler(decode(msg.data), { subject: msg.subject }));
            msg.ack();
          } catch (err) {
            onError(err);
            msg.nak(1000);
          }
        }
      })();
      return {
        unsubscribe: async () => {
          unobserve();
          await messages.close();
        },
      };
    },
    async request(subject, data, timeoutMs) {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(currentTraceHeaders())) h.set(k, v);
      let msg;
      try {
        msg = await nc.request(rpcSubject(namespace, subject), encodeJson(data), { timeout: timeoutMs, headers: h });
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === ErrorCode.NoResponders) throw new BusRequestError('no_responders', `No responder for ${subject}.`);
        if (code === ErrorCode.Timeout) throw new BusRequestError('timeout', `No answer on ${subject} within ${timeoutMs} ms.`);
        throw err;
      }
      let reply: ReplyEnvelope | null = null;
      try {
        reply = decodeJson(msg.data) as ReplyEnvelope | null;
      } catch {
        // not JSON: handled below
      }
      if (!reply || typeof reply !== 'object' || !('ok' in reply)) {
        throw new BusRequestError('responder_failed', 'The responder sent an answer that is not a reply envelope.');
      }
      if (!reply.ok) throw new BusRequestError('responder_failed', reply.error);
      return reply.data ?? null;
    },
    async respond(subject, handler) {
      // A queue group: with several responders on a subject, each request goes to one of them.
      const sub = nc.subscribe(rpcSubject(namespace, subject), {
        queue: 'responders',
        callback: (err, msg) => {
          if (err) return onError(err);
          let out: unknown;
          traced(msg.subject, toRecord(msg.headers), async () => {
            out = await handler(decodeJson(msg.data), { subject: msg.subject });
          }).then(
            () => msg.respond(encodeJson({ ok: true, data: out ?? null } satisfies ReplyEnvelope)),
            (e) => {
              onError(e);
              msg.respond(encodeJson({ ok: false, error: (e as Error)?.message ?? 'The responder failed.' } satisfies ReplyEnvelope));
            },
          );
        },
      });
      return { unsubscribe: async () => sub.unsubscribe() };
    },
    signal(subject, data) {
      nc.publish(`${namespace}_live.${subject}`, encodeJson(data));
    },
    async listen(subject, handler) {
      const sub = nc.subscribe(`${namespace}_live.${subject}`, {
        callback: (err, msg) => {
          if (err) return onError(err);
          try {
            handler(decodeJson(msg.data), { subject: msg.subject });
          } catch (e) {
            onError(e);
          }
        },
      });
      return { unsubscribe: async () => sub.unsubscribe() };
    },
    async enqueue(name, id, data) {
      await workStream();
      // A job continues the trace of the request that made it.
      await publisher.publish(`${namespace}_work.${name}`, encodeJson(data), id, currentTraceHeaders());
    },
    async work(name, handler, options = {}) {
      await workStream();
      const durable = `work_${name}`.replace(/[^A-Za-z0-9_-]/g, '_');
      const ackWaitMs = options.ackWaitMs ?? 15_000;
      try {
        await jsm.consumers.info(workName, durable);
      } catch {
        try {
          await jsm.consumers.add(workName, {
            durable_name: durable,
            filter_subject: `${namespace}_work.${name}`,
            ack_policy: AckPolicy.Explicit,
            ack_wait: ackWaitMs * 1e6,
            max_deliver: -1,
          });
        } catch (err) {
          await jsm.consumers.info(workName, durable).catch(() => Promise.reject(err));
        }
      }
      const consumer = await js.consumers.get(workName, durable);
      const concurrency = options.concurrency ?? 4;
      const messages = await consumer.consume({ max_messages: concurrency });
      const unobserve = observeConsumer(workName, durable, async () => {
        const i = await jsm.consumers.info(workName, durable);
        return i.num_pending + i.num_ack_pending;
      });
      let running = 0;
      const idle: (() => void)[] = [];
      void (async () => {
        for await (const msg of messages) {
          // No more jobs in hand than `concurrency`: wait for one to finish before taking the next.
          while (running >= concurrency) await new Promise<void>((r) => idle.push(r));
          running++;
          const id = msg.headers?.get('Nats-Msg-Id') || `${msg.info.streamSequence}`;
          void traced(msg.subject, toRecord(msg.headers), () =>
            handler(decodeJson(msg.data), { id, attempt: msg.info.deliveryCount, working: () => msg.working() }),
          )
            .then(
              () => msg.ack(),
              (err) => {
                onError(err);
                msg.nak(1000);
              },
            )
            .finally(() => {
              running--;
              idle.shift()?.();
            });
        }
      })();
      return {
        unsubscribe: async () => {
          unobserve();
          await messages.close();
        },
      };
    },
    async ping() {
      await nc.flush();
      if (nc.isClosed()) throw new Error('NATS connection closed');
    },
    async close() {
      await nc.drain().catch(() => nc.close());
      publisher.close();
    },
  };
}

/** The embedded work queue: jobs in memory, each to one worker, handed back when its handler throws. */
class MemoryQueue {
  private readonly jobs: { id: string; data: unknown; attempt: number }[] = [];
  private readonly ids = new Map<string, number>();
  private readonly workers = new Set<{ handler: JobHandler; free: number }>();

  constructor(private readonly onError: (err: unknown) => void) {}

  push(id: string, data: unknown, attempt = 1): void {
    const at = this.ids.get(id);
    if (attempt === 1 && at !== undefined && Date.now() - at < 120_000) return;
    this.ids.set(id, Date.now());
    if (this.ids.size > 50_000) this.ids.clear();
    this.jobs.push({ id, data, attempt });
    // The job runs as work of its own, not inside a transaction its enqueuer may be in.
    outsideTransactions(() => setImmediate(() => this.pump()));
  }

  addWorker(handler: JobHandler, concurrency: number): Subscription {
    const w = { handler, free: concurrency };
    this.workers.add(w);
    setImmediate(() => this.pump());
    return { unsubscribe: async () => void this.workers.delete(w) };
  }

  close(): void {
    this.workers.clear();
    this.jobs.length = 0;
  }

  private pump(): void {
    for (const w of this.workers) {
      while (w.free > 0 && this.jobs.length) {
        const job = this.jobs.shift()!;
        w.free--;
        w.handler(job.data, { id: job.id, attempt: job.attempt, working: () => {} })
          .catch((err) => {
            this.onError(err);
            setTimeout(() => this.push(job.id, job.data, job.attempt + 1), 1000).unref();
          })
          .finally(() => {
            w.free++;
            setImmediate(() => this.pump());
          });
      }
    }
  }
}
