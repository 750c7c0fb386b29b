/** The reading methods: OPTIONS, PROPFIND, GET and HEAD (a file's bytes, or a collection's HTML index). */
import type { Response } from 'express';

import { download } from '@svc/dispatch';
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import { sendContent } from '../../http/content.js';
import { sendDavError, sendText, sendXml } from './answers.js';
import { isCollection, type PropRequest, propResponse, type Resource } from './props.js';
import type { DavRequest } from './request.js';
import { child, DAV, elements, escapeXml, readXml } from './xml.js';

/** The methods served (the Allow header). */
export const ALLOW = 'OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK';

/** What the server can do; answered before credentials too (Windows and macOS clients ask first). */
export function options(res: Response): void {
  res.setHeader('DAV', '1, 2');
  res.setHeader('MS-Author-Via', 'DAV');
  res.setHeader('Allow', ALLOW);
  res.setHeader('Content-Length', '0');
  res.status(200).end();
}

/** PROPFIND at Depth 0 or 1 (infinity: 403 propfind-finite-depth): allprop, propname or named properties. */
export async function propfind(d: DavRequest): Promise<void> {
  const depth = (d.req.headers.depth ?? 'infinity').toString().toLowerCase();
  const body = await readXml(d.req);
  let want: PropRequest = { kind: 'all' };
  if (body) {
    if (body.ns !== DAV || body.name !== 'propfind') throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:propfind body.');
    const prop = child(body, 'prop');
    if (child(body, 'propname')) want = { kind: 'names' };
    else if (prop) want = { kind: 'props', props: elements(prop).map((e) => ({ ns: e.ns, name: e.name })) };
    else if (!child(body, 'allprop')) throw new DomainError('invalid_argument', 'invalid_xml', 'A propfind names prop, allprop or propname.');
  }
  if (depth !== '0' && depth !== '1') {
    return sendDavError(d.res, 403, 'propfind-finite-depth');
  }
  const segs = d.target.segments;
  let self: Resource;
  if (!segs.length) {
    self = { segments: [] };
  } else {
    const r = await d.resolve(segs);
    if (!r.item) return sendText(d.res, 404, 'Not found.');
    self = { item: r.item, segments: segs };
  }
  const out = [propResponse(d.target.prefix, self, want)];
  if (depth === '1' && isCollection(self)) {
    let cursor: string | undefined;
    do {
      const page = await d.drive.listItems({ parentId: self.item?.id, limit: 1000, cursor, includeDetails: true });
      for (const it of page.items) out.push(propResponse(d.target.prefix, { item: it, segments: [...segs, it.name] }, want));
      cursor = page.nextCursor;
    } while (cursor);
  }
  sendXml(d.res, 207, `<D:multistatus xmlns:D="DAV:">${out.join('')}</D:multistatus>`);
}

/** GET and HEAD: a file's bytes (ranges, If-None-Match, If-Range), or a collection's index. */
export async function get(d: DavRequest, head: boolean): Promise<void> {
  const segs = d.target.segments;
  const r = segs.length ? await d.resolve(segs) : undefined;
  if (r && !r.item) return sendText(d.res, 404, 'Not found.');
  if (!r || r.item!.kind === 'folder') return index(d, r?.item ?? undefined, head);
  const content = await download(d.deps, d.caller, {
    id: r.item!.id,
    range: d.req.headers.range,
    ifNoneMatch: d.req.headers['if-none-match'],
    ifRange: d.req.headers['if-range'] as string | undefined,
    headOnly: head,
  });
  await sendContent(d.req, d.res, content, { head });
}

/** A collection read with GET: a plain HTML index of its members. */
async function index(d: DavRequest, folder: drive.Item | undefined, head: boolean): Promise<void> {
  const rows: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await d.drive.listItems({ parentId: folder?.id, limit: 1000, cursor, includeDetails: false });
    for (const it of page.items) {
      const href = d.href([...d.target.segments, it.name], it.kind === 'folder');
      rows.push(`<li><a href="${escapeXml(href)}">${escapeXml(it.name)}${it.kind === 'folder' ? '/' : ''}</a></li>`);
    }
    cursor = page.nextCursor;
  } while (cursor);
  const title = escapeXml(`/${d.target.segments.join('/')}`);
  const html = `<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><ul>${rows.join('')}</ul>\n`;
  d.res.status(200);
  d.res.setHeader('Content-Type', 'text/html; charset=utf-8');
  d.res.setHeader('Content-Security-Policy', "default-src 'none'");
  d.res.setHeader('Content-Length', Buffer.byteLength(html));
  d.res.end(head ? undefined : html);
}
