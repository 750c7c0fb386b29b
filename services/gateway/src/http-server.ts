import http from 'node:http';
import type { Duplex } from 'node:stream';

import type express from 'express';

type Construct = (this: unknown, ...args: unknown[]) => void;

/**
 * Options for node's HTTP server that build each request and response with express's own
 * prototypes (`app.request`, `app.response`) from the start. Without them express swaps the
 * prototypes of node's objects on every request (`Object.setPrototypeOf` in `app.handle`), which
 * V8 handles badly: the request and response objects change shape, and most of what a request
 * allocates survives into the old generation. On the development machine a one-route express
 * app went from ~8,000 to ~20,000 requests/s with the swap made a no-op (scripts/bench/auth.js
 * measures both). Express still calls `setPrototypeOf`; with the prototype already in place V8
 * returns at once.
 *
 * Node's IncomingMessage and ServerResponse are plain constructor functions (Node 20–24); should
 * a release make them classes, which cannot be called this way, express's own swap stays.
 */
export function expressServerOptions(app: express.Express): http.ServerOptions {
  const isClass = (f: unknown) => /^class\b/.test(Function.prototype.toString.call(f));
  if (isClass(http.IncomingMessage) || isClass(http.ServerResponse)) return {};
  const incoming = http.IncomingMessage as unknown as Construct;
  const outgoing = http.ServerResponse as unknown as Construct;
  function Request(this: unknown, ...args: unknown[]) {
    incoming.apply(this, args);
  }
  function Response(this: unknown, ...args: unknown[]) {
    outgoing.apply(this, args);
  }
  Request.prototype = app.request;
  Response.prototype = app.response;
  return {
    IncomingMessage: Request as unknown as typeof http.IncomingMessage,
    ServerResponse: Response as unknown as typeof http.ServerResponse,
  };
}

/** What node's parser errors mean to a client (node's own answers carry no body). */
function clientErrorAnswer(code: string | undefined): [number, string, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'The request headers are too large.'];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'payload_too_large', 'The chunk extensions of the request body are too large.'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'The request was not received in time.'];
    default:
      return [400, 'bad_request', 'The request is not valid HTTP.'];
  }
}

/**
 * A request node cannot parse (headers over the limit, malformed HTTP, a timeout) never reaches
 * express: node answers it with a bare status line. This answers with the contract's error body
 * instead, under the same rule as node's: only when no answer has started on the connection.
 */
export function answerClientErrors(server: http.Server, nextRequestId: () => string): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    if (err.code !== 'ECONNRESET' && socket.writable && !socket._httpMessage?.headersSent) {
      const [status, code, message] = clientErrorAnswer(err.code);
      const requestId = nextRequestId();
      const body = JSON.stringify({ error: { code, message, requestId } });
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  });
}

/** The wait a 503 asks for when its cause named none (an unavailable service, a draining gateway). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

/**
 * Rules every answer of the app obeys, applied where node writes the status line (the app's
 * response prototype, so that no front can miss them and no request allocates for them):
 * - a 503 carries `Retry-After` (the contract's retry rule: docs/reliability.md), the error's own
 *   wait when it gave one, else UNAVAILABLE_RETRY_AFTER_SECONDS;
 * - once `draining()` (SIGTERM came), every answer says `Connection: close`, so that a client
 *   sends its next request on a new connection (to a replica that is not stopping) instead of
 *   reusing one this process is about to close. Node then closes the connection after the answer.
 */
export function applyAnswerRules(app: express.Express, draining: () => boolean): void {
  const response = app.response as unknown as http.ServerResponse;
  const writeHead = http.ServerResponse.prototype.writeHead;
  response.writeHead = function (this: http.ServerResponse, status: number, ...rest: unknown[]) {
    if (status === 503 && !this.hasHeader('retry-after')) this.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    if (draining()) this.setHeader('Connection', 'close');
    return (writeHead as (...a: unknown[]) => http.ServerResponse).call(this, status, ...rest);
  } as typeof response.writeHead;
}
