/** The writing methods: PROPPATCH, PUT, MKCOL, DELETE, COPY and MOVE. */
import { upload } from '@svc/dispatch';
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import { bodyOf, declaredLength, finishUnreadBody, hasBody, meaningfulType } from '../../http/content.js';
import { sendText, sendXml, STATUS_TEXT } from './answers.js';
import { stateOf } from './if-header.js';
import { destinationOf } from './paths.js';
import { PROTECTED } from './props.js';
import type { DavRequest } from './request.js';
import { child, DAV, elements, emptyProp, escapeXml, readXml, serializeElement } from './xml.js';

/** PROPPATCH: sets and removes dead properties, all or nothing (live ones are protected: 403, the rest 424). */
export async function proppatch(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  const body = await readXml(d.req);
  if (!body || body.ns !== DAV || body.name !== 'propertyupdate') {
    throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:propertyupdate body.');
  }
  if (!segs.length) return sendText(d.res, 403, 'The drive root has no properties to set.');
  const r = await d.resolve(segs);
  if (!r.item) return sendText(d.res, 404, 'Not found.');
  const { tokens } = await d.checkIf(stateOf(r.item));
  const patches: drive.PropertyPatch[] = [];
  const names: Array<{ ns: string; name: string }> = [];
  for (const op of elements(body)) {
    if (op.ns !== DAV || (op.name !== 'set' && op.name !== 'remove')) continue;
    const prop = child(op, 'prop');
    for (const p of prop ? elements(prop) : []) {
      names.push({ ns: p.ns, name: p.name });
      patches.push({ ns: p.ns, name: p.name, xml: op.name === 'set' ? serializeElement(p) : undefined });
    }
  }
  const forbidden = names.filter((p) => p.ns === DAV && PROTECTED.has(p.name));
  const href = d.href(segs, r.item.kind === 'folder');
  const propstat = (list: Array<{ ns: string; name: string }>, status: number, extra = '') =>
    list.length
      ? `<D:propstat><D:prop>${list.map((p) => emptyProp(p.ns, p.name)).join('')}</D:prop><D:status>HTTP/1.1 ${status} ${STATUS_TEXT[status]}</D:status>${extra}</D:propstat>`
      : '';
  if (forbidden.length) {
    // All or nothing: protected properties fail, everything else fails with them.
    const rest = names.filter((p) => !forbidden.includes(p));
    const xml =
      `<D:multistatus xmlns:D="DAV:"><D:response><D:href>${escapeXml(href)}</D:href>` +
      propstat(forbidden, 403, '<D:responsedescription>A live property cannot be changed.</D:responsedescription>') +
      propstat(rest, 424) +
      '</D:response></D:multistatus>';
    return sendXml(d.res, 207, xml);
  }
  await d.drive.setProperties({ id: r.item.id, patches, lockTokens: tokens });
  sendXml(
    d.res,
    207,
    `<D:multistatus xmlns:D="DAV:"><D:response><D:href>${escapeXml(href)}</D:href>${propstat(names, 200)}</D:response></D:multistatus>`,
  );
}

/** PUT: a file's content, created or replaced (If-Match / If-None-Match as the API; without them it replaces). */
export async function put(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  if (!segs.length) return sendText(d.res, 405, 'The drive root is a collection.');
  const r = await d.resolve(segs);
  if (r.item?.kind === 'folder') return sendText(d.res, 405, 'A collection has no content to replace.');
  if (!r.item && !r.parentExists) return sendText(d.res, 409, 'The parent collection does not exist.');
  const { tokens, etag } = await d.checkIf(stateOf(r.item ?? undefined, r.parent ?? undefined));
  const ifMatch = (d.req.headers['if-match'] as string | undefined) ?? etag;
  const ct = meaningfulType(d.req.headers['content-type']);
  const result = await upload(
    d.deps,
    d.caller,
    {
      ...(r.item ? { itemId: r.item.id } : { parentId: r.parent?.id, name: segs[segs.length - 1] }),
      contentType: ct,
      declaredSize: declaredLength(d.req),
      ifMatch,
      ifNoneMatch: d.req.headers['if-none-match'] as string | undefined,
      requirePrecondition: false,
      overwrite: true,
      lockTokens: tokens,
    },
    bodyOf(d.req),
  );
  d.res.setHeader('ETag', result.item!.etag);
  if (result.created) d.res.setHeader('Location', d.href(segs, false));
  d.res.status(result.created ? 201 : 204).end();
}

