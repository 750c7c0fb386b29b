/**
 * The OAuth front (docs/oauth.md): protected resource metadata (RFC 9728), the authorization
 * server's own endpoints (oidc-provider under /oauth, its metadata at the RFC 8414 and OpenID
 * well-known paths), and the pages a person uses: sign-in (by API key or passkey), consent,
 * connected apps, passkeys.
 */
import express, { type Request, type Response } from 'express';

import { accountsClient } from '@svc/clients';
import { DomainError, type Logger, type PrincipalSigner, type Registry, setHttpRoute } from '@svc/kit';

import type { Authenticator } from '../../auth.js';
import { clientAddress } from '../../credentials.js';
import type { ChallengeOf } from '../../replies.js';
import { appsPage, type AppView, consentPage, ICON, messagePage, signInPage, STYLE } from './pages.js';
import { mountPasskeys, passkeySignIn } from './passkeys.js';
import { RegistrationLimit } from './registrations.js';
import { describeScope, narrowScope, resourceMetadata, WRITE_SCOPE } from './resources.js';
import { PASSKEYS_SCRIPT, webauthnBundle } from './script.js';
import type { OauthServer } from './server.js';
import { actAs, agentOf, agentOfPerson, agentsOfPerson } from './subject.js';
import { sendPage, WebSecurity } from './web.js';

export { OauthServer } from './server.js';

export interface OauthFrontDeps {
  auth: Authenticator;
  oauth: OauthServer;
  registry: Registry;
  signer: PrincipalSigner;
  systemToken: () => Promise<string>;
  log: Logger;
  secret: string;
}

/** Paths oidc-provider answers (the rest of /oauth is the pages'). */
const PROVIDER_PATH = /^\/(oauth\/(authorize|token|register|revoke|jwks)(\/|$)|\.well-known\/openid-configuration$)/;
const PAGES = /^\/oauth\/(interaction|apps|passkeys|signin|signout|static)(\/|$)/;
/** Where the API-key sign-in of the pages may return to. */
const RETURNS = new Set(['/oauth/apps', '/oauth/passkeys']);

/**
 * Mounts the authorization server, its pages and the resources' metadata; returns the challenge
 * the API's and /mcp's 401s carry (the app keeps it in its locals, replies.ts).
 */
