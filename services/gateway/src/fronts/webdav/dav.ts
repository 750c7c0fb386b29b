/**
 * WebDAV (RFC 4918, class 1 and 2) over the drive, at /dav/, with HTTP Basic auth (the API key as
 * the password). Every operation goes to the drive service over gRPC: the protocol layer here
 * parses and writes XML, maps URLs to items, and evaluates `If` headers; the drive decides and
 * stores (content, dead properties, locks).
 */
import type { Request, Response } from 'express';
import type express from 'express';

import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import { type Caller, download, driveClient, parseRange, upload } from '@svc/dispatch';

import { type AuthContext, presentedSecret } from '../../auth.js';
import { bodyOf, declaredLength, finishUnreadBody, meaningfulType, sendContent } from '../../http/content.js';
import type { FrontDeps } from '../index.js';

const DAV = 'DAV:';
/** Largest XML request body read (PROPFIND, PROPPATCH, LOCK). */
const MAX_XML_BYTES = 1024 * 1024;

// XML -----------------------------------------------------------------------------------------

export interface XmlElement {
  ns: string;
  name: string;
  attrs: Array<{ ns: string; name: string; value: string }>;
  children: XmlNode[];
}
export type XmlNode = XmlElement | string;

export class XmlError extends Error {
  override name = 'XmlError';
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&([^;&\s]*);?/g, (m, name: string) => {
    if (!m.endsWith(';')) throw new XmlError('bad entity reference');
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      if (!Number.isFinite(code) || code < 1 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
        throw new XmlError('bad character reference');
      }
      return String.fromCodePoint(code);
    }
    const v = ENTITIES[name];
    if (v === undefined) throw new XmlError(`undefined entity &${name};`);
    return v;
  });
}

const NAME = /^[A-Za-z_\u00c0-\uffff][\w.\-\u00b7\u00c0-\uffff]*(:[A-Za-z_\u00c0-\uffff][\w.\-\u00b7\u00c0-\uffff]*)?$/;

/**
 * A small namespace-aware XML parser for WebDAV bodies: elements, attributes, text, CDATA,
 * comments and processing instructions; no DTDs (a DOCTYPE is refused, so no entity expansion).
 */
