import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

import { type CheckedUrl, pinnedLookup } from './address-guard.js';

/**
 * A `fetch` that connects only to the addresses of a checked URL (`checkOutboundUrl`, then
 * `pinnedLookup`): an account's custom model `baseUrl`, or an OAuth client's metadata document,
 * cannot be turned toward the platform's own network by a second DNS answer (rebinding), nor by a
 * redirect (redirects are not followed), nor by a request to another host (refused). The response
 * body streams.
 */
export function pinnedFetch(checked: CheckedUrl): typeof fetch {
  const lookup = pinnedLookup(checked);
  const agent = checked.url.protocol === 'https:' ? new https.Agent({ keepAlive: true, lookup }) : new http.Agent({ keepAlive: true, lookup });
  const origin = checked.url.origin;
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (url.origin !== origin) throw new TypeError(`fetch to ${url.origin} refused: only ${origin} (the checked baseUrl) is reached`);
    const headers: Record<string, string> = {};
    new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined)).forEach((v, k) => (headers[k] = v));
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new TypeError('pinnedFetch sends string or byte bodies only');
    }
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    return new Promise<Response>((resolve, reject) => {
      const mod = url.protocol === 'https:' ? https : http;
      const req = mod.request(url, { method: init.method ?? 'GET', headers, agent, signal }, (res) => {
        const out = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) out.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const status = res.statusCode ?? 502;
        const empty = status === 204 || status === 304 || init.method === 'HEAD';
        if (empty) res.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>), {
            status,
            statusText: res.statusMessage,
            headers: out,
          }),
        );
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  }) as typeof fetch;
}
