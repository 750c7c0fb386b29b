/** Properties (RFC 4918 15): the live ones computed from an item, and PROPFIND's answer for one resource. */
import type { drive } from '@svc/proto';

import { STATUS_TEXT } from './answers.js';
import { hrefOf } from './paths.js';
import { DAV, emptyProp, escapeXml } from './xml.js';

/** A resource as PROPFIND sees it: an item, or the drive root. */
export interface Resource {
  item?: drive.Item;
  segments: string[];
}

export const LIVE = [
  'creationdate',
  'displayname',
  'getcontentlength',
  'getcontenttype',
  'getetag',
  'getlastmodified',
  'lockdiscovery',
  'resourcetype',
  'supportedlock',
] as const;
/** Live properties a client cannot set (all of them here). */
export const PROTECTED = new Set<string>(LIVE);

export function isCollection(r: Resource): boolean {
  return !r.item || r.item.kind === 'folder';
}

export function activeLock(prefix: string, l: drive.Lock, self: Resource): string {
  const remaining = Math.max(0, Math.round((Date.parse(l.expiresAt) - Date.now()) / 1000));
  const rootSegs = l.rootPath ? l.rootPath.split('/') : [];
  const rootIsSelf = self.item?.id === l.rootId;
  const root = hrefOf(prefix, rootSegs, rootIsSelf ? isCollection(self) : true);
  return (
    `<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:${l.scope}/></D:lockscope>` +
    `<D:depth>${l.deep ? 'infinity' : '0'}</D:depth>${l.owner}` +
    `<D:timeout>Second-${remaining}</D:timeout><D:locktoken><D:href>${escapeXml(l.token)}</D:href></D:locktoken>` +
    `<D:lockroot><D:href>${escapeXml(root)}</D:href></D:lockroot></D:activelock>`
  );
}

/** A live property's value, or undefined when the resource has none. */
function liveProp(prefix: string, r: Resource, name: string): string | undefined {
  const it = r.item;
  switch (name) {
    case 'resourcetype':
      return isCollection(r) ? '<D:resourcetype><D:collection/></D:resourcetype>' : '<D:resourcetype/>';
    case 'displayname':
      return `<D:displayname>${escapeXml(it?.name ?? '')}</D:displayname>`;
    case 'getcontentlength':
      return it?.kind === 'file' ? `<D:getcontentlength>${it.size}</D:getcontentlength>` : undefined;
    case 'getcontenttype':
      return it?.kind === 'file' ? `<D:getcontenttype>${escapeXml(it.contentType ?? 'application/octet-stream')}</D:getcontenttype>` : undefined;
    case 'getetag':
      return it ? `<D:getetag>${escapeXml(it.etag)}</D:getetag>` : undefined;
    case 'getlastmodified':
      return it ? `<D:getlastmodified>${new Date(it.updatedAt).toUTCString()}</D:getlastmodified>` : undefined;
    case 'creationdate':
      return it ? `<D:creationdate>${it.createdAt}</D:creationdate>` : undefined;
    case 'supportedlock':
      return (
        '<D:supportedlock>' +
        '<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>' +
        '<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>' +
        '</D:supportedlock>'
      );
    case 'lockdiscovery':
      return `<D:lockdiscovery>${(it?.locks ?? []).map((l) => activeLock(prefix, l, r)).join('')}</D:lockdiscovery>`;
  }
  return undefined;
}

export type PropRequest = { kind: 'all' } | { kind: 'names' } | { kind: 'props'; props: Array<{ ns: string; name: string }> };

export function propResponse(prefix: string, r: Resource, want: PropRequest): string {
  const found: string[] = [];
  const missing: string[] = [];
  const dead = r.item?.properties ?? [];
  if (want.kind === 'names') {
    for (const n of LIVE) if (liveProp(prefix, r, n) !== undefined) found.push(`<D:${n}/>`);
    for (const p of dead) found.push(emptyProp(p.ns, p.name));
  } else if (want.kind === 'all') {
    for (const n of LIVE) {
      const v = liveProp(prefix, r, n);
      if (v !== undefined) found.push(v);
    }
    for (const p of dead) found.push(p.xml);
  } else {
    for (const p of want.props) {
      const v = p.ns === DAV ? liveProp(prefix, r, p.name) : undefined;
      const d = v === undefined ? dead.find((x) => x.ns === p.ns && x.name === p.name) : undefined;
      if (v !== undefined) found.push(v);
      else if (d) found.push(d.xml);
      else missing.push(emptyProp(p.ns, p.name));
    }
  }
  const propstat = (props: string[], status: number) =>
    `<D:propstat><D:prop>${props.join('')}</D:prop><D:status>HTTP/1.1 ${status} ${STATUS_TEXT[status]}</D:status></D:propstat>`;
  const href = hrefOf(prefix, r.segments, isCollection(r));
  return (
    `<D:response><D:href>${escapeXml(href)}</D:href>` +
    (found.length || !missing.length ? propstat(found, 200) : '') +
    (missing.length ? propstat(missing, 404) : '') +
    '</D:response>'
  );
}
