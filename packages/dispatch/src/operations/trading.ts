import { tradingEventJson } from '@svc/api';
import { tradingClient } from '@svc/clients';
import type { Registry } from '@svc/kit';
import type { trading_market } from '@svc/proto';

import { eventsAnswer } from '../answers.js';
import type { OperationHandler } from '../dispatcher.js';
import { LiveStreams } from './live-streams.js';

/**
 * GET /trading/events: a page of the acting account's order updates, or (asked for a stream)
 * every update after `after` / Last-Event-ID and then the live ones, from TradingService.WatchEvents.
 * GET /trading/quotes, /trading/trades and /trading/bars: the paper venue's market data, as a list
 * or a live stream (WatchQuotes, WatchTrades, WatchBars). Streams count against the same per-key
 * limit as the other live streams (`streams`).
 */
export function tradingOperations(deps: { registry: Registry; maxStreamsPerKey?: number; streams?: LiveStreams }): Record<string, OperationHandler> {
  const streams = deps.streams ?? new LiveStreams(deps.maxStreamsPerKey ?? 20);
  const events: OperationHandler = async (input, ctx) => {
    const client = tradingClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    if (!ctx.stream) {
      const res = await client.listEvents({ after: input.query.after as number, limit: input.query.limit as number }, opts);
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
  /** The symbols of `?symbols=A,B` (none: every symbol). */
  const symbolsOf = (v: unknown) => (typeof v === 'string' && v ? v.split(',') : []);
  const quotes: OperationHandler = async (input, ctx) => {
    const client = tradingClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    const req = { venue: input.query.venue as string, symbols: symbolsOf(input.query.symbols) };
    // A list first, streamed or not: an unknown symbol or venue is a 400, not an error event.
    const res = await client.listQuotes(req, opts);
    if (!ctx.stream) return { quotes: res.quotes };
    const release = streams.take(ctx);
    return eventsAnswer(
      streams.stream(
        release,
        (signal) => client.watchQuotes(req, { ...opts, signal }),
        (q) => ({ event: 'quote', data: q }),
      ),
    );
  };
  const trades: OperationHandler = async (input, ctx) => {
    const client = tradingClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    const venue = input.query.venue as string;
    const symbol = input.query.symbol as string;
    const res = await client.listTrades(
      { venue, symbol, limit: input.query.limit as number, cursor: input.query.cursor as string | undefined },
      opts,
    );
    if (!ctx.stream) return { trades: res.trades.map(tradeJson), nextCursor: res.nextCursor ?? null };
    const lastEventId = input.headers['last-event-id'] as string | undefined;
    const after = lastEventId !== undefined ? Number(lastEventId) : (input.query.after as number | undefined);
    const release = streams.take(ctx);
    return eventsAnswer(
      streams.stream(
        release,
        (signal) => client.watchTrades({ venue, symbol, after }, { ...opts, signal }),
        (t) => ({ id: String(t.seq), event: 'trade', data: tradeJson(t) }),
      ),
    );
  };
  const bars: OperationHandler = async (input, ctx) => {
    const client = tradingClient(deps.registry);
    const opts = { principalToken: ctx.auth!.token, requestId: ctx.requestId };
    const lastEventId = input.headers['last-event-id'] as string | undefined;
    const req = {
      venue: input.query.venue as string,
      symbol: input.query.symbol as string,
      interval: input.query.interval as string,
      // A stream taken again starts at the bar it saw last (which may have changed since).
      start: lastEventId !== undefined ? new Date(Number(lastEventId)).toISOString() : (input.query.start as string | undefined),
      end: input.query.end as string | undefined,
      limit: input.query.limit as number,
    };
    const res = await client.getCandles(req, opts);
    if (!ctx.stream) return { symbol: res.symbol, interval: res.interval, bars: res.candles };
    const release = streams.take(ctx);
    return eventsAnswer(
      streams.stream(
        release,
        (signal) => client.watchBars(req, { ...opts, signal }),
        (c) => ({ id: String(Date.parse(c.start)), event: 'bar', data: c }),
      ),
    );
  };
  return { 'trading.events': events, 'trading.quotes': quotes, 'trading.trades': trades, 'trading.bars': bars };
}

/** A trade of the tape as the API answers it. */
const tradeJson = (t: trading_market.Trade) => ({ ...t, seq: Number(t.seq), takerSide: t.takerSide as 'buy' | 'sell' });
