/**
 * The host connection: a paired machine's host (apps/host) connects out to the platform with
 * a WebSocket upgrade of `GET /hosts/connect`, authenticated by its host credential, and needs no
 * inbound port. The replica holding the socket answers the host's NATS subject
 * (`hosts.<hostId>.call`), so `POST /hosts/:hostId/call` on any replica (through the accounts
 * service) reaches it; a host that is not connected anywhere has no responder: 503 host_offline.
 *
 * Frames are JSON text: `hello` (to the host, once), `call` (to the host) answered by `result`
 * (from the host) with the same id, `abort` (to the host) when the caller of a call gave up on it
 * (`hosts.<hostId>.abort`: a run's tool call aborted, docs/threads.md; a host that cannot stop
 * its tool lets it finish, and its late `result` is dropped), and `grants_changed` (to the host)
 * when a grant given to it changes. Unpairing closes the socket with code 4401; the host then
 * stops reconnecting.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';

import type express from 'express';
import { type WebSocket, WebSocketServer } from 'ws';

import { type Bus, DomainError, type ErrorCode, type Logger, type Subscription } from '@svc/kit';

import { nextRequestId } from '../../app.js';
import type { Authenticator } from '../../auth.js';
import { presentedSecret } from '../../credentials.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../http-server.js';

export const CONNECT_PATH_RE = /^\/(?:v1\/)?hosts\/connect\/?(?:\?.*)?$/i;
/** The connection's path as the app sees it (after `/v1`), where a plain request is told to upgrade. */
const CONNECT_RE = /^\/hosts\/connect\/?$/i;
export const connectPath = (req: express.Request) => CONNECT_RE.test(req.path);
/** Close codes the host acts on. */
export const CLOSE_UNPAIRED = 4401;
export const CLOSE_REPLACED = 4409;
const PING_MS = 20_000;
const MAX_FRAME = 1024 * 1024;

interface HostCall {
  callId: string;
  tool: string;
  arguments: unknown;
  caller: unknown;
  timeoutMs: number;
}

interface Live {
  hostId: string;
  socket: WebSocket;
  responder: Subscription;
  aborts?: Subscription;
  pending: Map<string, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>;
  alive: boolean;
}

export interface HostFront {
  /** Hosts connected to this replica. */
  connected(): string[];
  close(): Promise<void>;
}

