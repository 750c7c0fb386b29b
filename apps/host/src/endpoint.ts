import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { type Control, ControlError } from './control.js';
import { HostSetupError } from './credential.js';
import type { Log } from './log.js';

/** The only addresses the endpoint listens on, whatever the configuration says. */
export const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'] as const;
/** Host headers a local client sends (any port); anything else is a DNS-rebinding page or a mistake. */
const HOST_HEADER_RE = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$/i;
/** A write_file of 512 KiB as JSON (base64 or escaped text) fits. */
const MAX_BODY = 1024 * 1024;

export interface Endpoint {
  port: number;
  /** Where it listens (127.0.0.1, and ::1 where the machine has IPv6 loopback). */
  addresses: string[];
  close(): Promise<void>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

const refuse = (res: http.ServerResponse, status: number, code: string, message: string) => send(res, status, { error: { code, message } });

/**
 * Why a request is refused before anything else is read, or undefined. A browser page can reach
 * 127.0.0.1 too: every browser request that could carry a body sends `Origin` (even `null`), and a
 * DNS-rebinding page sends its own name as `Host`; no CORS is ever answered, so OPTIONS (a
 * preflight) is refused as well.
 */
export function guard(req: http.IncomingMessage): [number, string, string] | undefined {
  if (req.headers.origin !== undefined) return [403, 'origin_refused', 'Requests from web pages (an Origin header) are refused by the local host.'];
  const host = req.headers.host;
  if (!host || !HOST_HEADER_RE.test(host)) return [403, 'host_refused', 'The Host header must be 127.0.0.1, localhost or [::1] (with its port).'];
  if (req.method === 'OPTIONS') return [403, 'method_refused', 'OPTIONS is refused: the local host answers no cross-origin request.'];
  return undefined;
}

/**
 * The local control endpoint: `POST /control/<tool>` with a JSON object of arguments, answered
 * `{"result": …}` or `{"error": {code, message}}`. Bound to loopback only; every request carries
 * `Authorization: Bearer <host credential>`.
 */
export async function startEndpoint(o: { port: number; credential: string; control: Control; log: Log }): Promise<Endpoint> {
  const want = digest(o.credential);
  const authorized = (header: string | undefined) => {
    const m = /^Bearer (\S+)$/i.exec(header ?? '');
    return !!m && timingSafeEqual(digest(m[1]!), want);
  };

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const refused = guard(req);
    if (refused) {
      req.resume();
      return refuse(res, ...refused);
    }
    if (!authorized(req.headers.authorization)) {
      req.resume();
      return refuse(res, 401, 'unauthenticated', 'Every request needs Authorization: Bearer <host credential>.');
    }
    const m = /^\/control\/([a-z_]{1,64})$/.exec((req.url ?? '').split('?')[0]!);
    if (!m) {
      req.resume();
      return refuse(res, 404, 'not_found', 'The local host serves POST /control/<tool>.');
    }
    if (req.method !== 'POST') {
      req.resume();
      res.setHeader('allow', 'POST');
      return refuse(res, 405, 'method_not_allowed', 'Control tools are called with POST.');
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      req.resume();
      return refuse(res, 415, 'unsupported_media_type', 'The body must be JSON (Content-Type: application/json).');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        refuse(res, 413, 'payload_too_large', 'Arguments are at most 1 MiB.');
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      let args: unknown;
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        args = text.trim() ? JSON.parse(text) : {};
      } catch {
        return refuse(res, 400, 'invalid_json', 'The body is not valid JSON.');
      }
      o.control.call(m[1]!, args, { via: 'local' }).then(
        (result) => send(res, 200, { result }),
        (err: unknown) => {
          if (err instanceof ControlError) return refuse(res, err.status, err.code, err.message);
          o.log.error('control tool failed', { tool: m[1], error: (err as Error).message });
          refuse(res, 500, 'internal_error', 'The tool failed.');
        },
      );
    });
  };

  const servers: http.Server[] = [];
  const addresses: string[] = [];
  let port = o.port;
  for (const address of LOOPBACK_ADDRESSES) {
    const server = http.createServer(handler);
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: address, port, ipv6Only: address === '::1' }, () => resolve());
      });
    } catch (err) {
      // No IPv6 loopback on this machine: 127.0.0.1 alone. Any other failure is the user's to see.
      if (address === '::1' && ['EADDRNOTAVAIL', 'EAFNOSUPPORT'].includes((err as NodeJS.ErrnoException).code ?? '')) {
        o.log.warn('local endpoint: no IPv6 loopback, listening on 127.0.0.1 only');
        continue;
      }
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new HostSetupError(
          `The port ${port} on ${address} is in use (another svc-host?): stop what holds it, or set SVC_HOST_PORT to a free port.`,
        );
      }
      throw err;
    }
    port = (server.address() as AddressInfo).port;
    servers.push(server);
    addresses.push(address);
  }
  o.log.info('local endpoint listening', { addresses, port });
  return {
    port,
    addresses,
    async close() {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((r) => {
              s.close(() => r());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}
