import {
  type Bus,
  BusRequestError,
  currentTraceHeaders,
  type EventHandler,
  type JobHandler,
  type RequestHandler,
  rpcSubject,
  subjectMatches,
  type Subscription,
  traced,
} from './bus.js';
import { outsideTransactions } from './sql-guard.js';

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
