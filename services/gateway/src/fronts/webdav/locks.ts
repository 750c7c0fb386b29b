/** LOCK and UNLOCK (RFC 4918 9.10, 9.11): the drive keeps the locks, this maps them to the protocol. */
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import { sendDavError, sendText, sendXml } from './answers.js';
import { stateOf } from './if-header.js';
import { activeLock, type Resource } from './props.js';
import type { DavRequest } from './request.js';
import { child, DAV, readXml, serializeElement } from './xml.js';

/** The Timeout header's first usable value in seconds (0: the drive's default). */
function timeoutSeconds(v: string | undefined): number {
  if (!v) return 0;
  for (const part of v.split(',')) {
    const t = part.trim();
    if (/^infinite$/i.test(t)) return 2 ** 31 - 1;
    const m = /^second-(\d+)$/i.exec(t);
    if (m) return Math.min(Number(m[1]), 2 ** 31 - 1);
  }
  return 0;
}

/** LOCK: a new lock (a lockinfo body; an unmapped URL becomes an empty file), or a refresh (no body, the lock named in If). */
export async function lock(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  if (!segs.length) return sendText(d.res, 403, 'The drive root cannot be locked.');
  const body = await readXml(d.req);
  const r = await d.resolve(segs);
  if (!r.item && !r.parentExists) return sendText(d.res, 409, 'The parent collection does not exist.');
  const timeout = timeoutSeconds(d.req.headers.timeout as string | undefined);
  let result: drive.LockItemResponse;
  if (!body) {
    // A refresh: the lock named in the If header.
    const header = d.req.headers.if;
    if (!r.item || typeof header !== 'string') {
      return sendText(d.res, 400, 'A LOCK without a body refreshes a lock named in the If header.');
    }
    const { tokens } = await d.checkIf(stateOf(r.item));
    const token = tokens.find((t) => r.item!.locks.some((l) => l.token === t));
    if (!token) return sendText(d.res, 412, 'The If header names no lock of this resource.');
    result = await d.drive.lockItem({
      id: r.item.id,
      scope: 'exclusive',
      deep: false,
      owner: '',
      timeoutSeconds: timeout,
      refreshToken: token,
      lockTokens: [],
    });
  } else {
    if (body.ns !== DAV || body.name !== 'lockinfo') throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:lockinfo body.');
    const scopeEl = child(body, 'lockscope');
    const scope = scopeEl && child(scopeEl, 'shared') ? 'shared' : scopeEl && child(scopeEl, 'exclusive') ? 'exclusive' : undefined;
    const typeEl = child(body, 'locktype');
    if (!scope || !typeEl || !child(typeEl, 'write')) {
      throw new DomainError('invalid_argument', 'invalid_lock', 'A lock is a write lock, exclusive or shared.');
    }
    const depth = String(d.req.headers.depth ?? 'infinity').toLowerCase();
    if (depth !== '0' && depth !== 'infinity') return sendText(d.res, 400, 'LOCK takes Depth 0 or infinity.');
    const owner = child(body, 'owner');
    const { tokens } = await d.checkIf(stateOf(r.item ?? undefined, r.parent ?? undefined));
    result = await d.drive.lockItem({
      ...(r.item ? { id: r.item.id } : { parentId: r.parent?.id, name: segs[segs.length - 1] }),
      scope,
      deep: depth === 'infinity',
      owner: owner ? serializeElement(owner) : '',
      timeoutSeconds: timeout,
      lockTokens: tokens,
    });
    d.res.setHeader('Lock-Token', `<${result.lock!.token}>`);
  }
  const self: Resource = { item: result.item, segments: segs };
  sendXml(
    d.res,
    result.created ? 201 : 200,
    `<D:prop xmlns:D="DAV:"><D:lockdiscovery>${activeLock(d.target.prefix, result.lock!, self)}</D:lockdiscovery></D:prop>`,
  );
}

/** UNLOCK: releases the lock named by Lock-Token (409 lock-token-matches-request-uri when it does not cover the URL). */
export async function unlock(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  const raw = d.req.headers['lock-token'];
  const m = typeof raw === 'string' ? /^\s*<([^>]+)>\s*$/.exec(raw) : null;
  if (!m) return sendText(d.res, 400, 'UNLOCK needs a Lock-Token header.');
  if (!segs.length) return sendDavError(d.res, 409, 'lock-token-matches-request-uri');
  const r = await d.resolve(segs);
  if (!r.item) return sendText(d.res, 404, 'Not found.');
  try {
    await d.drive.unlockItem({ id: r.item.id, token: m[1]! });
  } catch (err) {
    if (err instanceof DomainError && err.code === 'lock_token_mismatch') return sendDavError(d.res, 409, 'lock-token-matches-request-uri');
    throw err;
  }
  d.res.status(204).end();
}
