import { threadEventJson } from '@svc/api';
import { agentsClient } from '@svc/clients';
import type { Registry } from '@svc/kit';

import { eventsAnswer } from '../answers.js';
import type { OperationHandler } from '../dispatcher.js';
import { LiveStreams } from './live-streams.js';

/**
 * GET /threads/:id/events: a page of the event list, or (asked for a stream) every event after
 * `after` / Last-Event-ID and then the live ones, from ThreadsService.WatchThreadEvents.
 */
export function threadOperations(deps: { registry: Registry; maxStreamsPerKey?: number; streams?: LiveStreams }): Record<string, OperationHandler> {
  const streams = deps.streams ?? new LiveStreams(deps.maxStreamsPerKey ?? 20);
  const events: OperationHandler = async (input, ctx) => {
    const client = agentsClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    const threadId = input.params.id as string;
    if (!ctx.stream) {
      const res = await client.listThreadEvents({ threadId, after: input.query.after as number, limit: input.query.limit as number }, opts);
      return { events: res.events.map(threadEventJson), nextAfter: res.nextAfter === undefined ? null : Number(res.nextAfter) };
    }
    const lastEventId = input.headers['last-event-id'] as string | undefined;
    const after = Math.max(Number(input.query.after ?? 0), lastEventId ? Number(lastEventId) : 0);
    // Checked before the stream starts, so a missing thread is a 404, not an error event.
    await client.getThread({ id: threadId }, opts);
    const release = streams.take(ctx);
    return eventsAnswer(
      streams.stream(
        release,
        (signal) => client.watchThreadEvents({ threadId, after }, { ...opts, signal }),
        (e) => {
          const data = threadEventJson(e);
          return Number(e.seq) > 0 ? { id: String(e.seq), event: e.type, data } : { event: e.type, data };
        },
      ),
    );
  };
  return { 'threads.events': events };
}