/** MKCOL: a new folder (no body; its parent must exist). */
export async function mkcol(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  if (hasBody(d.req)) {
    finishUnreadBody(d.req, d.res);
    return sendText(d.res, 415, 'MKCOL takes no body.');
  }
  if (!segs.length) return sendText(d.res, 405, 'The drive root exists.');
  const r = await d.resolve(segs);
  if (r.item) return sendText(d.res, 405, 'Something already exists at this URL.');
  if (!r.parentExists) return sendText(d.res, 409, 'The parent collection does not exist.');
  const { tokens } = await d.checkIf(stateOf(undefined, r.parent ?? undefined));
  await d.drive.createFolder({ parentId: r.parent?.id, name: segs[segs.length - 1]!, lockTokens: tokens });
  d.res.setHeader('Location', d.href(segs, true));
  d.res.status(201).end();
}

/** DELETE: an item, a folder with everything in it. */
export async function remove(d: DavRequest): Promise<void> {
  const segs = d.target.segments;
  if (!segs.length) return sendText(d.res, 403, 'The drive root cannot be deleted.');
  const r = await d.resolve(segs);
  if (!r.item) return sendText(d.res, 404, 'Not found.');
  const { tokens, etag } = await d.checkIf(stateOf(r.item));
  await d.drive.deleteItem({
    id: r.item.id,
    recursive: true,
    ifMatch: (d.req.headers['if-match'] as string | undefined) ?? etag,
    lockTokens: tokens,
  });
  d.res.status(204).end();
}

/** COPY and MOVE to the Destination header's path (Overwrite: T replaces what is there). */
export async function copyMove(d: DavRequest, move: boolean): Promise<void> {
  const segs = d.target.segments;
  const dest = destinationOf(d.req, d.target.prefix);
  if (!dest) return sendText(d.res, 502, 'The destination is not on this server.');
  if (!segs.length || !dest.length) return sendText(d.res, 403, 'The drive root cannot be copied, moved or replaced.');
  const overwrite = String(d.req.headers.overwrite ?? 'T').toUpperCase() !== 'F';
  const depth = String(d.req.headers.depth ?? 'infinity').toLowerCase();
  if (move && depth !== 'infinity') return sendText(d.res, 400, 'MOVE of a collection is always Depth: infinity.');
  if (!move && depth !== '0' && depth !== 'infinity') return sendText(d.res, 400, 'COPY takes Depth 0 or infinity.');
  if (dest.join('/') === segs.join('/')) return sendText(d.res, 403, 'The source and the destination are the same.');
  const src = await d.resolve(segs);
  if (!src.item) return sendText(d.res, 404, 'Not found.');
  const to = await d.resolve(dest);
  if (!to.item && !to.parentExists) return sendText(d.res, 409, 'The destination collection does not exist.');
  if (to.item && !overwrite) return sendText(d.res, 412, 'The destination exists and Overwrite is F.');
  const { tokens } = await d.checkIf(stateOf(src.item));
  const parentId = dest.length === 1 ? '' : ((to.item ? to.item.parentId : to.parent?.id) ?? '');
  const name = dest[dest.length - 1]!;
  const call = move
    ? d.drive.updateItem({ id: src.item.id, name, parentId, overwrite, lockTokens: tokens })
    : d.drive.copyItem({ id: src.item.id, parentId, name, overwrite, recursive: depth !== '0', lockTokens: tokens });
  const result = await call.catch((err: unknown) => {
    if (err instanceof DomainError && err.code === 'name_taken' && !overwrite) {
      throw new DomainError('precondition_failed', 'name_taken', err.message);
    }
    throw err;
  });
  d.res.setHeader('Location', d.href(dest, result.item!.kind === 'folder'));
  d.res.status(result.created ? 201 : 204).end();
}
