/**
 * XML for WebDAV bodies: reading (saxes, a conformant XML 1.0 + namespaces parser, into a small
 * element tree) and writing (our own escaping: WebDAV answers are short fixed shapes).
 */
import type { Request } from 'express';
import { SaxesParser } from 'saxes';

import { DomainError } from '@svc/kit';

export const DAV = 'DAV:';
/** Largest XML request body read (PROPFIND, PROPPATCH, LOCK). */
export const MAX_XML_BYTES = 1024 * 1024;

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

/**
 * Parses a WebDAV body into its root element, namespaces resolved. A DOCTYPE is refused (so no
 * entity is ever declared, let alone expanded: no XXE, no billion laughs); only the five
 * predefined entities and character references are known. Throws XmlError at the first fault.
 */
export function parseXml(text: string): XmlElement {
  const parser = new SaxesParser({ xmlns: true });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  const top = () => stack[stack.length - 1];
  parser.on('doctype', () => {
    throw new XmlError('a DOCTYPE is not allowed');
  });
  parser.on('opentag', (tag) => {
    // Namespace declarations are not attributes of the element (saxes has resolved every name).
    const attrs = Object.values(tag.attributes)
      .filter((a) => a.name !== 'xmlns' && a.prefix !== 'xmlns')
      .map((a) => ({ ns: a.uri, name: a.local, value: a.value }));
    const el: XmlElement = { ns: tag.uri, name: tag.local, attrs, children: [] };
    const parent = top();
    if (parent) parent.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  // Text outside the root element is whitespace (saxes refuses anything else).
  parser.on('text', (t) => top()?.children.push(t));
  parser.on('cdata', (t) => top()?.children.push(t));
  try {
    parser.write(text).close();
  } catch (err) {
    if (err instanceof XmlError) throw err;
    throw new XmlError((err as Error).message.replace(/\.$/, ''));
  }
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
export function emptyProp(ns: string, name: string): string {
  return ns === DAV ? `<D:${name}/>` : ns ? `<ns0:${name} xmlns:ns0="${escapeXml(ns)}"/>` : `<${name} xmlns=""/>`;
}

export const elements = (e: XmlElement) => e.children.filter((c): c is XmlElement => typeof c !== 'string');
export const child = (e: XmlElement, name: string, ns = DAV) => elements(e).find((c) => c.ns === ns && c.name === name);

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

/** The request's XML body (at most 1 MiB), or null when it has none; 400 when it is not well-formed. */
export async function readXml(req: Request): Promise<XmlElement | null> {
  const text = await readBody(req);
  if (!text.trim()) return null;
  try {
    return parseXml(text);
  } catch (err) {
    throw new DomainError('invalid_argument', 'invalid_xml', `The XML body is not well-formed: ${(err as Error).message}.`);
  }
}
