import WebSocket from 'ws';

import { type Control, ControlError } from './control.js';
import type { GrantBook } from './grants.js';
import type { Log } from './log.js';

/** Close codes the platform uses (services/gateway/src/fronts/hosts). */
const CLOSE_UNPAIRED = 4401;
const CLOSE_REPLACED = 4409;
/** The gateway's frame limit is 1 MiB (services/gateway/src/fronts/hosts); results stay under it with room to spare. */
const MAX_RESULT_FRAME = 1000 * 1024;

export type ConnectionState = 'connecting' | 'open' | 'waiting' | 'rejected' | 'stopped';

/** What a platform call answers: an MCP tool result (the shape host_call hands to agents). */
export function toolResult(out: { result?: unknown; error?: { code: string; message: string } }) {
  if (out.error) return { isError: true, content: [{ type: 'text', text: out.error.message }], structuredContent: { error: out.error } };
  const structured = (
    typeof out.result === 'object' && out.result !== null && !Array.isArray(out.result) ? out.result : { value: out.result }
  ) as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(out.result) }], structuredContent: structured };
}

export interface ConnectionOptions {
  baseUrl: string;
  credential: string;
  control: Control;
  grants: GrantBook;
  log: Log;
  /** Reconnection backoff: from minBackoffMs doubling to maxBackoffMs, with jitter. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * The connection out: a WebSocket to the platform's gateway (`/v1/hosts/connect`), authenticated
 * by the host credential, so the platform reaches this host with no port open to it. Calls that
 * arrive are served by the same control tools as the local endpoint (grants, journal and all).
 * Lost connections are made again with backoff; a refused credential (401) or an unpairing ends
 * the attempts.
 */
export class Connection {
  state: ConnectionState = 'connecting';
  hostId: string | undefined;
  private ws: WebSocket | undefined;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly o: ConnectionOptions) {}

  private get url(): string {
    const u = new URL('/v1/hosts/connect', this.o.baseUrl);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    return u.toString();
  }

  start(): void {
    this.connect();
  }

  /** Resolves when the state satisfies `test` (tests and the CLI wait on it). */
  when(test: (c: Connection) => boolean, timeoutMs = 10_000): Promise<void> {
    if (test(this)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!test(this)) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`connection: still ${this.state} after ${timeoutMs} ms`));
      }, timeoutMs);
      this.listeners.add(check);
    });
  }

  private set(state: ConnectionState): void {
    this.state = state;
    for (const l of [...this.listeners]) l();
  }

  private connect(): void {
    if (this.state === 'stopped' || this.state === 'rejected') return;
    this.set('connecting');
    const ws = new WebSocket(this.url, {
      headers: { authorization: `Bearer ${this.o.credential}` },
      handshakeTimeout: 10_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      if (status === 401) return this.reject('the platform refused the host credential (unpaired, or not a credential of this platform)');
      this.o.log.warn('connection: refused', { status });
      ws.terminate();
    });
    ws.on('open', () => {
      this.attempt = 0;
    });
    ws.on('message', (data) => this.onFrame(ws, data.toString()));
    ws.on('close', (code) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (code === CLOSE_UNPAIRED) return this.reject('the host was unpaired');
      if (this.state === 'stopped' || this.state === 'rejected') return;
      this.retry(code === CLOSE_REPLACED ? 'replaced by another connection' : `closed (${code})`);
    });
    ws.on('error', (err) => {
      if (this.state !== 'rejected') this.o.log.warn('connection: error', { error: err.message });
    });
  }

  private reject(why: string): void {
    this.o.log.error(`connection: ${why}; not reconnecting`);
    this.set('rejected');
    this.ws?.terminate();
    this.o.grants.refresh().catch(() => {});
  }

  private retry(why: string): void {
    const min = this.o.minBackoffMs ?? 500;
    const max = this.o.maxBackoffMs ?? 30_000;
    const delay = Math.min(max, min * 2 ** this.attempt++) * (0.5 + Math.random() / 2);
    this.o.log.info('connection: lost, reconnecting', { why, inMs: Math.round(delay) });
    this.set('waiting');
    this.timer = setTimeout(() => this.connect(), delay);
    this.timer.unref();
  }

  private onFrame(ws: WebSocket, text: string): void {
    let frame: { type?: string; id?: string; tool?: string; arguments?: unknown; caller?: { kind: string; id: string }; hostId?: string };
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type === 'hello') {
      this.hostId = frame.hostId;
      this.o.log.info('connection: open', { hostId: frame.hostId });
      this.set('open');
      // Grants may have changed while the host was away.
      this.o.grants.refresh().catch(() => {});
      return;
    }
    if (frame.type === 'grants_changed') {
      this.o.grants.refresh().catch(() => {});
      return;
    }
    if (frame.type === 'call' && typeof frame.id === 'string' && typeof frame.tool === 'string') {
      const id = frame.id;
      const caller = frame.caller ? { kind: String(frame.caller.kind), id: String(frame.caller.id) } : undefined;
      this.o.control.call(frame.tool, frame.arguments ?? {}, { via: 'platform', callId: id, principal: caller }).then(
        (result) => {
          let text = JSON.stringify({ type: 'result', id, result: toolResult({ result }) });
          // The gateway closes a socket on a frame past 1 MiB: a result that large is refused instead.
          if (Buffer.byteLength(text) > MAX_RESULT_FRAME) {
            const message = `The result of ${frame.tool} is too large to return through the platform (more than ${MAX_RESULT_FRAME} bytes); ask for less (a smaller file, a limit).`;
            text = JSON.stringify({ type: 'result', id, result: toolResult({ error: { code: 'result_too_large', message } }) });
          }
          ws.send(text);
        },
        (err: unknown) => {
          const error =
            err instanceof ControlError ? { code: err.code, message: err.message } : { code: 'internal_error', message: 'The tool failed.' };
          if (!(err instanceof ControlError)) this.o.log.error('platform call failed', { tool: frame.tool, error: (err as Error).message });
          ws.send(JSON.stringify({ type: 'result', id, result: toolResult({ error }) }));
        },
      );
    }
  }

  async stop(): Promise<void> {
    this.set('stopped');
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = undefined;
    if (!ws || ws.readyState === ws.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000, 'the host is stopping');
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000).unref();
    });
  }
}
