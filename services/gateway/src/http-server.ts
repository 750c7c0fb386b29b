import http from 'node:http';

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
