import express, { type Request, type Response, type Router } from 'express';

import { accountsClient } from '@svc/clients';
import { DomainError, type Logger, type Registry, setHttpRoute } from '@svc/kit';

import { clientAddress } from '../../credentials.js';
import { messagePage, type PasskeySignIn, passkeysPage, signInPage } from './pages.js';
import { RegistrationLimit } from './registrations.js';
import { sendJson, sendPage, type WebSecurity } from './web.js';

/**
 * Passkeys on the pages (docs/oauth.md, "Passkeys"): a person signed in (by API key, or by a
 * passkey) adds, lists and removes their passkeys on /oauth/passkeys, and signs in with one alone
 * on any sign-in page. The pages' script (script.ts) runs each ceremony through two JSON calls
 * here, `…/options` then the browser's answer; the accounts service makes the options, keeps the
 * single-use challenge, verifies the answer and keeps the credentials. The relying party is
 * SVC_PUBLIC_URL: its host is the RP ID, its origin the only origin an answer may come from.
 */

export interface PasskeyFrontDeps {
  registry: Registry;
  systemToken: () => Promise<string>;
  log: Logger;
  web: () => WebSecurity;
  /** The public URL (the issuer). */
  issuer: () => string;
  personOf: (userId: string) => Promise<{ id: string; name: string }>;
}

/** Where a passkey sign-in may send the browser on. */
const NEXT = /^\/oauth\/(apps|passkeys|interaction\/[A-Za-z0-9_-]{1,64})$/;
const PASSKEY_ID = /^[A-Za-z0-9_-]{1,1024}$/;

/** The passkey part of a sign-in page: its CSRF token, and where it goes once signed in. */
export function passkeySignIn(web: WebSecurity, req: Request, res: Response, next: string): PasskeySignIn {
  return { csrf: web.csrfToken(req, res, 'passkey'), next };
}

