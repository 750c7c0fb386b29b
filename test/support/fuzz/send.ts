import http from 'node:http';

import type { HttpRequest } from './input';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The exchange failed: no answer, a reset, a timeout. */
  error?: string;
  ms: number;
}

/**
 * Sends a request exactly as built (node's client: the path is not normalised, `..` and `%2e`
 * reach the server as written). An event stream is read up to its first bytes, then closed.
 */
export function send(base: string, req: HttpRequest, timeoutMs: number, localAddress?: string): Promise<HttpAnswer> {
  const url = new URL(base);
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Omit<HttpAnswer, 'ms'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...a, ms: Date.now() - started });
    };
    let r: http.ClientRequest;
    try {
      // A connection per request: a kept-alive one the server closes while idle would fail the next
      // request sent on it ("socket hang up"), a client's race and not an answer.
      r = http.request({
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers: req.headers,
        agent: false,
        localAddress,

        timeout: timeoutMs,
      });
    } catch (err) {
      return done({ status: 0, headers: {}, text: '', error: `not sent: ${(err as Error).message}` });
    }
    r.on('response', (res) => {
      const chunks: Buffer[] = [];
      const stream = /text\/event-stream/.test(String(res.headers['content-type'] ?? ''));
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        if (stream) {
          res.destroy();
          done({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        }
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) =>
        done({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), error: err.message }),
      );
      if (stream) setTimeout(() => (res.destroy(), done({ status: res.statusCode ?? 0, headers: res.headers, text: '' })), 2000).unref();
    });
    r.on('timeout', () => {
      r.destroy();
      done({ status: 0, headers: {}, text: '', error: `no answer in ${timeoutMs} ms` });
    });
    // The server may answer (413, 400) before it read the whole body and close: the answer counts.
    r.on('error', (err) => setTimeout(() => done({ status: 0, headers: {}, text: '', error: err.message }), 200));
    r.end(req.body);
  });
}
