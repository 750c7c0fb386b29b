/**
 * The client side of server-streaming gRPC calls, on the same HTTP/2 connections as unary calls.
 *
 * Why the kit's own client and not grpc-js's for streams: a stream is one more HTTP/2 stream on the
 * connection UnaryChannel already keeps per service address (GOAWAY rotation, keepalive pings
 * while calls are in flight, one retry of a call refused unprocessed), so there is one connection
 * per service, not two, and one way of tracing. grpc-js's client would bring its own channel, and
 * with tracing on its instrumentation would add a second client span around ours. What streams
 * add here is small: splitting the response into messages, reading no further ahead than the
 * consumer (HTTP/2 flow control then holds the server back), and cancelling the call when the
 * consumer stops.
 *
 * A stream has no deadline unless the caller gives one (`deadlineMs`, for the whole stream): a
 * stream of events may rightly last as long as its reader wants it. A dead connection is still
 * noticed: keepalive pings run while a stream is open, and a connection that stops answering them
 * is dropped, which ends the stream as UNAVAILABLE. Servers also rotate connections: grpc-js closes
 * each one its max connection age plus grace after it opened (5 minutes + 30 s in startGrpcServer),
 * which ends a stream still open on it as UNAVAILABLE, however young the stream. A reader of long
 * streams (events) resumes with a new call, which goes over a new connection.
 */
import http2 from 'node:http2';

import { status as GrpcStatus } from '@grpc/grpc-js';
import { type Context, context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

import { atDeadline, grpcTimeout } from './deadlines.js';
import { UnaryCallError, type UnaryChannel } from './unary.js';

const { HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_TE, NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } =
  http2.constants;

const tracer = trace.getTracer('@svc/kit/stream');

/** Messages decoded ahead of the consumer before reading pauses (and flow control stops the server). */
const READ_AHEAD = 8;

export interface StreamCallOptions {
  /** Metadata sent as request headers (lowercase ASCII keys, string values). */
  headers: Record<string, string>;
  /** A deadline for the whole stream, counted from when the call is sent (the first read); none when absent. */
  deadlineMs?: number;
  /**
   * Ends the stream at once when aborted, even while the consumer waits for a message (a
   * generator's return() takes effect only at its next message): the call is cancelled on the
   * server and the waiting read ends as CANCELLED.
   */
  signal?: AbortSignal;
}

/**
 * A server-streaming call: sends one request message to `path` and yields each response message.
 * The call is sent on the first read, under the trace context active when streamCall was called;
 * its client span lasts until the stream ends. A failure (the server's status, the deadline, a
 * lost connection) is thrown as a UnaryCallError after the messages that came before it. Stopping
 * early (`break` out of `for await`, or `return()`) cancels the call on the server.
 */
export function streamCall(
  channel: UnaryChannel,
  path: string,
  message: Buffer,
  options: StreamCallOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return run(channel, path, message, options, context.active());
}

/**
 * A bidirectional-streaming call: sends each message `requests` yields as it yields it (waiting for
 * the connection to take it, so a slow server holds the sender back), ends the request side when
 * it ends, and yields each response message as streamCall does. The call is sent on the first
 * read. It is never retried (its messages are the caller's, already taken). Stopping early cancels
 * the call and stops reading `requests` (its return() runs).
 */
export function duplexCall(
  channel: UnaryChannel,
  path: string,
  requests: AsyncIterable<Buffer>,
  options: StreamCallOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return run(channel, path, requests, options, context.active());
}

async function* run(
  channel: UnaryChannel,
  path: string,
  message: Buffer | AsyncIterable<Buffer>,
  options: StreamCallOptions,
  parent: Context,
): AsyncGenerator<Buffer, void, undefined> {
  const slash = path.lastIndexOf('/');
  const span = tracer.startSpan(
    `grpc.${path.slice(1)}`,
    { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'grpc', 'rpc.service': path.slice(1, slash), 'rpc.method': path.slice(slash + 1) } },
    parent,
  );
  const headers: http2.OutgoingHttpHeaders = {
    [HTTP2_HEADER_METHOD]: 'POST',
    [HTTP2_HEADER_PATH]: path,
    [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
    [HTTP2_HEADER_TE]: 'trailers',
    ...(options.deadlineMs === undefined ? {} : { 'grpc-timeout': grpcTimeout(options.deadlineMs) }),
    ...options.headers,
  };
  propagation.inject(trace.setSpan(parent, span), headers);
  // Stopped by the consumer unless it ends otherwise.
  let code: number = GrpcStatus.CANCELLED;
  let reader: ResponseReader | undefined;
  try {
    reader = new ResponseReader(channel, headers, message, options.deadlineMs);
    const r = reader;
    if (options.signal?.aborted) r.cancelByCaller();
    options.signal?.addEventListener('abort', () => r.cancelByCaller(), { once: true });
    for (let m = await reader.read(); m !== undefined; m = await reader.read()) yield m;
    code = GrpcStatus.OK;
  } catch (err) {
    if (err instanceof UnaryCallError) {
      code = err.code;
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.details });
    }
    throw err;
  } finally {
    reader?.cancel();
    span.setAttribute('rpc.grpc.status_code', code);
    span.end();
  }
}

