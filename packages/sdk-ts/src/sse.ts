/**
 * Server-sent events (text/event-stream): a parser, and a stream that survives dropped connections.
 * Each persisted event carries its seq as `id`; after a drop the stream reconnects with
 * `Last-Event-ID` (and `after`) set to the last id it yielded, and skips any event at or below it,
 * so no event is yielded twice and none is lost. Live-only events (text deltas) have no id.
 */
import type { Config } from './config.js';
import { errorFromAnswer, SvcError } from './errors.js';
import { backoffMs, prepare, send } from './transport.js';
import type { OperationId, ServerEvent, StreamOptions } from './types.js';

/** Parses a text/event-stream body into events (comments and keep-alives skipped; `data` as JSON). */
export async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent<unknown>> {
  const decoder = new TextDecoder();
  let buf = '';
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let id: string | undefined;
        let event: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = value;
          else if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
        }
        if (data.length === 0) continue;
        const text = data.join('\n');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: the text as is
        }
        yield { id, event, data: parsed };
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** The live events of operation `id` (one with `events`), resumed across drops. */
export async function* streamEvents(
  config: Config,
  id: OperationId,
  input: Record<string, unknown>,
  options: StreamOptions = {},
): AsyncGenerator<ServerEvent<unknown>> {
  const maxReconnects = options.maxReconnects ?? 10;
  let last = Number(input.after ?? input.lastEventId ?? 0);
  let connected = false;
  let failures = 0;
  for (;;) {
    const req = { ...input, after: last, lastEventId: last > 0 ? String(last) : undefined };
    const prepared = prepare(config, id, req);
    prepared.headers.accept = 'text/event-stream';
    let res: Response;
    try {
      res = await send(config, id, prepared, { signal: options.signal, maxRetries: 0 });
    } catch (err) {
      if (options.signal?.aborted) return;
      // Gone after it was there (the thread deleted): the stream is over.
      if (connected && err instanceof SvcError && err.status === 404) return;
      const retryable = !(err instanceof SvcError) || err.status === 0 || err.status === 429 || err.status >= 500;
      if (!retryable || ++failures > maxReconnects) throw err;
      await wait(backoffMs(config, failures, err instanceof SvcError ? err.headers : undefined), options.signal);
      continue;
    }
    connected = true;
    try {
      for await (const e of parseEvents(res.body!)) {
        if (e.event === 'error') throw errorFromAnswer(500, e.data, res.headers, id);
        if (e.id !== undefined) {
          const seq = Number(e.id);
          if (Number.isFinite(seq)) {
            if (seq <= last) continue;
            last = seq;
          }
        }
        failures = 0;
        yield e;
      }
    } catch (err) {
      if (err instanceof SvcError) throw err;
      if (options.signal?.aborted) return;
      // The connection dropped: reconnect below.
    }
    if (options.signal?.aborted) return;
    if (++failures > maxReconnects) return;
    await wait(backoffMs(config, failures), options.signal).catch(() => undefined);
    if (options.signal?.aborted) return;
  }
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
