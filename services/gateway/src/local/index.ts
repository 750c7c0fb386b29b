import type express from 'express';

import type { Logger, Registry } from '@svc/kit';

import type { LocalHandler } from '../app.js';
import type { Authenticator } from '../auth.js';

export interface LocalDeps {
  log: Logger;
  registry: Registry;
  auth: Authenticator;
}

/**
 * Gateway-side handlers for routes declared with `handler: {kind: 'local', name}` that need more
 * than one unary gRPC call (streamed bodies, protocol fronts). Each module adds its own here.
 */
export function localHandlers(_deps: LocalDeps): Record<string, LocalHandler> {
  return {};
}

/** Protocol fronts (WebDAV, Git) that live outside the route table; see GatewayDeps.mount. */
export function mountProtocols(_app: express.Express, _deps: LocalDeps): void {}
