import type { ContentDeps, Dispatcher } from '@svc/dispatch';

import type { Authenticator } from '../auth.js';
import type { FrontClaim, Fronts } from './gate.js';
import { type GitFront, mountGit } from './git/index.js';
import { connectPath, mountHostConnect } from './hosts/index.js';
import { mountMcp } from './mcp/index.js';
import { mountSites, sitePath, type SitesDeps } from './sites/index.js';
import { mountDav } from './webdav/index.js';

/** What the protocol fronts share: the authentication step and what moving drive content needs. */
export interface FrontDeps extends ContentDeps, SitesDeps {
  auth: Authenticator;
  /** The process's one dispatcher (the API's too). */
  dispatcher: Dispatcher;
  /** The Git front's repositories (closed with the gateway). */
  git: GitFront;
  /** Browser origins allowed on /mcp (SVC_MCP_ALLOWED_ORIGINS). */
  mcpAllowedOrigins: string[];
  /** Tools per tools/list page of /mcp (SVC_MCP_TOOLS_PAGE_SIZE). */
  mcpPageSize: number;
  version: string;
}

/**
 * Protocol fronts (public sites, WebDAV, Git, MCP), each on its own path (sites on their own host
 * names too). The host connection is a WebSocket upgrade, taken on the HTTP server itself
 * (hosts/index.ts); here a plain GET of its path is told so.
 */
export function mountProtocols(fronts: Fronts, deps: FrontDeps): void {
  // Sites and hosts share their segments with API routes (/sites/:id, /hosts/:hostId).
  const sites: FrontClaim = { segments: ['sites'], path: sitePath };
  sites.host = mountSites(fronts.add(sites), deps);
  mountDav(fronts.add({ segments: ['dav'] }), deps);
  mountGit(fronts.add({ segments: ['git'] }), deps);
  mountHostConnect(fronts.add({ segments: ['hosts'], path: connectPath }));
  mountMcp(fronts.add({ segments: ['mcp'] }), { ...deps, allowedOrigins: deps.mcpAllowedOrigins, pageSize: deps.mcpPageSize });
}
