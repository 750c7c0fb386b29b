import type { Request, Response } from 'express';

import type { StreamEvent } from '@svc/dispatch';
import { DomainError } from '@svc/kit';

import { drained } from './content.js';

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/** Whether the client asks for a stream of server-sent events. */
export const wantsEventStream = (req: Request) => /\btext\/event-stream\b/i.test(req.headers.accept ?? '');

/** One event in the text/event-stream format: `id`, `event` and the data as one JSON line. */
export function formatEvent(e: StreamEvent): string {
  let out = '';
  if (e.id !== undefined) out += `id: ${String(e.id).replace(/[\r\n]/g, '')}\n`;
  if (e.event !== undefined) out += `event: ${e.event.replace(/[\r\n]/g, '')}\n`;
  return `${out}data: ${JSON.stringify(e.data)}\n\n`;
}

/** Registers the stream with what ends it from outside (its key revoked or expired); returns the release. */
export type HoldStream = (end: (why: DomainError) => void) => () => void;

const STOPPED = Symbol('stopped');

/** The reconnection delay a draining replica's streams ask their clients for (the SSE `retry` field). */
const DRAIN_RETRY_MS = 500;

/**
 * Writes a stream of events as server-sent events (text/event-stream), with backpressure and a
 * heartbeat comment while it is quiet. The source is stopped (`return()`, which releases whatever
 * it holds) on every way the stream can end: the source ends or fails (an `error` event with the
 * contract's error body, then the end), the client leaves (before the head was written too: a
 * client that closed right after sending its request), or `hold`'s `end` is called (the key was
 * revoked or expired: an `error` event saying so, then the end; the replica draining: a `retry`
 * field and the end, with no error, as the client is to resume elsewhere). It never waits on the
 * source once the stream is over.
 */
export async function sendEvents(req: Request, res: Response, events: AsyncIterable<StreamEvent>, hold?: HoldStream): Promise<void> {
  const it = events[Symbol.asyncIterator]();
  let stopped: 'gone' | DomainError | undefined;
  let wake!: () => void;
  const stopping = new Promise<typeof STOPPED>((resolve) => (wake = () => resolve(STOPPED)));
  const stop = (why: 'gone' | DomainError) => {
    if (stopped) return;
    stopped = why;
    wake();
    it.return?.().catch(() => {});
  };
  const leave = () => {
    if (!res.writableFinished) stop('gone');
  };
  res.on('close', leave);
  const release = hold?.((why) => stop(why));
  let heartbeat: NodeJS.Timeout | undefined;
  // The client may be gone already ('close' came before this listener): stop now, head or not.
  if (res.destroyed) leave();
  try {
    if (stopped) return;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    while (!stopped) {
      const pending = it.next();
      pending.catch(() => {}); // a source that fails after the stream stopped is nobody's concern
      const next = await Promise.race([pending, stopping]);
      if (next === STOPPED || next.done || stopped) break;
      if (!res.write(formatEvent(next.value))) await Promise.race([drained(res), stopping]);
    }
  } catch (err) {
    if (!stopped) {
      const e = err instanceof DomainError ? err : new DomainError('internal', 'internal_error', 'The stream failed.', undefined, { cause: err });
      res.write(formatEvent({ event: 'error', data: { error: { code: e.code, message: e.message, requestId: req.requestId } } }));
    }
  } finally {
    clearInterval(heartbeat);
    release?.();
    res.off('close', leave);
    if (stopped instanceof DomainError && res.headersSent && !res.destroyed) {
      // A draining replica's stream ends with no error: the client reconnects after `retry` and resumes.
      if (stopped.code === 'draining') res.write(`: ${stopped.message}\nretry: ${DRAIN_RETRY_MS}\n\n`);
      else res.write(formatEvent({ event: 'error', data: { error: { code: stopped.code, message: stopped.message, requestId: req.requestId } } }));
    }
    if (stopped !== 'gone') res.end();
  }
}
