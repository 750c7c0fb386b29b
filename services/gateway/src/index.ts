import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { MODELS_CACHE, routes } from '@svc/api';
import { AnswerCache, createDispatcher, type Dispatcher, LiveStreams, RateLimiter } from '@svc/dispatch';
import {
  AccountLimiter,
  type Backends,
  type Config,
  createHashPool,
  createSystemTokenSource,
  GRPC_SERVICE_NAMES,
  type Logger,
  PrincipalSigner,
  type Registry,
} from '@svc/kit';
import { isToolOperation } from '@svc/tools';

import { createApp, nextRequestId } from './app.js';
import { Authenticator } from './auth.js';
import { systemOperations } from './fronts/api/system.js';
import { Fronts } from './fronts/gate.js';
import { GitFront } from './fronts/git/index.js';
import { attachHostFront } from './fronts/hosts/index.js';
import { mountProtocols } from './fronts/index.js';
import { mountOauth, OauthServer } from './fronts/oauth/index.js';
import { SiteDomainCache } from './fronts/sites/domains.js';
import { closeHealthClients } from './health-client.js';
import { answerClientErrors, applyAnswerRules, expressServerOptions } from './http-server.js';
import { apiScriptTools } from './script-tools.js';
import type { GatewaySettings } from './settings.js';

export { createApp } from './app.js';
export { Authenticator } from './auth.js';
export { AUTH_FAILURE_LIMIT } from './auth-failures.js';
export { presentedSecret } from './credentials.js';
export { firstSegment, Fronts } from './fronts/gate.js';
export { expressServerOptions } from './http-server.js';
export { compileRoutes } from './routing.js';
export { DEFAULT_ACCOUNT_LIMITS, DEFAULT_KEY_LIMITS, type GatewaySettings, gatewaySettingsSchema } from './settings.js';

export interface RunningGateway {
  port: number;
  server: http.Server;
  stop(graceMs: number): Promise<void>;
}

/** How often this replica's key usage counts go to the shared cache. */
const USAGE_FLUSH_MS = 1000;

