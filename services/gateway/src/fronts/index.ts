import type express from 'express';

import type { ContentDeps } from '@svc/dispatch';

import type { Authenticator } from '../auth.js';
import { mountDav } from './webdav/index.js';

/** What the protocol fronts share: the authentication step and what moving drive content needs. */
export interface FrontDeps extends ContentDeps {
  auth: Authenticator;
}

/** Protocol fronts (WebDAV; Git, SSE and the host connection to come), each on its own path. */
export function mountProtocols(app: express.Express, deps: FrontDeps): void {
  mountDav(app, deps);
}
