import type express from 'express';

import type { Backends, HashPool, Logger, Registry } from '@svc/kit';

import type { LocalHandler } from '../app.js';
import type { Authenticator } from '../auth.js';
import { mountDav } from './dav.js';
import { driveHandlers, protectRawBodies } from './drive.js';

export interface LocalDeps {
  log: Logger;
  registry: Registry;
  auth: Authenticator;
  /** The blob store (drive content goes through the gateway, not through the drive service). */
  backends: Pick<Backends, 'blobs'>;
  /** SHA-256 of content on its way in and out, on worker threads. */
  hashes: HashPool;
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
