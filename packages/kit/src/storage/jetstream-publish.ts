import type * as Nats from 'nats';
import type { MsgHdrs, NatsConnection } from 'nats';

/** How long a publish waits for the stream's acknowledgement (nats.js's JetStream default). */
const PUBLISH_ACK_TIMEOUT_MS = 5000;

export interface JetStreamPublisher {
  /**
   * Publishes to a stream's subject and resolves once the stream has stored it (or found it a
   * duplicate of `msgId` within its window); rejects when the stream refuses it, when no stream
   * takes the subject, or when no acknowledgement comes within the timeout.
   */
  publish(subject: string, data: Uint8Array, msgId: string, headers: Record<string, string>): Promise<void>;
  /** Stops the timer and rejects what still waits. */
  close(): void;
}

/**
 * What `js.publish` does (a request whose answer is the stream's acknowledgement), on one reply
 * subscription for the connection: nats.js's request makes a timer, a promise and an error object
 * (a stack trace) for every message, a measurable part of publishing events under load
 * (docs/trading.md). Here a message costs its entry in a map; one timer sweeps the late ones.
 */
export function createJetStreamPublisher(
  nats: Pick<typeof Nats, 'createInbox' | 'headers'>,
  nc: NatsConnection,
  onError: (err: unknown) => void,
  timeoutMs = PUBLISH_ACK_TIMEOUT_MS,
): JetStreamPublisher {
  const prefix = nats.createInbox();
  // In the order sent, so the sweep stops at the first that is not late.
  const waiting = new Map<string, { resolve: () => void; reject: (err: Error) => void; at: number; subject: string }>();
  let next = 0;
  nc.subscribe(`${prefix}.*`, {
    callback: (err, msg) => {
      if (err) return onError(err);
      const token = msg.subject.slice(prefix.length + 1);
      const w = waiting.get(token);
      if (!w) return; // late: already rejected by the sweep
      waiting.delete(token);
      const refused = refusal(msg.headers, msg.data);
      if (refused) w.reject(new Error(`JetStream did not store the message on ${w.subject}: ${refused}.`));
      else w.resolve();
    },
  });
  const sweep = setInterval(
    () => {
      const late = Date.now() - timeoutMs;
      for (const [token, w] of waiting) {
        if (w.at > late) break;
        waiting.delete(token);
        w.reject(new Error(`JetStream did not acknowledge the message on ${w.subject} within ${timeoutMs} ms.`));
      }
    },
    Math.min(1000, timeoutMs),
  );
  sweep.unref();
  return {
    publish(subject, data, msgId, headers) {
      const h = nats.headers();
      h.set('Nats-Msg-Id', msgId);
      for (const k in headers) h.set(k, headers[k]!);
      const token = (next++).toString(36);
      return new Promise<void>((resolve, reject) => {
        waiting.set(token, { resolve, reject, at: Date.now(), subject });
        try {
          nc.publish(subject, data, { reply: `${prefix}.${token}`, headers: h });
        } catch (err) {
          waiting.delete(token);
          reject(err as Error);
        }
      });
    },
    close() {
      clearInterval(sweep);
      for (const w of waiting.values()) w.reject(new Error('The connection to NATS was closed.'));
      waiting.clear();
    },
  };
}

/** Why an answer to a publish is not an acknowledgement, or undefined when it is one. */
function refusal(headers: MsgHdrs | undefined, data: Uint8Array): string | undefined {
  // A status message: 503 when no stream takes the subject (no responders).
  if (headers?.hasError) return headers.code === 503 ? 'no stream takes this subject' : `status ${headers.code} ${headers.description}`;
  let ack: { stream?: string; error?: { code?: number; err_code?: number; description?: string } };
  try {
    ack = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch {
    return 'the answer is not JSON';
  }
  if (ack.error) return `${ack.error.description ?? 'error'} (${ack.error.err_code ?? ack.error.code})`;
  return ack.stream ? undefined : 'the answer names no stream';
}