export function parseXml(text: string): XmlElement {
  let i = 0;
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) i = 1;
  const stack: Array<{ el: XmlElement; qname: string; scope: Map<string, string> }> = [];
  let root: XmlElement | undefined;
  const skipMisc = (what: string) => {
    if (text.startsWith('<!--', i)) {
      const e = text.indexOf('-->', i + 4);
      if (e < 0) throw new XmlError('unterminated comment');
      i = e + 3;
      return true;
    }
    if (text.startsWith('<?', i)) {
      const e = text.indexOf('?>', i + 2);
      if (e < 0) throw new XmlError('unterminated processing instruction');
      i = e + 2;
      return true;
    }
    if (text.startsWith('<!DOCTYPE', i) || text.startsWith('<!doctype', i)) throw new XmlError(`a DOCTYPE is not allowed ${what}`);
    return false;
  };
  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      if (stack.length || text.slice(i).trim()) throw new XmlError('unexpected end of document');
      break;
    }
    if (lt > i) {
      const chunk = text.slice(i, lt);
      if (stack.length) stack[stack.length - 1]!.el.children.push(decodeEntities(chunk));
      else if (chunk.trim()) throw new XmlError('text outside the root element');
    }
    i = lt;
    if (text.startsWith('<![CDATA[', i)) {
      if (!stack.length) throw new XmlError('CDATA outside the root element');
      const e = text.indexOf(']]>', i + 9);
      if (e < 0) throw new XmlError('unterminated CDATA');
      stack[stack.length - 1]!.el.children.push(text.slice(i + 9, e));
      i = e + 3;
      continue;
    }
    if (skipMisc('here')) continue;
    if (text[i + 1] === '/') {
      const e = text.indexOf('>', i);
      if (e < 0) throw new XmlError('unterminated end tag');
      const qname = text.slice(i + 2, e).trim();
      const top = stack.pop();
      if (!top || top.qname !== qname) throw new XmlError(`mismatched end tag </${qname}>`);
      i = e + 1;
      continue;
    }
    // A start tag: name, attributes, then > or />.
    if (root && !stack.length) throw new XmlError('more than one root element');
    let j = i + 1;
    while (j < n && !/[\s/>]/.test(text[j]!)) j++;
    const qname = text.slice(i + 1, j);
    if (!NAME.test(qname)) throw new XmlError(`bad element name "${qname}"`);
    const raw: Array<[string, string]> = [];
    for (;;) {
      while (j < n && /\s/.test(text[j]!)) j++;
      if (j >= n) throw new XmlError('unterminated start tag');
      if (text[j] === '>' || text.startsWith('/>', j)) break;
      let k = j;
      while (k < n && !/[\s=/>]/.test(text[k]!)) k++;
      const aname = text.slice(j, k);
      if (!NAME.test(aname)) throw new XmlError(`bad attribute name "${aname}"`);
      while (k < n && /\s/.test(text[k]!)) k++;
      if (text[k] !== '=') throw new XmlError('attribute without a value');
      k++;
      while (k < n && /\s/.test(text[k]!)) k++;
      const q = text[k];
      if (q !== '"' && q !== "'") throw new XmlError('unquoted attribute value');
      const e = text.indexOf(q, k + 1);
      if (e < 0) throw new XmlError('unterminated attribute value');
      const value = text.slice(k + 1, e);
      if (value.includes('<')) throw new XmlError('"<" in an attribute value');
      if (raw.some(([a]) => a === aname)) throw new XmlError(`duplicate attribute ${aname}`);
      raw.push([aname, decodeEntities(value)]);
      j = e + 1;
    }
    const selfClosing = text[j] === '/';
    i = j + (selfClosing ? 2 : 1);
    const parentScope = stack.length ? stack[stack.length - 1]!.scope : new Map([['xml', 'http://www.w3.org/XML/1998/namespace']]);
    let scope = parentScope;
    for (const [a, v] of raw) {
      if (a === 'xmlns' || a.startsWith('xmlns:')) {
        if (scope === parentScope) scope = new Map(parentScope);
        const prefix = a === 'xmlns' ? '' : a.slice(6);
        if (prefix && v === '') throw new XmlError(`the prefix ${prefix} cannot be bound to the empty namespace`);
        scope.set(prefix, v);
      }
    }
    const resolve = (q: string, isAttr: boolean): { ns: string; name: string } => {
      const c = q.indexOf(':');
      if (c < 0) return { ns: isAttr ? '' : (scope.get('') ?? ''), name: q };
      const prefix = q.slice(0, c);
      const ns = scope.get(prefix);
      if (ns === undefined) throw new XmlError(`unbound namespace prefix ${prefix}`);
      return { ns, name: q.slice(c + 1) };
    };
    const el: XmlElement = {
      ...resolve(qname, false),
      attrs: raw.filter(([a]) => a !== 'xmlns' && !a.startsWith('xmlns:')).map(([a, v]) => ({ ...resolve(a, true), value: v })),
      children: [],
    };
    if (stack.length) stack[stack.length - 1]!.el.children.push(el);
    else root = el;
    if (!selfClosing) stack.push({ el, qname, scope });
  }
  if (stack.length) throw new XmlError(`unclosed element <${stack[stack.length - 1]!.qname}>`);
  if (!root) throw new XmlError('no root element');
  return root;
}

export const escapeXml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;')).replace(/\r/g, '&#13;');

/** An element as a self-contained XML fragment: every namespace it uses is declared on it. */
export function serializeElement(el: XmlElement): string {
  const prefixes = new Map<string, string>();
  const prefixOf = (ns: string) => {
    let p = prefixes.get(ns);
    if (!p) prefixes.set(ns, (p = `ns${prefixes.size}`));
    return p;
  };
  const write = (e: XmlElement): string => {
    const tag = e.ns ? `${prefixOf(e.ns)}:${e.name}` : e.name;
    const attrs = e.attrs.map((a) => ` ${a.ns ? `${prefixOf(a.ns)}:` : ''}${a.name}="${escapeXml(a.value)}"`).join('');
    const inner = e.children.map((c) => (typeof c === 'string' ? escapeXml(c) : write(c))).join('');
    return inner ? `<${tag}${attrs}>${inner}</${tag}>` : `<${tag}${attrs}/>`;
  };
  const body = write(el);
  const decls = [...prefixes].map(([ns, p]) => ` xmlns:${p}="${escapeXml(ns)}"`).join('');
  // Declarations go on the outer element, right after its name.
  const m = /^<[^\s/>]+/.exec(body)!;
  return m[0] + decls + (el.ns ? '' : ' xmlns=""') + body.slice(m[0].length);
}

/** An empty element of a property name (for 404 propstats and propname). */
function emptyProp(ns: string, name: string): string {
  return ns === DAV ? `<D:${name}/>` : ns ? `<ns0:${name} xmlns:ns0="${escapeXml(ns)}"/>` : `<${name} xmlns=""/>`;
}

