import { DomainError } from '@svc/kit';

import type { StreamEvent } from '../answers.js';
import type { OperationContext } from '../dispatcher.js';

/**
 * The live event streams of the operations that have them (threads.events, trading.events): how
 * many one key (or host, or principal) may hold open on this process, and the stream itself over a
 * service's server-streaming call. One client cannot hold them all; a stream a client leaves ends
 * at once, quiet or not.
 */
export class LiveStreams {
  private readonly open = new Map<string, number>();

  constructor(readonly limit = 20) {}

  /** Counts one more stream of the caller; 429 `too_many_streams` when it holds `limit`. Answers the release (idempotent). */
  take(ctx: OperationContext): () => void {
    const p = ctx.auth!.principal;
    const who = p.keyId ?? p.hostId ?? `${p.kind}:${p.userId ?? p.agentId ?? p.accountId}`;
    const held = this.open.get(who) ?? 0;
    if (held >= this.limit) {
      throw new DomainError('rate_limited', 'too_many_streams', `This key already holds ${this.limit} live event streams; close one first.`, {
        retryAfterSeconds: 5,
      });
    }
    this.open.set(who, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.open.get(who) ?? 1) - 1;
      if (n <= 0) this.open.delete(who);
      else this.open.set(who, n);
    };
  }

  /**
   * A stream (after `take`) over `call`'s messages, each as `toEvent` says: the call is aborted and
   * the stream released when the client leaves (not a generator: a quiet stream ends now, not at
   * its next message), when the call ends, or when it fails (the failure then reaches the client).
   */
  stream<T>(release: () => void, call: (signal: AbortSignal) => AsyncIterable<T>, toEvent: (m: T) => StreamEvent): AsyncIterable<StreamEvent> {
    const ac = new AbortController();
    let inner: AsyncIterator<T>;
    try {
      inner = call(ac.signal)[Symbol.asyncIterator]();
    } catch (err) {
      release();
      throw err;
    }
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      release();
      ac.abort();
    };
    return {
      [Symbol.asyncIterator]: () => ({
        async next(): Promise<IteratorResult<StreamEvent>> {
          if (finished) return { done: true, value: undefined };
          try {
            const r = await inner.next();
            if (r.done) {
              finish();
              return { done: true, value: undefined };
            }
            return { done: false, value: toEvent(r.value) };
          } catch (err) {
            const left = finished;
            finish();
            if (left) return { done: true, value: undefined };
            throw err;
          }
        },
        async return(): Promise<IteratorResult<StreamEvent>> {
          finish();
          return { done: true, value: undefined };
        },
      }),
    };
  }
}
