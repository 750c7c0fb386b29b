import type { Bus, Subscription } from '@svc/kit';

import type { EventRow, ThreadStore } from './store.js';

/** What crosses replicas about a thread: persisted events, a text delta, or its deletion. */
export type LiveSignal =
  { kind: 'events'; events: WireEvent[] } | { kind: 'delta'; runId: string; step: number; afterSeq: number; text: string } | { kind: 'deleted' };

/** An event row as JSON (dates as ISO strings). */
export type WireEvent = Omit<EventRow, 'created_at'> & { created_at: string };

export const toWire = (e: EventRow): WireEvent => ({ ...e, created_at: e.created_at.toISOString() });

const subject = (threadId: string) => `agents.thread.${threadId}`;

/**
 * Live delivery of a thread's events across replicas: a writer signals after its commit (NATS core,
 * nothing stored: a reader recovers anything missed from the store); each process listens once and
 * fans out to its watchers of that thread.
 */
export class LiveEvents {
  private readonly watchers = new Map<string, Set<(s: LiveSignal) => void>>();
  private sub?: Subscription;

  constructor(private readonly bus: () => Promise<Bus>) {}

  async start(): Promise<void> {
    const bus = await this.bus();
    this.sub = await bus.listen('agents.thread.*', (data, meta) => {
      const threadId = meta.subject.slice(meta.subject.lastIndexOf('.') + 1);
      const set = this.watchers.get(threadId);
      if (set) for (const w of set) w(data as LiveSignal);
    });
  }

  async stop(): Promise<void> {
    await this.sub?.unsubscribe();
  }

  async signal(threadId: string, s: LiveSignal): Promise<void> {
    (await this.bus()).signal(subject(threadId), s);
  }

  async published(threadId: string, events: EventRow[]): Promise<void> {
    if (events.length) await this.signal(threadId, { kind: 'events', events: events.map(toWire) });
  }

  /** Calls `fn` with every signal about the thread until the returned function is called. */
  add(threadId: string, fn: (s: LiveSignal) => void): () => void {
    let set = this.watchers.get(threadId);
    if (!set) this.watchers.set(threadId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (!set.size) this.watchers.delete(threadId);
    };
  }

  get watching(): number {
    let n = 0;
    for (const s of this.watchers.values()) n += s.size;
    return n;
  }
}

/** How often a quiet watcher checks the store (a signal lost on the way, a deletion). */
const RECHECK_MS = 5_000;
const PAGE = 200;

/** Watchers running in this process (each reads the store every RECHECK_MS while it lives). */
let running = 0;
/** How many watchers (live event streams being served) run in this process: a leak shows here. */
export const activeWatchers = (): number => running;

/**
 * Every persisted event after `after`, in order, then the live ones as they come: the watcher
 * listens before it reads the store, skips what it has already sent, and reads the store again
 * when a seq is missing, so nothing is lost or repeated. Text deltas (seq 0) pass through live
 * only. Ends when the thread is deleted or `signal` aborts.
 */
export async function* watchEvents(
  store: ThreadStore,
  live: LiveEvents,
  threadId: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<{ kind: 'event'; event: WireEvent } | { kind: 'delta'; runId: string; step: number; text: string }> {
  const queue: LiveSignal[] = [];
  let wake: (() => void) | undefined;
  const remove = live.add(threadId, (s) => {
    queue.push(s);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  let last = after;
  running++;
  try {
    const catchUp = async function* () {
      for (;;) {
        const page = await store.events(threadId, last, PAGE);
        for (const e of page) {
          last = e.seq;
          yield { kind: 'event' as const, event: toWire(e) };
        }
        if (page.length < PAGE) return;
      }
    };
    yield* catchUp();
    while (!signal.aborted) {
      while (queue.length && !signal.aborted) {
        const s = queue.shift()!;
        if (s.kind === 'deleted') return;
        if (s.kind === 'delta') {
          // A delta of a message already persisted is stale.
          if (s.afterSeq >= last) yield { kind: 'delta' as const, runId: s.runId, step: s.step, text: s.text };
          continue;
        }
        for (const e of s.events) {
          if (e.seq <= last) continue;
          if (e.seq === last + 1) {
            last = e.seq;
            yield { kind: 'event' as const, event: e };
          } else yield* catchUp();
        }
      }
      if (signal.aborted) return;
      const timedOut = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), RECHECK_MS);
        wake = () => {
          clearTimeout(timer);
          resolve(false);
        };
      });
      wake = undefined;
      if (timedOut) {
        if (!(await store.thread(threadId))) return;
        yield* catchUp();
      }
    }
  } finally {
    running--;
    signal.removeEventListener('abort', onAbort);
    remove();
  }
}
