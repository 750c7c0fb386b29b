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

/**
 * Writes a stream of events as server-sent events (text/event-stream), with backpressure, a
 * heartbeat comment while it is quiet, and the source stopped (its `finally` runs) when the client
 * leaves. An error once the stream has started is sent as an `error` event with the contract's error
 * body, and the stream ends.
 */
export async function sendEvents(req: Request, res: Response, events: AsyncIterable<StreamEvent>): Promise<void> {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const it = events[Symbol.asyncIterator]();
  let gone = false;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const leave = () => {
    if (res.writableFinished || gone) return;
    gone = true;
    void it.return?.();
  };
  res.on('close', leave);
  try {
    for (;;) {
      const next = await it.next();
      if (next.done || gone) break;
      if (!res.write(formatEvent(next.value))) {
        await drained(res);
      }
    }
  } catch (err) {
    if (!gone) {
      const e = err instanceof DomainError ? err : new DomainError('internal', 'internal_error', 'The stream failed.', undefined, { cause: err });
      res.write(formatEvent({ event: 'error', data: { error: { code: e.code, message: e.message, requestId: req.requestId } } }));
    }
  } finally {
    clearInterval(heartbeat);
    res.off('close', leave);
    if (!gone) res.end();
  }
}
