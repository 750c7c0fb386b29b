/**
 * Git over smart HTTP (docs/git.md), at /git/ (and /v1/git/):
 * - /git/profiles/<profileId>.git: a taste profile, read-only (clone, fetch);
 * - /git/sites/<slug or id>.git: a hosted site; a push to main deploys it.
 * HTTP Basic with the API key as the password (any user name), as WebDAV; without a usable key
 * the answer is 401 with `WWW-Authenticate: Basic realm="svc"`, so that git asks for one. The
 * repositories are materialised from the services' data in a per-process cache and served by
 * git's own upload-pack and receive-pack.
 */
import type express from 'express';
import type { Request, Response } from 'express';

import { routes } from '@svc/api';
import { type Access, checkPrincipal, type ContentDeps, type Dispatcher, driveCalls, profilesCalls } from '@svc/dispatch';
import { AccountLimiter, DomainError } from '@svc/kit';

import type { Authenticator } from '../../auth.js';
import type { AuthContext } from '../../credentials.js';
import { actingAccount, clientAddress, presentedSecret } from '../../credentials.js';
import { GitCache } from './cache.js';
import { ProfileRepos } from './profiles.js';
import { PushAborted, SiteRepos } from './sites.js';
import { advertise, type Service, uploadPack } from './smart.js';

/** Who may use Git: people and agents (not hosts). Pushing a site also needs what deploying through the API needs. */
export const GIT_ACCESS: Access = { principals: ['human', 'agent'], authority: false };

export interface GitDeps extends ContentDeps {
  auth: Authenticator;
  /** The process's dispatcher: the drive and profile calls are its internal operations, made as the caller. */
  dispatcher: Dispatcher;
  git: GitFront;
  /** SVC_SITES_HOST, to name a site's URL after a push. */
  sitesHost?: string;
}

/** The front's state: its cache of repositories (removed on close), and the Git requests each account has in progress. */
export class GitFront {
  readonly cache = new GitCache();
  readonly profiles: ProfileRepos;
  readonly sites: SiteRepos;
  /** Each request brings a repository up to date and runs git (a pack, a push's deploy): capped per account. */
  readonly builds: AccountLimiter;

  constructor(deps: ContentDeps, limits: { buildsPerAccount?: number } = {}) {
    this.builds = new AccountLimiter({
      name: 'git_builds',
      what: 'Git requests (repository builds, packs, pushes)',
      perAccount: limits.buildsPerAccount ?? 2,
    });
    this.profiles = new ProfileRepos({ cache: this.cache });
    this.sites = new SiteRepos({ ...deps, cache: this.cache });
  }

  close(): Promise<void> {
    return this.cache.close();
  }
}

/** `<kind>/<name>.git/<action>`: what a request names. */
const PATH_RE = /^\/(profiles|sites)\/([A-Za-z0-9_-]{1,128})\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/;

function text(res: Response, status: number, message: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.end(`${message}\n`);
}

const DEPLOY = routes.find((r) => r.id === 'sites.deploy');

async function handle(deps: GitDeps, req: Request, res: Response, auth: AuthContext, prefix: string): Promise<void> {
  const m = PATH_RE.exec(req.path);
  if (!m) return text(res, 404, 'Not a repository: use /git/profiles/<profileId>.git or /git/sites/<slug>.git.');
  const [, kind, name, action] = m as unknown as [string, 'profiles' | 'sites', string, string];
  let service: Service;
  if (action === 'info/refs') {
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'info/refs is read with GET.');
    const s = req.query.service;
    if (s !== 'git-upload-pack' && s !== 'git-receive-pack')
      return text(res, 403, 'Only smart HTTP is served: use a git client (service=git-upload-pack).');
    service = s;
  } else {
    if (req.method !== 'POST') return text(res, 405, `${action} takes POST.`);
    service = action as Service;
  }
  const inv = { requestId: req.requestId, auth };
  const home = deps.git.cache.root;

  if (kind === 'profiles') {
    if (service === 'git-receive-pack') {
      return text(res, 403, 'Taste profile repositories are read-only: commit through the API (POST /profiles/:id/commits).');
    }
    // The POSTs of an exchange reuse what its info/refs (just now, same key) brought up to date.
    const gitdir = await deps.git.profiles.sync(name, profilesCalls(deps.dispatcher, inv), { keyId: auth.keyId, continues: action !== 'info/refs' });
    return action === 'info/refs' ? advertise(req, res, gitdir, service, home) : uploadPack(req, res, gitdir, home);
  }

  const drive = driveCalls(deps.dispatcher, inv);
  const site = await deps.git.sites.site(name, drive);
  if (service === 'git-receive-pack') {
    // The same rule as deploying through the API (POST /sites/:id/deployments).
    if (DEPLOY) checkPrincipal(auth.principal, DEPLOY);
    if (action === 'info/refs') return advertise(req, res, await deps.git.sites.sync(site, drive), service, home);
    const host = req.get('host') ?? 'localhost';
    const url = deps.sitesHost
      ? `${req.protocol}://${site.slug}.${deps.sitesHost.replace(/^\*\./, '')}/`
      : `${req.protocol}://${host}${prefix.replace(/\/git$/, '')}/sites/${site.slug}/`;
    const out = await deps.git.sites.push(req, site, drive, url);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/x-git-receive-pack-result');
    res.setHeader('Cache-Control', 'no-cache');
    return void res.end(out.body);
  }
  const gitdir = await deps.git.sites.sync(site, drive);
  return action === 'info/refs' ? advertise(req, res, gitdir, service, home) : uploadPack(req, res, gitdir, home);
}

/** Mounts /git (and /v1/git). */
export function mountGit(app: express.Router, deps: GitDeps): void {
  app.use('/git', (req: Request, res: Response) => {
    const prefix = req.originalUrl.startsWith('/v1/') ? '/v1/git' : '/git';
    const run = async () => {
      const auth = await deps.auth.authenticate(
        presentedSecret(req.headers.authorization, { basic: true }),
        // x-svc-account (git -c http.extraHeader=...) acts in an organization, as on the API.
        actingAccount(req.headers),
        clientAddress(req),
      );
      checkPrincipal(auth.principal, GIT_ACCESS);
      // The API's buckets, through the dispatcher: a push's requests are `write`, a fetch's `read`.
      // The drive and profile calls a request then makes are internal operations, which draw nothing more.
      const metering = deps.dispatcher.meter(req.url.includes('git-receive-pack') ? 'write' : 'read', auth.principal, res);
      if (metering) await metering;
      // A clone or push in flight is cut if its key is revoked or expires (git is killed with it).
      deps.auth.holdResponse(auth, res);
      const release = deps.git.builds.acquire(auth.principal);
      try {
        await handle(deps, req, res, auth, prefix);
      } finally {
        release();
      }
    };
    run().catch((err: unknown) => {
      if (res.headersSent || err instanceof PushAborted) return void res.destroy();
      if (err instanceof DomainError) {
        if (err.kind === 'unauthenticated') res.setHeader('WWW-Authenticate', 'Basic realm="svc"');
        if (err.details?.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.details.retryAfterSeconds));
        return text(res, err.httpStatus, err.message);
      }
      deps.log.error({ err, requestId: req.requestId }, 'git request failed');
      text(res, 500, 'Internal error.');
    });
  });
}
