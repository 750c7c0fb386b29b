import type express from 'express';

import type { ContentDeps } from '@svc/dispatch';

import type { Authenticator } from '../auth.js';
import { mountMcp } from './mcp/index.js';
import { mountDav } from './webdav/index.js';

/** What the protocol fronts share: the authentication step and what moving drive content needs. */
export interface FrontDeps extends ContentDeps {
  auth: Authenticator;
  /** Browser origins allowed on /mcp (SVC_MCP_ALLOWED_ORIGINS). */
  mcpAllowedOrigins: string[];
}

/** Protocol fronts (WebDAV, MCP; Git and the host connection to come), each on its own path. */
export function mountProtocols(app: express.Express, deps: FrontDeps): void {
  mountDav(app, deps);
  mountMcp(app, { auth: deps.auth, registry: deps.registry, log: deps.log, allowedOrigins: deps.mcpAllowedOrigins });
}