/** One call's HTTP/2 stream: its messages as the consumer asks for them, then its outcome. */
class ResponseReader {
  private stream!: http2.ClientHttp2Stream;
  private readonly messages: Buffer[] = [];
  private readonly decoder: MessageDecoder;
  private status?: number;
  private trailers: http2.IncomingHttpHeaders = {};
  private failure?: UnaryCallError;
  private ended = false;
  private wake?: () => void;
  private clearTimer?: () => void;

  constructor(
    private readonly channel: UnaryChannel,
    private readonly headers: http2.OutgoingHttpHeaders,
    private readonly message: Buffer | AsyncIterable<Buffer>,
    deadlineMs: number | undefined,
  ) {
    this.decoder = new MessageDecoder(channel.maxReceiveBytes);
    this.open(Buffer.isBuffer(message));
    if (deadlineMs !== undefined) {
      this.clearTimer = atDeadline(Date.now() + deadlineMs, () => this.fail(new UnaryCallError(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded.')));
    }
  }

  /** The next message, undefined at the end of a stream that ended OK; throws the call's failure. */
  async read(): Promise<Buffer | undefined> {
    for (;;) {
      const m = this.messages.shift();
      if (m !== undefined) {
        if (this.messages.length <= READ_AHEAD / 2 && this.stream.isPaused()) this.stream.resume();
        return m;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Cancels the call (RST_STREAM CANCEL) unless it has ended. */
  cancel(): void {
    this.clearTimer?.();
    if (!this.stream.closed) this.stream.close(NGHTTP2_CANCEL);
  }

  private open(mayRetry: boolean): void {
    const stream = this.channel.openStream(this.headers);
    this.stream = stream;
    let answered = false;
    stream.on('response', (h) => {
      answered = true;
      if (h[':status'] !== 200) {
        this.status = GrpcStatus.UNAVAILABLE;
        this.trailers = { 'grpc-message': `HTTP status ${h[':status']}` };
      } else if (h['grpc-status'] !== undefined) {
        // A trailers-only response (how servers answer errors): the status is in the headers.
        this.status = Number(h['grpc-status']);
        this.trailers = h;
      }
    });
    stream.on('trailers', (t) => {
      this.status = Number(t['grpc-status'] ?? GrpcStatus.UNKNOWN);
      this.trailers = t;
    });
    stream.on('data', (chunk: Buffer) => {
      // After a non-200 answer the body is not gRPC; its status is reported at 'close'.
      if (this.failure || this.status !== undefined) return;
      try {
        this.messages.push(...this.decoder.push(chunk));
      } catch (err) {
        this.fail(err as UnaryCallError);
        return;
      }
      if (this.messages.length >= READ_AHEAD) stream.pause();
      this.notify();
    });
    stream.on('close', () => {
      if (this.failure || stream !== this.stream) return;
      if (stream.rstCode === NGHTTP2_REFUSED_STREAM && !answered && mayRetry) {
        // Refused before any processing (a server draining its connection): one more try.
        try {
          this.open(false);
        } catch (err) {
          this.fail(err as UnaryCallError);
        }
        return;
      }
      if (this.status === undefined) {
        const reason = stream.rstCode ? `stream reset (${stream.rstCode})` : 'connection closed';
        this.fail(new UnaryCallError(GrpcStatus.UNAVAILABLE, `The call ended without a status: ${reason}.`));
      } else if (this.status !== GrpcStatus.OK) {
        const raw = this.trailers['grpc-message'];
        const details = typeof raw === 'string' ? decodeURIComponentSafe(raw) : '';
        this.fail(new UnaryCallError(this.status, details, this.trailers as Record<string, string | string[] | undefined>));
      } else if (this.decoder.partial) {
        this.fail(new UnaryCallError(GrpcStatus.INTERNAL, 'The response ended inside a message.'));
      } else {
        this.ended = true;
        this.clearTimer?.();
        this.notify();
      }
    });
    // Errors surface again as 'close' with no status; nothing to add here.
    stream.on('error', () => {});
    if (!Buffer.isBuffer(this.message)) return void this.pump(stream, this.message);
    const head = Buffer.allocUnsafe(5);
    head[0] = 0;
    head.writeUInt32BE(this.message.length, 1);
    stream.write(head);
    stream.end(this.message);
  }

  /** Writes a duplex call's messages as they come, then ends the request side; stops when the call ends. */
  private async pump(stream: http2.ClientHttp2Stream, messages: AsyncIterable<Buffer>): Promise<void> {
    const it = messages[Symbol.asyncIterator]();
    const closed = new Promise<'closed'>((resolve) => stream.once('close', () => resolve('closed')));
    try {
      for (;;) {
        const next = await Promise.race([it.next(), closed]);
        if (next === 'closed' || stream.closed) return void (await it.return?.());
        if (next.done) return void stream.end();
        const head = Buffer.allocUnsafe(5);
        head[0] = 0;
        head.writeUInt32BE(next.value.length, 1);
        stream.write(head);
        if (!stream.write(next.value)) {
          if ((await Promise.race([new Promise<'drain'>((resolve) => stream.once('drain', () => resolve('drain'))), closed])) === 'closed') {
            return void (await it.return?.());
          }
        }
      }
    } catch (err) {
      // The sender failed: the call is cancelled, and its readers see it end.
      this.fail(new UnaryCallError(GrpcStatus.CANCELLED, `The request stream failed: ${(err as Error)?.message ?? String(err)}`));
    }
  }

  /** Ends the call with a failure, thrown once the messages before it are read. */
  /** The caller gave up (StreamCallOptions.signal): a waiting read ends as CANCELLED. */
  cancelByCaller(): void {
    this.fail(new UnaryCallError(GrpcStatus.CANCELLED, 'Cancelled by the caller.'));
  }

  private fail(err: UnaryCallError): void {
    if (this.failure || this.ended) return;
    this.failure = err;
    this.cancel();
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** Splits response bytes into gRPC messages: a zero compression flag, a big-endian u32 length, the bytes. */
class MessageDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The length of the message being read, once its prefix is in. */
  private need?: number;

  constructor(private readonly maxBytes: number) {}

  /** Bytes of an unfinished message are held. */
  get partial(): boolean {
    return this.buffered > 0 || this.need !== undefined;
  }

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Buffer[] = [];
    for (;;) {
      if (this.need === undefined) {
        if (this.buffered < 5) break;
        const head = this.take(5);
        if (head[0] !== 0) throw new UnaryCallError(GrpcStatus.INTERNAL, 'The response holds a compressed message.');
        const length = head.readUInt32BE(1);
        if (length > this.maxBytes) {
          throw new UnaryCallError(GrpcStatus.RESOURCE_EXHAUSTED, `A response message is larger than ${this.maxBytes} bytes.`);
        }
        this.need = length;
      }
      if (this.buffered < this.need) break;
      out.push(this.take(this.need));
      this.need = undefined;
    }
    return out;
  }

  /** The next n buffered bytes (joined once when a message spans chunks). */
  private take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    const first = this.chunks[0]!;
    this.buffered -= n;
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    return first.subarray(0, n);
  }
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
