import { parseIfHeader } from '../../../dist/fronts/webdav/if-header.js';
import { hrefOf } from '../../../dist/fronts/webdav/paths.js';
import { escapeXml, parseXml, serializeElement } from '../../../dist/fronts/webdav/xml.js';

// The protocol pieces of the WebDAV front, without a stack (multipart forms:
// services/gateway/test/http/multipart.test.ts; ranges: packages/kit/test/ranges.test.ts).

describe('XML', () => {
  test('namespaces: prefixes, the default namespace, and scoping', () => {
    const el = parseXml(
      `<?xml version="1.0"?><!-- c --><D:propfind xmlns:D="DAV:" xmlns="urn:x"><D:prop><a/><D:getetag/><b xmlns=""/></D:prop></D:propfind>`,
    );
    expect(el).toMatchObject({ ns: 'DAV:', name: 'propfind' });
    const prop = el.children.find((c): c is any => typeof c !== 'string' && c.name === 'prop');
    expect(prop.children.map((c: any) => [c.ns, c.name])).toEqual([
      ['urn:x', 'a'],
      ['DAV:', 'getetag'],
      ['', 'b'],
    ]);
  });

  test('text, entities and CDATA', () => {
    const el = parseXml('<a>x &amp; &lt;y&gt; &#x1F600; &#65;<![CDATA[<raw>]]></a>');
    expect(el.children.join('')).toBe('x & <y> 😀 A<raw>');
  });

  test('malformed or dangerous documents are refused', () => {
    for (const bad of [
      '',
      '<a>',
      '<a></b>',
      '<a><b></a></b>',
      '<x:a/>',
      '<a xmlns:p=""><p:b/></a>',
      '<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>',
      '<a>&unknown;</a>',
      '<a b="1" b="2"/>',
      '<a/><b/>',
      'text<a/>',
      '<a b=1/>',
    ]) {
      expect(() => parseXml(bad)).toThrow();
    }
  });

  test('a property element serializes self-contained and parses back the same', () => {
    const src = '<p:val xmlns:p="urn:p" p:attr="1&amp;2"><q:x xmlns:q="urn:q">t&lt;</q:x><y xmlns="">n</y>日本</p:val>';
    const el = parseXml(src);
    const out = serializeElement(el);
    expect(parseXml(out)).toEqual(el);
    const noNs = parseXml('<foo xmlns="">bar</foo>');
    expect(parseXml(serializeElement(noNs))).toEqual(noNs);
    expect(escapeXml('<&">')).toBe('&lt;&amp;&quot;&gt;');
  });
});

describe('If header', () => {
  test('untagged and tagged lists, Not, tokens and entity tags', () => {
    expect(parseIfHeader('(<urn:uuid:1> ["e"]) (Not <DAV:no-lock>)')).toEqual([
      {
        resource: undefined,
        conditions: [
          { not: false, token: 'urn:uuid:1' },
          { not: false, etag: '"e"' },
        ],
      },
      { resource: undefined, conditions: [{ not: true, token: 'DAV:no-lock' }] },
    ]);
    expect(parseIfHeader('<http://h/dav/a> (<urn:uuid:2>)')).toEqual([
      { resource: 'http://h/dav/a', conditions: [{ not: false, token: 'urn:uuid:2' }] },
    ]);
    for (const bad of ['', 'x', '()', '<http://h/a>']) expect(() => parseIfHeader(bad)).toThrow();
  });

  test('hrefs encode each segment', () => {
    expect(hrefOf('/dav', ['a b', 'c#d'], false)).toBe('/dav/a%20b/c%23d');
    expect(hrefOf('/dav', ['dir'], true)).toBe('/dav/dir/');
    expect(hrefOf('/dav', [], true)).toBe('/dav/');
  });
});