export function mountPasskeys(pages: Router, deps: PasskeyFrontDeps): void {
  const accounts = () => accountsClient(deps.registry);
  const opts = async () => ({ principalToken: await deps.systemToken(), deadlineMs: 5000 });
  const party = () => {
    const url = new URL(deps.issuer());
    return { rpId: url.hostname, origin: url.origin, rpName: 'svc' };
  };
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const json = express.json({ limit: '48kb', strict: true });
  const read = (parser: express.RequestHandler) => (req: Request, res: Response) =>
    new Promise<void>((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  // Sign-in ceremonies may be begun by anyone, and each keeps a challenge: counted per address.
  const begun = new RegistrationLimit();

  const showPasskeys = async (req: Request, res: Response, userId: string, notice?: string) => {
    const { passkeys } = await accounts().listPasskeys({ userId }, await opts());
    sendPage(
      res,
      200,
      passkeysPage({
        csrf: deps.web().csrfToken(req, res, 'passkeys'),
        signOutCsrf: deps.web().csrfToken(req, res, 'apps'),
        person: await deps.personOf(userId),
        passkeys: passkeys.map((k) => ({
          id: k.id,
          name: k.name,
          createdAt: k.createdAt,
          lastUsedAt: k.lastUsedAt ?? null,
          synced: k.deviceType === 'multiDevice' && k.backedUp,
        })),
        notice,
      }),
    );
  };

  pages.get('/oauth/passkeys', async (req, res) => {
    setHttpRoute('/oauth/passkeys');
    const web = deps.web();
    const userId = web.person(req);
    if (!userId) {
      const csrf = web.csrfToken(req, res, 'signin');
      return sendPage(
        res,
        200,
        signInPage({ action: '/oauth/signin', csrf, returnTo: '/oauth/passkeys', passkey: passkeySignIn(web, req, res, '/oauth/passkeys') }),
      );
    }
    await showPasskeys(req, res, userId, req.query.added !== undefined ? 'The passkey was added: you can sign in with it now.' : undefined);
  });

  pages.post('/oauth/passkeys/delete', async (req, res) => {
    setHttpRoute('/oauth/passkeys/delete');
    await read(form)(req, res);
    const web = deps.web();
    const refusedForm = web.checkForm(req, 'passkeys');
    if (refusedForm) return sendPage(res, 403, messagePage('Refused', refusedForm));
    const userId = web.person(req);
    if (!userId) return res.redirect(303, '/oauth/passkeys');
    const passkeyId = typeof req.body?.passkey === 'string' ? req.body.passkey : '';
    if (!PASSKEY_ID.test(passkeyId)) return sendPage(res, 400, messagePage('Refused', 'No such passkey.'));
    const { removed } = await accounts().deletePasskey({ userId, passkeyId }, await opts());
    await showPasskeys(
      req,
      res,
      userId,
      removed ? 'The passkey was removed: it no longer signs you in.' : 'That passkey was not yours, or was removed already.',
    );
  });

  /** One JSON call of a ceremony: the form's CSRF token checked, refusals answered in the contract's error body. */
  const ceremony = (path: string, purpose: string, handle: (req: Request, res: Response) => Promise<unknown>) =>
    pages.post(path, async (req, res) => {
      setHttpRoute(path);
      try {
        await read(json)(req, res);
        const refusedForm = deps.web().checkForm(req, purpose);
        if (refusedForm) throw new DomainError('forbidden', 'csrf_refused', refusedForm);
        sendJson(res, 200, await handle(req, res));
      } catch (err) {
        const e =
          err instanceof DomainError
            ? err
            : (err as { type?: string })?.type?.startsWith('entity.') || (err as { status?: number })?.status === 400
              ? new DomainError('invalid_argument', 'invalid_request', 'The request body is not JSON of at most 48 KiB.')
              : undefined;
        if (!e) {
          deps.log.warn({ err, requestId: req.requestId }, 'passkey ceremony failed');
          return sendJson(res, 500, { error: { code: 'internal_error', message: 'Something went wrong. Try again.', requestId: req.requestId } });
        }
        if (e.kind === 'rate_limited') res.setHeader('Retry-After', String(e.details?.retryAfterSeconds ?? 60));
        sendJson(res, e.httpStatus, { error: { code: e.code, message: e.message, requestId: req.requestId } });
      }
    });

  const signedIn = (req: Request): string => {
    const userId = deps.web().person(req);
    if (!userId) throw new DomainError('unauthenticated', 'not_signed_in', 'You are signed out: load the page again and sign in.');
    return userId;
  };
  const responseOf = (req: Request): string => {
    const r: unknown = req.body?.response;
    if (!r || typeof r !== 'object')
      throw new DomainError('invalid_argument', 'invalid_request', 'response: the browser’s WebAuthn answer is required.');
    return JSON.stringify(r);
  };

  /** Each ceremony begun keeps a challenge: an address begins so many in a window. */
  const begin = (req: Request) => {
    const wait = begun.take(clientAddress(req));
    if (wait) {
      throw new DomainError('rate_limited', 'too_many_passkey_ceremonies', 'Too many passkey requests from this address: try again later.', {
        retryAfterSeconds: wait,
      });
    }
  };

  ceremony('/oauth/passkeys/registration/options', 'passkeys', async (req, res) => {
    const userId = signedIn(req);
    begin(req);
    const { optionsJson } = await accounts().beginPasskeyCeremony(
      { ceremony: 'registration', userId, party: party(), binding: deps.web().binding(req, res) },
      await opts(),
    );
    return { options: JSON.parse(optionsJson) };
  });

  ceremony('/oauth/passkeys/registration', 'passkeys', async (req, res) => {
    const userId = signedIn(req);
    const name = typeof req.body?.name === 'string' ? req.body.name.slice(0, 200) : '';
    await accounts().registerPasskey(
      { userId, responseJson: responseOf(req), party: party(), binding: deps.web().binding(req, res), name },
      await opts(),
    );
    return { next: '/oauth/passkeys?added' };
  });

  ceremony('/oauth/passkeys/authentication/options', 'passkey', async (req, res) => {
    begin(req);
    const { optionsJson } = await accounts().beginPasskeyCeremony(
      { ceremony: 'authentication', userId: '', party: party(), binding: deps.web().binding(req, res) },
      await opts(),
    );
    return { options: JSON.parse(optionsJson) };
  });

  ceremony('/oauth/passkeys/authentication', 'passkey', async (req, res) => {
    const next = typeof req.body?.next === 'string' && NEXT.test(req.body.next) ? req.body.next : '/oauth/apps';
    const { userId } = await accounts().signInWithPasskey(
      { responseJson: responseOf(req), party: party(), binding: deps.web().binding(req, res) },
      await opts(),
    );
    deps.web().signIn(req, res, userId);
    return { next };
  });
}