const elements = (e: XmlElement) => e.children.filter((c): c is XmlElement => typeof c !== 'string');
const child = (e: XmlElement, name: string, ns = DAV) => elements(e).find((c) => c.ns === ns && c.name === name);
const textOf = (e: XmlElement): string => e.children.map((c) => (typeof c === 'string' ? c : textOf(c))).join('');

// The If header (RFC 4918 10.4) ------------------------------------------------------------------

export interface IfCondition {
  not: boolean;
  token?: string;
  etag?: string;
}
export interface IfList {
  /** The resource a tagged list applies to (a path), or undefined for the request URI. */
  resource?: string;
  conditions: IfCondition[];
}

export function parseIfHeader(v: string): IfList[] {
  const lists: IfList[] = [];
  let i = 0;
  let resource: string | undefined;
  const bad = () => new DomainError('invalid_argument', 'invalid_if_header', 'The If header is malformed.');
  // Lenient at the very end: some clients (litmus 0.13) cut long If headers short; what is there
  // is still evaluated, an unterminated last condition simply never matches.
  const until = (close: string, from: number) => {
    const e = v.indexOf(close, from);
    return e < 0 ? v.length : e;
  };
  const ws = () => {
    while (i < v.length && /\s/.test(v[i]!)) i++;
  };
  ws();
  while (i < v.length) {
    if (v[i] === '<') {
      const e = v.indexOf('>', i);
      if (e < 0) throw bad();
      resource = v.slice(i + 1, e);
      i = e + 1;
      ws();
      if (v[i] !== '(') throw bad();
      continue;
    }
    if (v[i] !== '(') throw bad();
    i++;
    const conditions: IfCondition[] = [];
    for (;;) {
      ws();
      if (v[i] === ')' || i >= v.length) {
        i++;
        break;
      }
      let not = false;
      if (/^not\b/i.test(v.slice(i, i + 4))) {
        not = true;
        i += 3;
        ws();
      }
      if (v[i] === '<') {
        const e = until('>', i);
        conditions.push({ not, token: v.slice(i + 1, e) });
        i = e + 1;
      } else if (v[i] === '[') {
        const e = until(']', i);
        conditions.push({ not, etag: v.slice(i + 1, e).trim() });
        i = e + 1;
      } else {
        throw bad();
      }
    }
    if (!conditions.length) throw bad();
    lists.push({ resource, conditions });
    ws();
  }
  if (!lists.length) throw bad();
  return lists;
}

/** The state of a resource an If list is checked against. */
interface IfState {
  etag: string | null;
  /** Tokens of the locks covering the resource. */
  tokens: string[];
}

function listPasses(list: IfList, s: IfState): boolean {
  return list.conditions.every((c) => {
    const hit = c.token !== undefined ? s.tokens.includes(c.token) : s.etag !== null && c.etag === s.etag && !s.etag.startsWith('W/');
    return c.not ? !hit : hit;
  });
}

// Paths -----------------------------------------------------------------------------------------

interface Target {
  /** The mount prefix the client used (/dav or /v1/dav). */
  prefix: string;
  segments: string[];
}

function segmentsOf(pathname: string): string[] {
  return pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new DomainError('invalid_argument', 'invalid_path', 'The URL is not validly encoded.');
      }
    });
}

export function hrefOf(prefix: string, segments: string[], collection: boolean): string {
  const p = segments.map((s) => encodeURIComponent(s)).join('/');
  return `${prefix}/${p}${collection && p ? '/' : ''}`;
}

/**
 * The item path of a Destination header (absolute URI or path), or null when it is not under
 * /dav. The host is not compared: behind an ingress the Host a client used may not be the one
 * the gateway sees.
 */
function destinationOf(req: Request, prefix: string): string[] | null {
  const raw = req.headers.destination;
  if (typeof raw !== 'string' || !raw) throw new DomainError('invalid_argument', 'missing_destination', 'A Destination header is required.');
  let pathname: string;
  try {
    pathname = new URL(raw, 'http://localhost').pathname;
  } catch {
    throw new DomainError('invalid_argument', 'invalid_destination', 'The Destination header is not a URL.');
  }
  for (const p of [prefix, '/dav', '/v1/dav']) {
    if (pathname === p || pathname.startsWith(`${p}/`)) return segmentsOf(pathname.slice(p.length));
  }
  return null;
}

// Responses -------------------------------------------------------------------------------------

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  424: 'Failed Dependency',
  423: 'Locked',
};