export function mountOauth(app: express.Router, deps: OauthFrontDeps): ChallengeOf {
  const { oauth, auth } = deps;
  let web: WebSecurity | undefined;
  const webOf = () => (web ??= new WebSecurity(deps.secret, new URL(oauth.issuer).origin));
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const readForm = (req: Request, res: Response) =>
    new Promise<void>((resolve, reject) => form(req, res, (err?: unknown) => (err ? reject(err) : resolve())));

  // The 401s of /mcp and of the API name the resource's metadata and the scope to ask for.
  const challengeOf: ChallengeOf = (req, err) => {
    if (!auth.oauthEnabled) return undefined;
    return oauth.challenge(/^\/mcp(\/|$|\?)/i.test(req.path) ? 'mcp' : 'api', err);
  };

  // Protected resource metadata (RFC 9728), public and cacheable, readable from any origin.
  for (const name of ['mcp', 'api'] as const) {
    const path = name === 'mcp' ? '/.well-known/oauth-protected-resource/mcp' : '/.well-known/oauth-protected-resource/v1';
    app.get(path, (req, res) => {
      setHttpRoute(path);
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.json(resourceMetadata(oauth.resources[name], oauth.issuer));
    });
  }

  // The authorization server: its metadata (RFC 8414 path too), authorize, token, register, revoke, jwks.
  let issuerHost: string | undefined;
  const providerHandle = async (req: Request, res: Response) => {
    setHttpRoute('/oauth');
    if (/^\/\.well-known\/oauth-authorization-server\/?$/.test(req.path)) req.url = '/.well-known/openid-configuration';
    // The endpoints it names are built from the request's host: pinned to the issuer's, so that a
    // request's Host header cannot make the metadata point elsewhere.
    req.headers.host = issuerHost ??= new URL(oauth.issuer).host;
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
    await oauth.handle(req, res);
  };
  const registrations = new RegistrationLimit();
  app.use((req, res, next) => {
    if (PAGES.test(req.path) || !(PROVIDER_PATH.test(req.path) || /^\/\.well-known\/oauth-authorization-server\/?$/.test(req.path))) return next();
    if (req.method === 'POST' && req.path === '/oauth/register') {
      const wait = registrations.take(clientAddress(req));
      if (wait) {
        res.setHeader('Retry-After', String(wait));
        return void res
          .status(429)
          .json({ error: 'temporarily_unavailable', error_description: 'Too many client registrations from this address; try again later.' });
      }
    }
    providerHandle(req, res).catch(next);
  });

  const pages = express.Router();
  pages.get('/oauth/static/oauth.css', (_req, res) => {
    res.setHeader('Content-Type', 'text/css; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.end(STYLE);
  });

  // The pages' only scripts (passkeys): same-origin files, as the pages' CSP requires.
  for (const [file, body] of [
    ['webauthn.js', webauthnBundle],
    ['passkeys.js', () => PASSKEYS_SCRIPT],
  ] as const) {
    pages.get(`/oauth/static/${file}`, (_req, res) => {
      res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
      res.setHeader('Cache-Control', 'public, max-age=3600');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.end(body());
    });
  }

  pages.get('/oauth/static/icon.svg', (_req, res) => {
    res.setHeader('Content-Type', 'image/svg+xml');
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.end(ICON);
  });

  /** The person's display: name and id. */
  const personOf = async (userId: string) => {
    const { token } = await deps.signer.sign({ kind: 'human', userId, accountId: userId, channel: 'api' });
    const me = await accountsClient(deps.registry).getMe({}, { principalToken: token, deadlineMs: 5000 });
    return { id: userId, name: me.account?.name ?? userId };
  };

  /** Signs a person in with one of their API keys: a person's key, not limited to a project. */
  const signInWithKey = async (req: Request): Promise<string> => {
    const key = typeof req.body?.api_key === 'string' ? req.body.api_key.trim() : '';
    const ctx = await auth.authenticate(key || undefined, undefined, clientAddress(req));
    const p = ctx.principal;
    if (p.kind !== 'human' || !p.userId)
      throw new DomainError('forbidden', 'human_principal_required', 'Sign in with a key of a person, not of an agent.');
    if (p.projectId)
      throw new DomainError('forbidden', 'project_scope', 'This key is limited to a project: sign in with a key of yours that is not.');
    return p.userId;
  };

  const failedSignIn = (err: unknown): string => {
    if (err instanceof DomainError && (err.kind === 'unauthenticated' || err.kind === 'forbidden' || err.kind === 'rate_limited')) return err.message;
    throw err;
  };

  // An authorization in progress: sign-in, then consent.
  pages.get('/oauth/interaction/:uid', async (req, res) => {
    setHttpRoute('/oauth/interaction/:uid');
    const provider = await oauth.provider();
    const details = await provider.interactionDetails(req, res);
    const client = await provider.Client.find(String(details.params.client_id));
    const clientName = String(client?.clientName ?? details.params.client_id);
    if (details.prompt.name === 'login') {
      const person = webOf().person(req);
      if (person) return void (await provider.interactionFinished(req, res, { login: { accountId: person } }, { mergeWithLastSubmission: false }));
      const csrf = webOf().csrfToken(req, res, `login|${details.uid}`);
      const passkey = passkeySignIn(webOf(), req, res, `/oauth/interaction/${details.uid}`);
      return sendPage(res, 200, signInPage({ action: `/oauth/interaction/${details.uid}/login`, csrf, clientName, passkey }));
    }
    const view = await consentView(provider, details, client);
    const csrf = webOf().csrfToken(req, res, `consent|${details.uid}`);
    sendPage(res, 200, consentPage({ ...view, action: `/oauth/interaction/${details.uid}/consent`, csrf }));
  });

  pages.post('/oauth/interaction/:uid/login', async (req, res) => {
    setHttpRoute('/oauth/interaction/:uid/login');
    await readForm(req, res);
    const provider = await oauth.provider();
    const details = await provider.interactionDetails(req, res);
    const refused = webOf().checkForm(req, `login|${details.uid}`);
    if (refused) return sendPage(res, 403, messagePage('Refused', refused));
    let userId: string;
    try {
      userId = await signInWithKey(req);
    } catch (err) {
      const error = failedSignIn(err);
      const csrf = webOf().csrfToken(req, res, `login|${details.uid}`);
      const passkey = passkeySignIn(webOf(), req, res, `/oauth/interaction/${details.uid}`);
      return sendPage(res, 401, signInPage({ action: `/oauth/interaction/${details.uid}/login`, csrf, error, passkey }));
    }
    webOf().signIn(req, res, userId);
    await provider.interactionFinished(req, res, { login: { accountId: userId } }, { mergeWithLastSubmission: false });
  });

  pages.post('/oauth/interaction/:uid/consent', async (req, res) => {
    setHttpRoute('/oauth/interaction/:uid/consent');
    await readForm(req, res);
    const provider = await oauth.provider();
    const details = await provider.interactionDetails(req, res);
    const refused = webOf().checkForm(req, `consent|${details.uid}`);
    if (refused) return sendPage(res, 403, messagePage('Refused', refused));
    if (details.prompt.name !== 'consent' || !details.session?.accountId)
      return sendPage(res, 400, messagePage('Refused', 'There is nothing to approve here.'));
    if (req.body?.decision !== 'approve') {
      return void (await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The person denied the request.' },
        { mergeWithLastSubmission: false },
      ));
    }
    const readOnly = req.body?.access === 'read';
    // Who the tokens act as: the person, or one of their own agents (checked to be theirs).
    const subject = typeof req.body?.subject === 'string' ? req.body.subject : 'person';
    let agentId: string | undefined;
    if (subject !== 'person') {
      try {
        agentId = (await agentOfPerson(deps.registry, deps.signer, String(details.session.accountId), subject)).id;
      } catch (err) {
        if (err instanceof DomainError && err.kind === 'unauthenticated')
          return sendPage(res, 400, messagePage('Refused', 'That agent is not one of yours.'));
        throw err;
      }
    }
    const { missingOIDCScope, missingResourceScopes } = details.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const grant = details.grantId
      ? ((await provider.Grant.find(details.grantId)) ??
        new provider.Grant({ accountId: details.session.accountId, clientId: String(details.params.client_id) }))
      : new provider.Grant({ accountId: details.session.accountId, clientId: String(details.params.client_id) });
    if (missingOIDCScope?.length) grant.addOIDCScope(missingOIDCScope.join(' '));
    // Read only: each write scope asked becomes its read scope, in the grant and in the request
    // itself (the token's scope is what was asked and granted), so the token reads only.
    const narrow = (scopes: string[]) => [...new Set(scopes.map((s) => (readOnly ? narrowScope(s) : s)))];
    for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {})) grant.addResourceScope(resource, narrow(scopes).join(' '));
    if (readOnly) {
      details.params.scope = narrow(String(details.params.scope ?? '').split(' ')).join(' ');
      await details.save(Math.max(1, (details.exp ?? 0) - Math.floor(Date.now() / 1000)));
    }
    actAs(grant, agentId);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  });

  // What a consent page names: the client as known (its verified metadata), where it returns,
  // the resources and scopes asked, and the person it would act as.
  const consentView = async (
    provider: Awaited<ReturnType<OauthServer['provider']>>,
    details: Awaited<ReturnType<Awaited<ReturnType<OauthServer['provider']>>['interactionDetails']>>,
    client: unknown,
  ) => {
    const c = client as { clientId: string; clientName?: string; clientUri?: string; clientIdMetadataDocument?: boolean } | undefined;
    const clientId = String(details.params.client_id);
    const missing = (details.prompt.details as { missingResourceScopes?: Record<string, string[]> }).missingResourceScopes ?? {};
    const resources = Object.entries(missing).map(([id, scopes]) => ({
      id,
      name: id === oauth.resources.mcp.id ? 'The MCP server (tools)' : id === oauth.resources.api.id ? 'The API' : id,
      scopes: scopes.map((scope) => ({ scope, text: describeScope(scope) })),
    }));
    const asked = Object.values(missing).flat();
    void provider;
    return {
      client: {
        id: clientId,
        name: c?.clientName ?? clientId,
        uri: c?.clientUri,
        verified: c?.clientIdMetadataDocument
          ? `its metadata document, fetched from ${clientId}`
          : 'its own registration (dynamic client registration): the name is what the app says of itself',
      },
      redirectUri: String(details.params.redirect_uri),
      resources,
      principal: await personOf(String(details.session!.accountId)),
      agents: await agentsOfPerson(deps.registry, deps.signer, String(details.session!.accountId)),
      canNarrow: asked.some((s) => s === WRITE_SCOPE.mcp || s === WRITE_SCOPE.api),
      channel: resources.some((r) => r.id === oauth.resources.mcp.id) ? 'the MCP channel' : 'the API',
    };
  };

  // Connected apps: the person's grants, each with a revoke button.
  const showApps = async (req: Request, res: Response, userId: string, notice?: string) => {
    const { grants } = await accountsClient(deps.registry).listOauthGrants(
      { userId },
      { principalToken: await deps.systemToken(), deadlineMs: 5000 },
    );
    const apps: AppView[] = grants.map((g) => {
      const grant = JSON.parse(g.grantJson) as { clientId?: string; resources?: Record<string, string>; rar?: unknown };
      const client = g.clientJson ? (JSON.parse(g.clientJson) as { client_name?: string }) : undefined;
      return {
        grantId: g.grantId,
        clientId: String(grant.clientId ?? ''),
        clientName: client?.client_name ?? String(grant.clientId ?? 'an app'),
        resources: Object.entries(grant.resources ?? {}).map(([id, scopes]) => ({ id, scopes })),
        actsAs: agentOf(grant) ?? null,
        createdAt: g.createdAt,
        lastUsedAt: g.lastUsedAt ?? null,
      };
    });
    const csrf = webOf().csrfToken(req, res, 'apps');
    sendPage(res, 200, appsPage({ csrf, person: await personOf(userId), apps, notice }));
  };

  pages.get('/oauth/apps', async (req, res) => {
    setHttpRoute('/oauth/apps');
    const userId = webOf().person(req);
    if (!userId) {
      const csrf = webOf().csrfToken(req, res, 'signin');
      return sendPage(res, 200, signInPage({ action: '/oauth/signin', csrf, passkey: passkeySignIn(webOf(), req, res, '/oauth/apps') }));
    }
    await showApps(req, res, userId);
  });

  pages.post('/oauth/signin', async (req, res) => {
    setHttpRoute('/oauth/signin');
    await readForm(req, res);
    const refused = webOf().checkForm(req, 'signin');
    if (refused) return sendPage(res, 403, messagePage('Refused', refused));
    const returnTo = typeof req.body?.return === 'string' && RETURNS.has(req.body.return) ? String(req.body.return) : '/oauth/apps';
    try {
      webOf().signIn(req, res, await signInWithKey(req));
    } catch (err) {
      const error = failedSignIn(err);
      const csrf = webOf().csrfToken(req, res, 'signin');
      return sendPage(res, 401, signInPage({ action: '/oauth/signin', csrf, error, returnTo, passkey: passkeySignIn(webOf(), req, res, returnTo) }));
    }
    res.redirect(303, returnTo);
  });

  pages.post('/oauth/apps/revoke', async (req, res) => {
    setHttpRoute('/oauth/apps/revoke');
    await readForm(req, res);
    const refused = webOf().checkForm(req, 'apps');
    if (refused) return sendPage(res, 403, messagePage('Refused', refused));
    const userId = webOf().person(req);
    if (!userId) return res.redirect(303, '/oauth/apps');
    const grantId = typeof req.body?.grant === 'string' ? req.body.grant : '';
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(grantId)) return sendPage(res, 400, messagePage('Refused', 'No such app.'));
    const { revoked } = await accountsClient(deps.registry).revokeOauthGrant(
      { grantId, tokensOnly: false, reason: 'revoked_by_person', userId },
      { principalToken: await deps.systemToken(), deadlineMs: 5000 },
    );
    if (revoked) auth.evictGrant(grantId);
    await showApps(req, res, userId, revoked ? 'The app was disconnected: its tokens no longer work.' : 'That app was not connected.');
  });

  pages.post('/oauth/signout', async (req, res) => {
    setHttpRoute('/oauth/signout');
    await readForm(req, res);
    const refused = webOf().checkForm(req, 'apps');
    if (refused) return sendPage(res, 403, messagePage('Refused', refused));
    webOf().signOut(req, res);
    res.redirect(303, '/oauth/apps');
  });

  mountPasskeys(pages, {
    registry: deps.registry,
    systemToken: deps.systemToken,
    log: deps.log,
    web: webOf,
    issuer: () => oauth.issuer,
    personOf,
  });

  app.use((req, res, next) => {
    if (!PAGES.test(req.path)) return next();
    pages(req, res, (err?: unknown) => {
      if (err === undefined || err === 'route' || err === 'router') return next();
      pageError(req, res, err, deps.log);
    });
  });
  return challengeOf;
}

/** A failure on a page: a page in words (oidc-provider's own errors carry their status). */
function pageError(req: Request, res: Response, err: unknown, log: Logger): void {
  const e = err as { status?: number; statusCode?: number; error_description?: string; message?: string; expose?: boolean };
  const status = e.statusCode ?? e.status ?? 500;
  if (status >= 500) log.warn({ err, requestId: req.requestId }, 'oauth page failed');
  if (res.headersSent) return void res.end();
  const text =
    status === 400 && /interaction session/i.test(String(e.error_description ?? e.message))
      ? 'This sign-in has expired or was started in another browser. Go back to the app and start again.'
      : status < 500
        ? String(e.error_description ?? e.message ?? 'The request was refused.')
        : 'Something went wrong. Try again.';
  sendPage(res, status >= 400 && status < 600 ? status : 500, messagePage(status < 500 ? 'Refused' : 'Error', text));
}
