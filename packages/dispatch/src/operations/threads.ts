import { threadEventJson } from '@svc/api';
import { agentsClient } from '@svc/clients';
import { DomainError, type Registry } from '@svc/kit';

import { eventsAnswer, type StreamEvent } from '../answers.js';
import type { OperationHandler } from '../dispatcher.js';

/**
 * GET /threads/:id/events: a page of the event list, or (asked for a stream) every event after
 * `after` / Last-Event-ID and then the live ones, from AgentsService.WatchThreadEvents.
 */
export function threadOperations(deps: { registry: Registry; maxStreamsPerKey?: number }): Record<string, OperationHandler> {
  // Open streams per key (or host, or principal) on this process: one client cannot hold them all.
  const open = new Map<string, number>();
  const limit = deps.maxStreamsPerKey ?? 20;
  const events: OperationHandler = async (input, ctx) => {
    const client = agentsClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    const threadId = input.params.id as string;
    if (!ctx.stream) {
      const res = await client.listThreadEvents({ threadId, after: input.query.after, limit: input.query.limit }, opts);
      return { events: res.events.map(threadEventJson), nextAfter: res.nextAfter === undefined ? null : Number(res.nextAfter) };
    }
    const lastEventId = input.headers['last-event-id'] as string | undefined;
    const after = Math.max(Number(input.query.after ?? 0), lastEventId ? Number(lastEventId) : 0);
    // Checked before the stream starts, so a missing thread is a 404, not an error event.
    await client.getThread({ id: threadId }, opts);
    const p = ctx.auth!.principal;
    const who = p.keyId ?? p.hostId ?? `${p.kind}:${p.userId ?? p.agentId ?? p.accountId}`;
    const held = open.get(who) ?? 0;
    if (held >= limit) {
      throw new DomainError('rate_limited', 'too_many_streams', `This key already holds ${limit} live event streams; close one first.`, {
        retryAfterSeconds: 5,
      });
    }
    open.set(who, held + 1);
    const release = () => {
      const n = (open.get(who) ?? 1) - 1;
      if (n <= 0) open.delete(who);
      else open.set(who, n);
    };
    // Not a generator: a client that leaves a quiet stream must end it now, not at the next event.
    const ac = new AbortController();
    const inner = client.watchThreadEvents({ threadId, after }, { ...opts, signal: ac.signal })[Symbol.asyncIterator]();
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      release();
      ac.abort();
    };
    const sse: AsyncIterable<StreamEvent> = {
      [Symbol.asyncIterator]: () => ({
        async next(): Promise<IteratorResult<StreamEvent>> {
          if (finished) return { done: true, value: undefined };
          try {
            const r = await inner.next();
            if (r.done) {
              finish();
              return { done: true, value: undefined };
            }
            const e = r.value;
            const data = threadEventJson(e);
            return { done: false, value: Number(e.seq) > 0 ? { id: String(e.seq), event: e.type, data } : { event: e.type, data } };
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
    return eventsAnswer(sse);
  };
  return { 'threads.events': events };
}