function sendXml(res: Response, status: number, body: string): void {
  const xml = `<?xml version="1.0" encoding="utf-8"?>\n${body}`;
  res.status(status);
  res.setHeader('Content-Type', 'application/xml; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(xml));
  res.end(xml);
}

function sendText(res: Response, status: number, message: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) return;
  for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  const body = `${message}\n`;
  res.status(status);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** An RFC 4918 error body with a precondition element (e.g. lock-token-submitted). */
function sendDavError(res: Response, status: number, condition: string, hrefs: string[] = []): void {
  const inner = hrefs.length ? hrefs.map((h) => `<D:href>${escapeXml(h)}</D:href>`).join('') : '';
  sendXml(res, status, `<D:error xmlns:D="DAV:"><D:${condition}>${inner}</D:${condition}></D:error>`);
}

// Properties ------------------------------------------------------------------------------------

/** A resource as PROPFIND sees it: an item, or the drive root. */
interface Resource {
  item?: drive.Item;
  segments: string[];
}

const LIVE = [
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
const PROTECTED = new Set<string>(LIVE);

function isCollection(r: Resource): boolean {
  return !r.item || r.item.kind === 'folder';
}

function activeLock(prefix: string, l: drive.Lock, self: Resource): string {
  const remaining = Math.max(0, Math.round((Date.parse(l.expiresAt) - Date.now()) / 1000));
  const rootSegs = l.rootPath ? l.rootPath.split('/') : [];
  const rootIsSelf = self.item?.id === l.rootId;
  const root = hrefOf(prefix, rootSegs, rootIsSelf ? isCollection(self) : true);
  return (
    `<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:${l.scope}/></D:lockscope>` +
    `<D:depth>${l.deep ? 'infinity' : '0'}</D:depth>${l.ownerXml}` +
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

type PropRequest = { kind: 'all' } | { kind: 'names' } | { kind: 'props'; props: Array<{ ns: string; name: string }> };

function propResponse(prefix: string, r: Resource, want: PropRequest): string {
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

// The handler -----------------------------------------------------------------------------------

const ALLOW = 'OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK';

async function readBody(req: Request): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_XML_BYTES) throw new DomainError('too_large', 'body_too_large', 'The XML body is too large.');
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readXml(req: Request): Promise<XmlElement | null> {
  const text = await readBody(req);
  if (!text.trim()) return null;
  try {
    return parseXml(text);
  } catch (err) {
    throw new DomainError('invalid_argument', 'invalid_xml', `The XML body is not well-formed: ${(err as Error).message}.`);
  }
}

function hasBody(req: Request): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Lock tokens an If header names (the tokens a client submits). */
function submittedTokens(lists: IfList[]): string[] {
  return [...new Set(lists.flatMap((l) => l.conditions.filter((c) => c.token && !c.not).map((c) => c.token!)))];
}

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

class Dav {
  constructor(
    private readonly deps: FrontDeps,
    private readonly req: Request,
    private readonly res: Response,
    private readonly auth: AuthContext,
    private readonly target: Target,
  ) {}

  private get caller(): Caller {
    return { token: this.auth.token, requestId: this.req.requestId };
  }

  private get rpc() {
    return { principalToken: this.auth.token, requestId: this.req.requestId };
  }

  private client() {
    return driveClient(this.deps.registry);
  }

  private async resolve(segments: string[]): Promise<drive.ResolvePathResponse> {
    return this.client().resolvePath({ segments, includeDav: true }, this.rpc);
  }

  private href(segments: string[], collection: boolean): string {
    return hrefOf(this.target.prefix, segments, collection);
  }

  /**
   * Evaluates the If header for the request URI (and tagged resources): 412 when no list holds.
   * Returns the submitted lock tokens, and the entity tag the passing list names for the
   * request URI (sent on as If-Match, so the write itself is a compare-and-swap).
   */
  private async checkIf(state: IfState): Promise<{ tokens: string[]; etag?: string }> {
    const header = this.req.headers.if;
    if (typeof header !== 'string' || !header.trim()) return { tokens: [] };
    const lists = parseIfHeader(header);
    const own = this.href(this.target.segments, false).replace(/\/$/, '');
    const states = new Map<string, IfState>();
    let passed: IfList | undefined;
    for (const list of lists) {
      let s = state;
      if (list.resource !== undefined) {
        let segs: string[];
        try {
          const u = new URL(list.resource, `http://${this.req.headers.host ?? 'localhost'}`);
          segs = segmentsOf(u.pathname.replace(/^(\/v1)?\/dav/, ''));
        } catch {
          continue;
        }
        const key = segs.join('/');
        if (key !== this.target.segments.join('/')) {
          let st = states.get(key);
          if (!st) {
            const r = await this.resolve(segs);
            st = stateOf(r.item ?? undefined, r.parent ?? undefined);
            states.set(key, st);
          }
          s = st;
        }
      }
      if (listPasses(list, s)) {
        passed ??= list;
        if (list.resource === undefined || list.resource.replace(/\/$/, '').endsWith(own)) passed = list;
      }
    }
    if (!passed) throw new DomainError('precondition_failed', 'if_header_failed', 'The If header did not match.');
    const etag = passed.conditions.find((c) => c.etag && !c.not)?.etag;
    return { tokens: submittedTokens(lists), etag: passed.resource === undefined ? etag : undefined };
  }

  async handle(): Promise<void> {
    const m = this.req.method.toUpperCase();
    switch (m) {
      case 'OPTIONS':
        return this.options();
      case 'PROPFIND':
        return this.propfind();
      case 'PROPPATCH':
        return this.proppatch();
      case 'GET':
      case 'HEAD':
        return this.get(m === 'HEAD');
      case 'PUT':
        return this.put();
      case 'MKCOL':
        return this.mkcol();
      case 'DELETE':
        return this.delete();
      case 'COPY':
      case 'MOVE':
        return this.copyMove(m === 'MOVE');
      case 'LOCK':
        return this.lock();
      case 'UNLOCK':
        return this.unlock();
      default:
        this.res.setHeader('Allow', ALLOW);
        return sendText(this.res, 405, `${m} is not supported here.`);
    }
  }

  options(): void {
    this.res.setHeader('DAV', '1, 2');
    this.res.setHeader('MS-Author-Via', 'DAV');
    this.res.setHeader('Allow', ALLOW);
    this.res.setHeader('Content-Length', '0');
    this.res.status(200).end();
  }

  async propfind(): Promise<void> {
    const depth = (this.req.headers.depth ?? 'infinity').toString().toLowerCase();
    const body = await readXml(this.req);
    let want: PropRequest = { kind: 'all' };
    if (body) {
      if (body.ns !== DAV || body.name !== 'propfind') throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:propfind body.');
      const prop = child(body, 'prop');
      if (child(body, 'propname')) want = { kind: 'names' };
      else if (prop) want = { kind: 'props', props: elements(prop).map((e) => ({ ns: e.ns, name: e.name })) };
      else if (!child(body, 'allprop')) throw new DomainError('invalid_argument', 'invalid_xml', 'A propfind names prop, allprop or propname.');
    }
    if (depth !== '0' && depth !== '1') {
      return sendDavError(this.res, 403, 'propfind-finite-depth');
    }
    const segs = this.target.segments;
    let self: Resource;
    if (!segs.length) {
      self = { segments: [] };
    } else {
      const r = await this.resolve(segs);
      if (!r.item) return sendText(this.res, 404, 'Not found.');
      self = { item: r.item, segments: segs };
    }
    const out = [propResponse(this.target.prefix, self, want)];
    if (depth === '1' && isCollection(self)) {
      let cursor: string | undefined;
      do {
        const page = await this.client().listItems(
          { parentId: self.item?.id, limit: 1000, cursor, includeDav: true },
          this.rpc,
        );
        for (const it of page.items) out.push(propResponse(this.target.prefix, { item: it, segments: [...segs, it.name] }, want));
        cursor = page.nextCursor;
      } while (cursor);
    }
    sendXml(this.res, 207, `<D:multistatus xmlns:D="DAV:">${out.join('')}</D:multistatus>`);
  }

  async proppatch(): Promise<void> {
    const segs = this.target.segments;
    const body = await readXml(this.req);
    if (!body || body.ns !== DAV || body.name !== 'propertyupdate') {
      throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:propertyupdate body.');
    }
    if (!segs.length) return sendText(this.res, 403, 'The drive root has no properties to set.');
    const r = await this.resolve(segs);
    if (!r.item) return sendText(this.res, 404, 'Not found.');
    const { tokens } = await this.checkIf(stateOf(r.item));
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
    const href = this.href(segs, r.item.kind === 'folder');
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
      return sendXml(this.res, 207, xml);
    }
    await this.client().setProperties({ id: r.item.id, patches, lockTokens: tokens }, this.rpc);
    sendXml(
      this.res,
      207,
      `<D:multistatus xmlns:D="DAV:"><D:response><D:href>${escapeXml(href)}</D:href>${propstat(names, 200)}</D:response></D:multistatus>`,
    );
  }

  async get(head: boolean): Promise<void> {
    const segs = this.target.segments;
    const r = segs.length ? await this.resolve(segs) : undefined;
    if (r && !r.item) return sendText(this.res, 404, 'Not found.');
    if (!r || r.item!.kind === 'folder') return this.index(r?.item ?? undefined, head);
    const d = await download(this.deps, this.caller, {
      id: r.item!.id,
      ...parseRange(this.req.headers.range),
      ifNoneMatch: this.req.headers['if-none-match'],
      ifRange: this.req.headers['if-range'] as string | undefined,
      headOnly: head,
    });
    await sendContent(this.req, this.res, d, { head });
  }

  /** A collection read with GET: a plain HTML index of its members. */
  private async index(folder: drive.Item | undefined, head: boolean): Promise<void> {
    const rows: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client().listItems({ parentId: folder?.id, limit: 1000, cursor, includeDav: false }, this.rpc);
      for (const it of page.items) {
        const href = this.href([...this.target.segments, it.name], it.kind === 'folder');
        rows.push(`<li><a href="${escapeXml(href)}">${escapeXml(it.name)}${it.kind === 'folder' ? '/' : ''}</a></li>`);
      }
      cursor = page.nextCursor;
    } while (cursor);
    const title = escapeXml(`/${this.target.segments.join('/')}`);
    const html = `<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><ul>${rows.join('')}</ul>\n`;
    this.res.status(200);
    this.res.setHeader('Content-Type', 'text/html; charset=utf-8');
    this.res.setHeader('Content-Security-Policy', "default-src 'none'");
    this.res.setHeader('Content-Length', Buffer.byteLength(html));
    this.res.end(head ? undefined : html);
  }

  async put(): Promise<void> {
    const segs = this.target.segments;
    if (!segs.length) return sendText(this.res, 405, 'The drive root is a collection.');
    const r = await this.resolve(segs);
    if (r.item?.kind === 'folder') return sendText(this.res, 405, 'A collection has no content to replace.');
    if (!r.item && !r.parentExists) return sendText(this.res, 409, 'The parent collection does not exist.');
    const { tokens, etag } = await this.checkIf(stateOf(r.item ?? undefined, r.parent ?? undefined));
    const ifMatch = (this.req.headers['if-match'] as string | undefined) ?? etag;
    const ct = meaningfulType(this.req.headers['content-type']);
    const result = await upload(
      this.deps,
      this.caller,
      {
        ...(r.item ? { itemId: r.item.id } : { parentId: r.parent?.id, name: segs[segs.length - 1] }),
        contentType: ct,
        declaredSize: declaredLength(this.req),
        ifMatch,
        ifNoneMatch: this.req.headers['if-none-match'] as string | undefined,
        requirePrecondition: false,
        overwrite: true,
        lockTokens: tokens,
      },
      bodyOf(this.req),
    );
    this.res.setHeader('ETag', result.item!.etag);
    if (result.created) this.res.setHeader('Location', this.href(segs, false));
    this.res.status(result.created ? 201 : 204).end();
  }

  async mkcol(): Promise<void> {
    const segs = this.target.segments;
    if (hasBody(this.req)) {
      finishUnreadBody(this.req, this.res);
      return sendText(this.res, 415, 'MKCOL takes no body.');
    }
    if (!segs.length) return sendText(this.res, 405, 'The drive root exists.');
    const r = await this.resolve(segs);
    if (r.item) return sendText(this.res, 405, 'Something already exists at this URL.');
    if (!r.parentExists) return sendText(this.res, 409, 'The parent collection does not exist.');
    const { tokens } = await this.checkIf(stateOf(undefined, r.parent ?? undefined));
    await this.client().createFolder({ parentId: r.parent?.id, name: segs[segs.length - 1]!, lockTokens: tokens }, this.rpc);
    this.res.setHeader('Location', this.href(segs, true));
    this.res.status(201).end();
  }

  async delete(): Promise<void> {
    const segs = this.target.segments;
    if (!segs.length) return sendText(this.res, 403, 'The drive root cannot be deleted.');
    const r = await this.resolve(segs);
    if (!r.item) return sendText(this.res, 404, 'Not found.');
    const { tokens, etag } = await this.checkIf(stateOf(r.item));
    await this.client().deleteItem(
      { id: r.item.id, recursive: true, ifMatch: (this.req.headers['if-match'] as string | undefined) ?? etag, lockTokens: tokens },
      this.rpc,
    );
    this.res.status(204).end();
  }

  async copyMove(move: boolean): Promise<void> {
    const segs = this.target.segments;
    const dest = destinationOf(this.req, this.target.prefix);
    if (!dest) return sendText(this.res, 502, 'The destination is not on this server.');
    if (!segs.length || !dest.length) return sendText(this.res, 403, 'The drive root cannot be copied, moved or replaced.');
    const overwrite = String(this.req.headers.overwrite ?? 'T').toUpperCase() !== 'F';
    const depth = String(this.req.headers.depth ?? 'infinity').toLowerCase();
    if (move && depth !== 'infinity') return sendText(this.res, 400, 'MOVE of a collection is always Depth: infinity.');
    if (!move && depth !== '0' && depth !== 'infinity') return sendText(this.res, 400, 'COPY takes Depth 0 or infinity.');
    if (dest.join('/') === segs.join('/')) return sendText(this.res, 403, 'The source and the destination are the same.');
    const src = await this.resolve(segs);
    if (!src.item) return sendText(this.res, 404, 'Not found.');
    const to = await this.resolve(dest);
    if (!to.item && !to.parentExists) return sendText(this.res, 409, 'The destination collection does not exist.');
    if (to.item && !overwrite) return sendText(this.res, 412, 'The destination exists and Overwrite is F.');
    const { tokens } = await this.checkIf(stateOf(src.item));
    const parentId = dest.length === 1 ? '' : (to.item ? to.item.parentId : to.parent?.id) ?? '';
    const name = dest[dest.length - 1]!;
    const call = move
      ? this.client().updateItem({ id: src.item.id, name, parentId, overwrite, lockTokens: tokens }, this.rpc)
      : this.client().copyItem({ id: src.item.id, parentId, name, overwrite, recursive: depth !== '0', lockTokens: tokens }, this.rpc);
    const result = await call.catch((err: unknown) => {
      if (err instanceof DomainError && err.code === 'name_taken' && !overwrite) {
        throw new DomainError('precondition_failed', 'name_taken', err.message);
      }
      throw err;
    });
    this.res.setHeader('Location', this.href(dest, result.item!.kind === 'folder'));
    this.res.status(result.created ? 201 : 204).end();
  }

  async lock(): Promise<void> {
    const segs = this.target.segments;
    if (!segs.length) return sendText(this.res, 403, 'The drive root cannot be locked.');
    const body = await readXml(this.req);
    const r = await this.resolve(segs);
    if (!r.item && !r.parentExists) return sendText(this.res, 409, 'The parent collection does not exist.');
    const timeout = timeoutSeconds(this.req.headers.timeout as string | undefined);
    let result: drive.LockItemResponse;
    if (!body) {
      // A refresh: the lock named in the If header.
      const header = this.req.headers.if;
      if (!r.item || typeof header !== 'string') {
        return sendText(this.res, 400, 'A LOCK without a body refreshes a lock named in the If header.');
      }
      const { tokens } = await this.checkIf(stateOf(r.item));
      const token = tokens.find((t) => r.item!.locks.some((l) => l.token === t));
      if (!token) return sendText(this.res, 412, 'The If header names no lock of this resource.');
      result = await this.client().lockItem(
        { id: r.item.id, scope: 'exclusive', deep: false, ownerXml: '', timeoutSeconds: timeout, refreshToken: token, lockTokens: [] },
        this.rpc,
      );
    } else {
      if (body.ns !== DAV || body.name !== 'lockinfo') throw new DomainError('invalid_argument', 'invalid_xml', 'Expected a DAV:lockinfo body.');
      const scopeEl = child(body, 'lockscope');
      const scope = scopeEl && child(scopeEl, 'shared') ? 'shared' : scopeEl && child(scopeEl, 'exclusive') ? 'exclusive' : undefined;
      const typeEl = child(body, 'locktype');
      if (!scope || !typeEl || !child(typeEl, 'write')) {
        throw new DomainError('invalid_argument', 'invalid_lock', 'A lock is a write lock, exclusive or shared.');
      }
      const depth = String(this.req.headers.depth ?? 'infinity').toLowerCase();
      if (depth !== '0' && depth !== 'infinity') return sendText(this.res, 400, 'LOCK takes Depth 0 or infinity.');
      const owner = child(body, 'owner');
      const { tokens } = await this.checkIf(stateOf(r.item ?? undefined, r.parent ?? undefined));
      result = await this.client().lockItem(
        {
          ...(r.item ? { id: r.item.id } : { parentId: r.parent?.id, name: segs[segs.length - 1] }),
          scope,
          deep: depth === 'infinity',
          ownerXml: owner ? serializeElement(owner) : '',
          timeoutSeconds: timeout,
          lockTokens: tokens,
        },
        this.rpc,
      );
      this.res.setHeader('Lock-Token', `<${result.lock!.token}>`);
    }
    const self: Resource = { item: result.item, segments: segs };
    sendXml(
      this.res,
      result.created ? 201 : 200,
      `<D:prop xmlns:D="DAV:"><D:lockdiscovery>${activeLock(this.target.prefix, result.lock!, self)}</D:lockdiscovery></D:prop>`,
    );
  }

  async unlock(): Promise<void> {
    const segs = this.target.segments;
    const raw = this.req.headers['lock-token'];
    const m = typeof raw === 'string' ? /^\s*<([^>]+)>\s*$/.exec(raw) : null;
    if (!m) return sendText(this.res, 400, 'UNLOCK needs a Lock-Token header.');
    if (!segs.length) return sendDavError(this.res, 409, 'lock-token-matches-request-uri');
    const r = await this.resolve(segs);
    if (!r.item) return sendText(this.res, 404, 'Not found.');
    try {
      await this.client().unlockItem({ id: r.item.id, token: m[1]! }, this.rpc);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'lock_token_mismatch') return sendDavError(this.res, 409, 'lock-token-matches-request-uri');
      throw err;
    }
    this.res.status(204).end();
  }
}

/** The If state of an item, or of a missing one (only locks inherited from its folder). */
function stateOf(item: drive.Item | undefined, parent?: drive.Item): IfState {
  if (item) return { etag: item.etag, tokens: item.locks.map((l) => l.token) };
  return { etag: null, tokens: (parent?.locks ?? []).filter((l) => l.deep).map((l) => l.token) };
}

/** A DomainError as a WebDAV answer. */
function sendDavDomainError(req: Request, res: Response, err: DomainError, prefix: string, segments: string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  finishUnreadBody(req, res);
  if (err.code === 'locked') return sendDavError(res, 423, 'lock-token-submitted', [hrefOf(prefix, segments, false)]);
  if (err.kind === 'unauthenticated') {
    return sendText(res, 401, err.message, { 'WWW-Authenticate': 'Basic realm="svc", charset="UTF-8"' });
  }
  const status = err.kind === 'conflict' ? 409 : err.httpStatus;
  const extra: Record<string, string> = {};
  if (err.kind === 'rate_limited' && err.details?.retryAfterSeconds) extra['Retry-After'] = String(err.details.retryAfterSeconds);
  if (status === 412 && typeof err.details?.etag === 'string') extra.ETag = err.details.etag;
  sendText(res, status, err.message, extra);
}

/** Mounts /dav (and /v1/dav, the gateway strips /v1 first). */
export function mountDav(app: express.Express, deps: FrontDeps): void {
  app.use('/dav', (req: Request, res: Response) => {
    const prefix = req.originalUrl.startsWith('/v1/') ? '/v1/dav' : '/dav';
    let segments: string[] = [];
    const run = async () => {
      // A fragment is never part of a request URI; one sent anyway is refused, not dropped
      // (DELETE /dav/x/#frag must not delete /dav/x/).
      if (req.originalUrl.includes('#')) throw new DomainError('invalid_argument', 'invalid_path', 'A request URI has no fragment (#).');
      segments = segmentsOf(req.path);
      const target: Target = { prefix, segments };
      if (req.method === 'OPTIONS' && !req.headers.authorization) {
        // Capability discovery works before credentials (Windows and macOS clients ask first).
        return new Dav(deps, req, res, undefined as unknown as AuthContext, target).options();
      }
      const auth = await deps.auth.authenticate(
        presentedSecret(req.headers.authorization, { basic: true }),
        undefined,
        req.ip ?? req.socket.remoteAddress ?? 'unknown',
      );
      if (auth.principal.kind !== 'human' && auth.principal.kind !== 'agent') {
        throw new DomainError('forbidden', 'principal_not_allowed', 'This credential cannot use the drive.');
      }
      await new Dav(deps, req, res, auth, target).handle();
    };
    run().catch((err: unknown) => {
      if (err instanceof DomainError) return sendDavDomainError(req, res, err, prefix, segments);
      deps.log.error({ err, requestId: req.requestId }, 'webdav request failed');
      if (res.headersSent) res.destroy();
      else sendText(res, 500, 'Internal error.');
    });
  });
}
