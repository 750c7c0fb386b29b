import type { Bus, Subscription } from './storage/bus.js';

/**
 * Live delivery of numbered event sequences across replicas (a thread's events, an account's order
 * updates): a writer signals after its commit (NATS core, nothing stored: a reader recovers anything
 * missed from the store); each process listens once per prefix and fans the signals out to its
 * watchers of that key. `follow` turns a store and these signals into one ordered stream.
 */
export class LiveSignals<S> {
  private readonly watchers = new Map<string, Set<(s: S) => void>>();
  private sub?: Subscription;

  /** Subjects are `<prefix>.<key>`; a key holds no dot. */
  constructor(
    private readonly bus: () => Promise<Bus>,
    private readonly prefix: string,
  ) {}

  async start(): Promise<void> {
    const bus = await this.bus();
    this.sub = await bus.listen(`${this.prefix}.*`, (data, meta) => {
      const key = meta.subject.slice(meta.subject.lastIndexOf('.') + 1);
      const set = this.watchers.get(key);
      if (set) for (const w of set) w(data as S);
    });
  }

  async stop(): Promise<void> {
    await this.sub?.unsubscribe();
  }

  async signal(key: string, s: S): Promise<void> {
    (await this.bus()).signal(`${this.prefix}.${key}`, s);
  }

  /** Calls `fn` with every signal about `key` until the returned function is called. */
  add(key: string, fn: (s: S) => void): () => void {
    let set = this.watchers.get(key);
    if (!set) this.watchers.set(key, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (!set.size) this.watchers.delete(key);
    };
  }

  get watching(): number {
    let n = 0;
    for (const s of this.watchers.values()) n += s.size;
    return n;
  }
}

/** What a signal means to a follower (`follow`'s `meaning`). */
export type FollowSignal<E, X> =
  /** Persisted events, in order (a follower takes those after what it has, and reads the store on a gap). */
  | { kind: 'events'; events: E[] }
  /** The sequence reached `seq`: the follower reads the store up to it. */
  | { kind: 'more'; seq: number }
  /** Something live only (never stored), meaningful when the follower has everything up to `afterSeq`. */
  | { kind: 'extra'; afterSeq: number; item: X }
  /** The sequence is gone: the stream ends. */
  | { kind: 'end' };

export interface FollowOptions<E, X, S> {
  /** Up to `limit` persisted events after `after`, in seq order. */
  read(after: number, limit: number): Promise<E[]>;
  /** Asked when the stream was quiet for `recheckMs`: false ends it (its subject was deleted). */
  alive?(): Promise<boolean>;
  /** What a signal means. */
  meaning(s: S): FollowSignal<E, X>;
  /** How often a quiet follower reads the store (a signal lost on the way); 5 s by default. */
  recheckMs?: number;
  /** Events read from the store at once; 200 by default. */
  page?: number;
}

/**
 * Every persisted event of `key` after `after`, in order, then the live ones as they come: the
 * follower listens before it reads the store, skips what it has already sent, and reads the store
 * again when a seq is missing (or a signal says there is more), so nothing is lost or repeated.
 * Ends when the sequence ends (`end`, or `alive` says no) or `signal` aborts.
 */
export async function* follow<E extends { seq: number }, X, S>(
  live: LiveSignals<S>,
  key: string,
  after: number,
  signal: AbortSignal,
  opts: FollowOptions<E, X, S>,
): AsyncGenerator<{ kind: 'event'; event: E } | { kind: 'extra'; item: X }> {
  const recheckMs = opts.recheckMs ?? 5_000;
  const pageSize = opts.page ?? 200;
  const queue: S[] = [];
  let wake: (() => void) | undefined;
  const remove = live.add(key, (s) => {
    queue.push(s);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  let last = after;
  try {
    const catchUp = async function* () {
      for (;;) {
        const page = await opts.read(last, pageSize);
        for (const e of page) {
          last = e.seq;
          yield { kind: 'event' as const, event: e };
        }
        if (page.length < pageSize) return;
      }
    };
    yield* catchUp();
    while (!signal.aborted) {
      while (queue.length && !signal.aborted) {
        const s = opts.meaning(queue.shift()!);
        if (s.kind === 'end') return;
        if (s.kind === 'extra') {
          // Live-only news about what came before a persisted event the follower has not reached is stale.
          if (s.afterSeq >= last) yield { kind: 'extra' as const, item: s.item };
          continue;
        }
        if (s.kind === 'more') {
          if (s.seq > last) yield* catchUp();
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
        const timer = setTimeout(() => resolve(true), recheckMs);
        wake = () => {
          clearTimeout(timer);
          resolve(false);
        };
      });
      wake = undefined;
      if (timedOut) {
        if (opts.alive && !(await opts.alive())) return;
        yield* catchUp();
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    remove();
  }
}