function refuseUpgrade(socket: Duplex, status: number, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ error: { code, message, requestId: nextRequestId() } });
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 429 ? 'Too Many Requests' : 'Error'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${status === 503 ? `Retry-After: ${UNAVAILABLE_RETRY_AFTER_SECONDS}\r\n` : ''}Connection: close\r\n\r\n${body}`,
  );
}

/** A plain GET (no upgrade) is told what the path is for. */
export function mountHostConnect(app: express.Router): void {
  app.all(CONNECT_RE, (req, res) => {
    res.setHeader('Upgrade', 'websocket');
    res.status(426).json({
      error: { code: 'upgrade_required', message: 'GET /hosts/connect is a WebSocket upgrade for a paired host.', requestId: req.requestId },
    });
  });
}

export async function attachHostFront(server: http.Server, deps: { auth: Authenticator; bus: Bus; log: Logger }): Promise<HostFront> {
  const { auth, bus, log } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME, perMessageDeflate: false });
  const live = new Map<string, Live>();

  const send = (l: Live, frame: unknown) => {
    if (l.socket.readyState === l.socket.OPEN) l.socket.send(JSON.stringify(frame));
  };

  const drop = async (l: Live, reason: string) => {
    if (live.get(l.hostId) === l) live.delete(l.hostId);
    for (const p of l.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`the host disconnected (${reason})`));
    }
    l.pending.clear();
    await l.responder.unsubscribe().catch(() => {});
    await l.aborts?.unsubscribe().catch(() => {});
  };

  const onConnection = async (socket: WebSocket, hostId: string, accountId: string) => {
    const previous = live.get(hostId);
    const l: Live = { hostId, socket, responder: undefined as unknown as Subscription, pending: new Map(), alive: true };
    live.set(hostId, l);
    if (previous) {
      await drop(previous, 'replaced');
      previous.socket.close(CLOSE_REPLACED, 'replaced by a newer connection');
    }
    l.responder = await bus.respond(`hosts.${hostId}.call`, (req) => {
      const call = req as HostCall;
      return new Promise((resolve, reject) => {
        if (socket.readyState !== socket.OPEN) return reject(new Error('the host disconnected'));
        const timer = setTimeout(() => {
          l.pending.delete(call.callId);
          reject(new Error('the host did not answer in time'));
        }, call.timeoutMs + 1000);
        l.pending.set(call.callId, { resolve, reject, timer });
        send(l, { type: 'call', id: call.callId, tool: call.tool, arguments: call.arguments, caller: call.caller, timeoutMs: call.timeoutMs });
      });
    });
    l.aborts = await bus.listen(`hosts.${hostId}.abort`, (data) => {
      const callId = (data as { callId?: unknown } | null)?.callId;
      const p = typeof callId === 'string' ? l.pending.get(callId) : undefined;
      if (!p) return;
      l.pending.delete(callId as string);
      clearTimeout(p.timer);
      p.reject(new Error('the caller aborted the call'));
      send(l, { type: 'abort', id: callId });
    });
    if (socket.readyState !== socket.OPEN) return void drop(l, 'closed while connecting');
    socket.on('pong', () => (l.alive = true));
    socket.on('message', (data, isBinary) => {
      let frame: { type?: string; id?: string; result?: unknown };
      try {
        frame = JSON.parse(isBinary ? '' : data.toString());
      } catch {
        return socket.close(1003, 'frames are JSON text');
      }
      if (frame.type === 'result' && typeof frame.id === 'string') {
        const p = l.pending.get(frame.id);
        if (!p) return;
        l.pending.delete(frame.id);
        clearTimeout(p.timer);
        p.resolve(frame.result ?? null);
      }
    });
    socket.on('close', () => void drop(l, 'closed'));
    socket.on('error', () => {});
    send(l, { type: 'hello', hostId, accountId });
    log.info({ hostId }, 'host connected');
  };

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!CONNECT_PATH_RE.test(req.url ?? '')) return refuseUpgrade(socket, 404, 'not_found', 'No WebSocket endpoint here.');
    socket.on('error', () => {});
    const client = req.socket.remoteAddress ?? 'unknown';
    auth.authenticateHost(presentedSecret(req.headers.authorization, { basic: false }), client).then(
      (ctx) =>
        wss.handleUpgrade(req, socket, head, (ws) => {
          onConnection(ws, ctx.hostId, ctx.principal.accountId).catch((err) => {
            log.warn({ err, hostId: ctx.hostId }, 'host connection failed');
            ws.close(1011, 'the platform could not take the connection');
          });
        }),
      (err: unknown) => {
        if (err instanceof DomainError) return refuseUpgrade(socket, err.httpStatus, err.code, err.message);
        log.warn({ err }, 'host authentication failed');
        refuseUpgrade(socket, 503, 'unavailable', 'The platform cannot verify the host credential now.');
      },
    );
  };
  server.on('upgrade', onUpgrade);

  // Unpairing: the credential is forgotten and the socket cut, on whichever replica holds it.
  const unpaired = await bus.subscribe('accounts.host.unpaired', async (event) => {
    const hostId = (event.data as { hostId?: string }).hostId;
    if (!hostId) return;
    auth.evictHost(hostId);
    const l = live.get(hostId);
    if (l) {
      await drop(l, 'unpaired');
      l.socket.close(CLOSE_UNPAIRED, 'the host was unpaired');
    }
  });
  // A grant given to a connected host changed: it reads its grants again.
  const grants = await bus.subscribe('accounts.grant.*', async (event) => {
    const target = (event.data as { target?: { kind?: string; id?: string } }).target;
    const l = target?.kind === 'host' && target.id ? live.get(target.id) : undefined;
    if (l) send(l, { type: 'grants_changed' });
  });

  const pinger = setInterval(() => {
    for (const l of live.values()) {
      if (!l.alive) {
        l.socket.terminate();
        continue;
      }
      l.alive = false;
      l.socket.ping();
    }
  }, PING_MS);
  pinger.unref();

  return {
    connected: () => [...live.keys()],
    async close() {
      clearInterval(pinger);
      server.off('upgrade', onUpgrade);
      await unpaired.unsubscribe();
      await grants.unsubscribe();
      for (const l of [...live.values()]) {
        await drop(l, 'shutting down');
        l.socket.close(1001, 'the platform is restarting');
      }
      wss.close();
    },
  };
}
