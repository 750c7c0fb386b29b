import type * as Nats from 'nats';
import type { JetStreamClient, NatsConnection } from 'nats';

import { observeConsumer } from '../tracing/metrics.js';
import { type Bus, BusRequestError, currentTraceHeaders, type EventEnvelope, type ReplyEnvelope, rpcSubject, traced } from './bus.js';
import { createJetStreamPublisher } from './jetstream-publish.js';

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
