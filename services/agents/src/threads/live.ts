import { type Bus, follow, LiveSignals } from '@svc/kit';

import type { EventRow, ThreadStore } from './store.js';

/** What crosses replicas about a thread: persisted events, a text delta, or its deletion. */
export type LiveSignal =
  { kind: 'events'; events: WireEvent[] } | { kind: 'delta'; runId: string; step: number; afterSeq: number; text: string } | { kind: 'deleted' };

/** An event row as JSON (dates as ISO strings). */
export type WireEvent = Omit<EventRow, 'created_at'> & { created_at: string };

export const toWire = (e: EventRow): WireEvent => ({ ...e, created_at: e.created_at.toISOString() });

/**
 * Live delivery of a thread's events across replicas (kit's LiveSignals, subjects
 * `agents.thread.<id>`): a writer signals after its commit, each process fans out to its watchers.
 */
export class LiveEvents extends LiveSignals<LiveSignal> {
  constructor(bus: () => Promise<Bus>) {
    super(bus, 'agents.thread');
  }

  async published(threadId: string, events: EventRow[]): Promise<void> {
    if (events.length) await this.signal(threadId, { kind: 'events', events: events.map(toWire) });
  }
}

/** Watchers running in this process (each reads the store every few seconds while it lives). */
let running = 0;
/** How many watchers (live event streams being served) run in this process: a leak shows here. */
export const activeWatchers = (): number => running;

/**
 * Every persisted event after `after`, in order, then the live ones as they come (kit's follow:
 * nothing lost or repeated). Text deltas (seq 0) pass through live only, when they follow what the
 * watcher has sent. Ends when the thread is deleted or `signal` aborts.
 */
export async function* watchEvents(
  store: ThreadStore,
  live: LiveEvents,
  threadId: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<{ kind: 'event'; event: WireEvent } | { kind: 'delta'; runId: string; step: number; text: string }> {
  running++;
  try {
    for await (const item of follow<WireEvent, { runId: string; step: number; text: string }, LiveSignal>(live, threadId, after, signal, {
      read: async (from, limit) => (await store.events(threadId, from, limit)).map(toWire),
      alive: async () => Boolean(await store.thread(threadId)),
      meaning: (s: LiveSignal) =>
        s.kind === 'deleted'
          ? { kind: 'end' as const }
          : s.kind === 'delta'
            ? { kind: 'extra' as const, afterSeq: s.afterSeq, item: { runId: s.runId, step: s.step, text: s.text } }
            : { kind: 'events' as const, events: s.events },
    })) {
      yield item.kind === 'event' ? item : { kind: 'delta' as const, ...item.item };
    }
  } finally {
    running--;
  }
}
