import type express from 'express';

import type { Logger, Registry } from '@svc/kit';

import type { LocalHandler } from '../app.js';
import type { Authenticator } from '../auth.js';
import { mountDav } from './dav.js';
import { driveHandlers, protectRawBodies } from './drive.js';

export interface LocalDeps {
  log: Logger;
  registry: Registry;
  auth: Authenticator;
}

/**
 * Gateway-side handlers for routes declared with `handler: {kind: 'local', name}` that need more
 * than one unary gRPC call (streamed bodies, protocol fronts). Each module adds its own here.
 */
export function localHandlers(deps: LocalDeps): Record<string, LocalHandler> {
  return { ...driveHandlers(deps) };
}

/** Protocol fronts (WebDAV, Git) that live outside the route table; see GatewayDeps.mount. */
export function mountProtocols(app: express.Express, deps: LocalDeps): void {
  protectRawBodies(app);
  mountDav(app, deps);
}
