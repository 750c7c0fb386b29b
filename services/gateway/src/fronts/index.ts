import type express from 'express';

import type { ContentDeps } from '@svc/dispatch';

import type { LocalHandler } from '../app.js';
import type { Authenticator } from '../auth.js';
import { driveHandlers } from './api/drive.js';
import { mountDav } from './webdav/index.js';

/** What the fronts share: the authentication step and what moving drive content needs. */
export interface FrontDeps extends ContentDeps {
  auth: Authenticator;
}

/** Gateway-side handlers for routes declared with `handler: {kind: 'local', name}`. */
export function localHandlers(deps: FrontDeps): Record<string, LocalHandler> {
  return { ...driveHandlers(deps) };
}

/** Protocol fronts (WebDAV; Git, SSE and the host connection to come), each on its own path. */
export function mountProtocols(app: express.Express, deps: FrontDeps): void {
  mountDav(app, deps);
}
