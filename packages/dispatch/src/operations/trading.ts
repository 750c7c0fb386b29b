import { tradingEventJson } from '@svc/api';
import { tradingClient } from '@svc/clients';
import type { Registry } from '@svc/kit';

import { eventsAnswer } from '../answers.js';
import type { OperationHandler } from '../dispatcher.js';
import { LiveStreams } from './live-streams.js';

/**
 * GET /trading/events: a page of the acting account's order updates, or (asked for a stream)
 * every update after `after` / Last-Event-ID and then the live ones, from TradingService.WatchEvents.
 * Streams count against the same per-key limit as the other live streams (`streams`).
 */
export function tradingOperations(deps: { registry: Registry; maxStreamsPerKey?: number; streams?: LiveStreams }): Record<string, OperationHandler> {
  const streams = deps.streams ?? new LiveStreams(deps.maxStreamsPerKey ?? 20);
  const events: OperationHandler = async (input, ctx) => {
    const client = tradingClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    if (!ctx.stream) {
      const res = await client.listEvents({ after: input.query.after, limit: input.query.limit }, opts);
      return { events: res.events.map(tradingEventJson), nextAfter: res.nextAfter === undefined ? null : Number(res.nextAfter) };
    }
    const lastEventId = input.headers['last-event-id'] as string | undefined;
    const after = Math.max(Number(input.query.after ?? 0), lastEventId ? Number(lastEventId) : 0);
    const release = streams.take(ctx);
    return eventsAnswer(
      streams.stream(
        release,
        (signal) => client.watchEvents({ after }, { ...opts, signal }),
        (e) => ({ id: String(e.seq), event: e.type, data: tradingEventJson(e) }),
      ),
    );
  };
  return { 'trading.events': events };
}