export async function startGateway(deps: {
  config: Config;
  log: Logger;
  backends: Backends;
  registry: Registry;
  host: string;
  port: number;
  version: string;
  /** The gateway's own settings (settings.ts), read by the stack with every service's. */
  settings: GatewaySettings;
}): Promise<RunningGateway> {
  const log = deps.log.child({ component: 'gateway' });
  const signer = new PrincipalSigner(deps.config.internalSecret);
  const systemToken = createSystemTokenSource(signer);
  const auth = new Authenticator({ registry: deps.registry, signer, systemToken, log });
  const [bus, cache] = await Promise.all([deps.backends.bus(), deps.backends.cache()]);

  // Every replica hears every revocation (a broadcast, not a work queue) and evicts the key at once.
  const revoked = await bus.subscribe('keys.key.revoked', async (event) => {
    const id = (event.data as { id?: string }).id;
    if (id) auth.evict(id);
  });
  // A member removed or given another role: its cached principals in that organization go, and
  // what it holds open there (live streams, transfers) ends within the event's delivery.
  const membership = await bus.subscribe('accounts.member.*', async (event) => {
    const data = event.data as { action?: string; memberId?: unknown };
    if ((data.action === 'member.removed' || data.action === 'member.role_changed') && typeof data.memberId === 'string') {
      auth.endMembership(event.accountId, data.memberId);
    } else auth.evictAccount(event.accountId);
  });
  // An agent deleted or moved to another account: OAuth tokens acting as it (on any replica) go.
  const agentsGone = await bus.subscribe('agents.agent.*', async (event) => {
    const data = event.data as { agent?: { id?: unknown } };
    if ((event.type === 'agents.agent.deleted' || event.type === 'agents.agent.owner_changed') && typeof data.agent?.id === 'string') {
      auth.evictAgent(data.agent.id);
    }
  });
  // An account's provider keys changed (on any replica): its cached model listings go.
  const answers = new AnswerCache();
  const providerKeys = await bus.subscribe('models.provider_key.*', async (event) => {
    answers.evict(MODELS_CACHE.tag, event.accountId);
  });
  // A site's custom domain verified, removed or made pending by a re-check, or the site deleted
  // (on any replica): what this replica knows of those host names goes (docs/sites.md, "Custom domains").
  const siteDomains = new SiteDomainCache();
  const domainChanges = await bus.subscribe('drive.site.*', async (event) => {
    const data = event.data as { domain?: unknown; domains?: unknown };
    for (const name of [data.domain, ...(Array.isArray(data.domains) ? data.domains : [])]) if (typeof name === 'string') siteDomains.forget(name);
  });
  // The authorization server (docs/oauth.md): its tokens are accepted on /mcp and the API, and a
  // grant revoked on any replica (published by the accounts service) is forgotten on every one.
  const oauth =
    deps.settings.SVC_OAUTH === 'on'
      ? new OauthServer({
          registry: deps.registry,
          systemToken,
          signer,
          log,
          secret: deps.config.internalSecret,
          trustProxy: deps.settings.SVC_TRUST_PROXY !== false,
          settings: {
            accessTokenTtlSeconds: deps.settings.SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS,
            refreshTokenTtlSeconds: deps.settings.SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS,
            metadataAllowedHosts: deps.settings.SVC_OAUTH_METADATA_ALLOWED_HOSTS,
          },
          areas: [...new Set(routes.filter(isToolOperation).map((r) => r.tag))].sort(),
          revoked: (grantId) => auth.evictGrant(grantId),
        })
      : undefined;
  if (oauth) auth.useOauth((token, resource) => oauth.verify(token, resource));
  const grants = await bus.subscribe('accounts.oauth.*', async (event) => {
    // Revocations only: a new grant or a refresh (accounts.oauth.authorized, .refreshed) ends nothing.
    const { grantId, action } = event.data as { grantId?: unknown; action?: unknown };
    if (typeof grantId === 'string' && (action === 'oauth.grant_revoked' || action === 'oauth.tokens_revoked')) auth.evictGrant(grantId);
  });
  const usageTimer = setInterval(() => {
    auth.flushUsage(cache).catch((err) => log.warn({ err }, 'usage flush failed'));
  }, USAGE_FLUSH_MS);
  usageTimer.unref();

  // Drive content is hashed on worker threads (started on the first large transfer).
  const hashes = createHashPool({ name: 'gateway-sha256' });
  // Git repositories are materialised in a directory of this process's own (docs/git.md).
  const git = new GitFront(
    { log, registry: deps.registry, backends: deps.backends, hashes },
    { buildsPerAccount: deps.settings.SVC_GIT_BUILDS_PER_ACCOUNT },
  );
  // Uploads in progress per account on this replica (docs/reliability.md, "Fair shares").
  const uploads = new AccountLimiter({ name: 'uploads', what: 'uploads', perAccount: deps.settings.SVC_UPLOADS_PER_ACCOUNT });
  const local = {
    uploads,
    git,
    log,
    registry: deps.registry,
    auth,
    backends: deps.backends,
    hashes,
    systemToken,
    sitesHost: deps.settings.SVC_SITES_HOST,
    siteDomains,
    mcpAllowedOrigins: deps.settings.SVC_MCP_ALLOWED_ORIGINS,
    mcpPageSize: deps.settings.SVC_MCP_TOOLS_PAGE_SIZE,
    answers,
    version: deps.version,
  };

  const { SVC_RATE_LIMITS: perKey, SVC_RATE_LIMITS_ACCOUNT: perAccount } = deps.settings;
  const limiter =
    perKey || perAccount
      ? new RateLimiter(cache, perKey, perAccount, (err) => log.warn({ err }, 'rate limits unavailable: requests pass unlimited'))
      : undefined;

  // Set by stop() (SIGTERM): /ready answers 503 at once and every answer says `Connection: close`.
  let draining = false;
  // The process's one dispatcher, shared by the API and MCP fronts: every `local` operation from
  // one table (it throws here, at start, when one is missing), one cache of answers, and one
  // count of live event streams per key, whichever operation serves them (threads, trading).
  const dispatcher: Dispatcher = createDispatcher({
    ...local,
    streams: new LiveStreams(deps.settings.SVC_SSE_MAX_STREAMS_PER_KEY),
    operations: systemOperations({
      registry: deps.registry,
      backends: deps.backends,
      services: [...GRPC_SERVICE_NAMES],
      version: deps.version,
      routes,
      log,
      draining: () => draining,
    }),
    onKeyRevoked: (id) => auth.evict(id),
    // Scripts run through the API may call tools as their caller (code mode).
    scriptTools: apiScriptTools(() => dispatcher),
    // Every front's calls draw on the same buckets (the dispatcher meters them).
    limiter,
  });
  const app = createApp({
    log,
    dispatcher,
    auth,
    bodyLimit: deps.settings.SVC_BODY_LIMIT,
    trustProxy: deps.settings.SVC_TRUST_PROXY,
    mount: (app) => {
      // The fronts are one layer of the app, each entered only for its own paths (fronts/gate.ts).
      const fronts = new Fronts();
      if (oauth) {
        const router = fronts.add({ segments: ['oauth', '.well-known'] });
        app.locals.challenge = mountOauth(router, {
          auth,
          oauth,
          registry: deps.registry,
          signer,
          systemToken,
          log,
          secret: deps.config.internalSecret,
        });
      }
      mountProtocols(fronts, { ...local, dispatcher });
      app.use(fronts.handler());
    },
  });
  applyAnswerRules(app, () => draining);
  const server = http.createServer(expressServerOptions(app), app);
  answerClientErrors(server, nextRequestId);
  const hostFront = await attachHostFront(server, { auth, bus, log });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.port, deps.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  oauth?.setIssuer(deps.settings.SVC_PUBLIC_URL ?? `http://${deps.host === '0.0.0.0' || deps.host === '::' ? 'localhost' : deps.host}:${port}`);
  log.info({ port }, 'gateway listening');
  return {
    port,
    server,
    // Drains: stops accepting, answers what is in flight (each answer with `Connection: close`),
    // closes each keep-alive connection as soon as it is idle, and cuts what is left at graceMs.
    async stop(graceMs) {
      draining = true;
      // Live event streams end now (their clients resume on another replica), not at the grace's end.
      auth.streams.drain();
      const drained = new Promise<void>((resolve) => {
        const done = () => {
          clearInterval(idle);
          clearTimeout(timer);
          resolve();
        };
        // A connection whose answer began before SIGTERM (no `Connection: close` on it) goes idle later.
        const idle = setInterval(() => server.closeIdleConnections(), 200);
        const timer = setTimeout(() => {
          server.closeAllConnections();
          done();
        }, graceMs);
        idle.unref();
        timer.unref();
        server.close(done);
        server.closeIdleConnections();
      });
      clearInterval(usageTimer);
      limiter?.close();
      await revoked.unsubscribe();
      await grants.unsubscribe();
      await membership.unsubscribe();
      await agentsGone.unsubscribe();
      await hostFront.close();
      await providerKeys.unsubscribe();
      await domainChanges.unsubscribe();
      await drained;
      await auth.flushUsage(cache).catch(() => {});
      await hashes.close();
      await git.close();
      closeHealthClients();
    },
  };
}
