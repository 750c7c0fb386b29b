/**
 * WebDAV (RFC 4918, class 1 and 2) over the drive, at /dav/, with HTTP Basic auth (the API key as
 * the password). Every operation goes to the drive service, as the drive's internal operations
 * invoked through the dispatcher (routes/drive/internal.ts: the principal rules hold as on the
 * API): this front parses and writes XML, maps URLs to items, and evaluates `If` headers; the
 * drive decides and stores (content, custom properties, locks).
 */
import type express from 'express';
import type { Request, Response } from 'express';

import { type Access, checkPrincipal } from '@svc/dispatch';
import { DomainError } from '@svc/kit';

import { actingAccount, clientAddress, presentedSecret } from '../../credentials.js';
import { sendDavDomainError, sendText } from './answers.js';
import { lock, unlock } from './locks.js';
import { segmentsOf } from './paths.js';
import { ALLOW, get, options, propfind } from './read.js';
import { type DavDeps, DavRequest } from './request.js';
import { copyMove, mkcol, proppatch, put, remove } from './write.js';

/** Who may use WebDAV: people and agents (not hosts); nothing here changes authority. */
export const DAV_ACCESS: Access = { principals: ['human', 'agent'], authority: false };

/** The methods that change nothing: they draw on the `read` buckets, the others on `write`. */
const DAV_READS = new Set(['OPTIONS', 'PROPFIND', 'GET', 'HEAD']);

function handle(d: DavRequest): Promise<void> | void {
  const m = d.req.method.toUpperCase();
  switch (m) {
    case 'OPTIONS':
      return options(d.res);
    case 'PROPFIND':
      return propfind(d);
    case 'PROPPATCH':
      return proppatch(d);
    case 'GET':
    case 'HEAD':
      return get(d, m === 'HEAD');
    case 'PUT':
      return put(d);
    case 'MKCOL':
      return mkcol(d);
    case 'DELETE':
      return remove(d);
    case 'COPY':
    case 'MOVE':
      return copyMove(d, m === 'MOVE');
    case 'LOCK':
      return lock(d);
    case 'UNLOCK':
      return unlock(d);
    default:
      d.res.setHeader('Allow', ALLOW);
      return sendText(d.res, 405, `${m} is not supported here.`);
  }
}

/** Mounts /dav (and /v1/dav, the gateway strips /v1 first). */
export function mountDav(app: express.Router, deps: DavDeps): void {
  app.use('/dav', (req: Request, res: Response) => {
    const prefix = req.originalUrl.startsWith('/v1/') ? '/v1/dav' : '/dav';
    let segments: string[] = [];
    const run = async () => {
      // A fragment is never part of a request URI; one sent anyway is refused, not dropped
      // (DELETE /dav/x/#frag must not delete /dav/x/).
      if (req.originalUrl.includes('#')) throw new DomainError('invalid_argument', 'invalid_path', 'A request URI has no fragment (#).');
      segments = segmentsOf(req.path);
      const target = { prefix, segments };
      if (req.method === 'OPTIONS' && !req.headers.authorization) {
        // Capability discovery works before credentials (Windows and macOS clients ask first).
        return options(res);
      }
      // x-svc-account acts in an organization the caller is a member of, as on the API (the same
      // Authenticator applies the same membership and project rules).
      const auth = await deps.auth.authenticate(
        presentedSecret(req.headers.authorization, { basic: true }),
        actingAccount(req.headers),
        clientAddress(req),
      );
      checkPrincipal(auth.principal, DAV_ACCESS);
      // A transfer in flight is cut if its key is revoked or expires. Its locks stay: they are
      // its person's or agent's (the drive checks the holder), and expire at their timeout.
      deps.auth.holdResponse(auth, res);
      // The API's buckets, through the dispatcher: reading methods are `read`, the rest `write`. The
      // drive calls a method makes are internal operations, which draw nothing more.
      await deps.dispatcher.meter(DAV_READS.has(req.method) ? 'read' : 'write', auth.principal, res);
      await handle(new DavRequest(deps, req, res, auth, target));
    };
    run().catch((err: unknown) => {
      if (err instanceof DomainError) return sendDavDomainError(req, res, err, prefix, segments);
      deps.log.error({ err, requestId: req.requestId }, 'webdav request failed');
      if (res.headersSent) res.destroy();
      else sendText(res, 500, 'Internal error.');
    });
  });
}
