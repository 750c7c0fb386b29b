import { parseRange } from '@svc/dispatch';
import { escapeXml, hrefOf, parseIfHeader, parseXml, serializeElement } from '@svc/gateway/dist/fronts/webdav/dav.js';

// The protocol pieces of the WebDAV front and of content reads, without a stack (multipart forms:
// services/gateway/test/multipart.test.ts).

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
      { resource: undefined, conditions: [{ not: false, token: 'urn:uuid:1' }, { not: false, etag: '"e"' }] },
      { resource: undefined, conditions: [{ not: true, token: 'DAV:no-lock' }] },
    ]);
    expect(parseIfHeader('<http://h/dav/a> (<urn:uuid:2>)')).toEqual([{ resource: 'http://h/dav/a', conditions: [{ not: false, token: 'urn:uuid:2' }] }]);
    for (const bad of ['', 'x', '()', '<http://h/a>']) expect(() => parseIfHeader(bad)).toThrow();
  });

  test('hrefs encode each segment', () => {
    expect(hrefOf('/dav', ['a b', 'c#d'], false)).toBe('/dav/a%20b/c%23d');
    expect(hrefOf('/dav', ['dir'], true)).toBe('/dav/dir/');
    expect(hrefOf('/dav', [], true)).toBe('/dav/');
  });
});

describe('content helpers', () => {
  test('Range: one range of bytes, else the whole file', () => {
    expect(parseRange('bytes=0-9')).toEqual({ rangeStart: 0, rangeEnd: 9 });
    expect(parseRange('bytes=5-')).toEqual({ rangeStart: 5, rangeEnd: undefined });
    expect(parseRange('bytes=-3')).toEqual({ suffixLength: 3 });
    for (const ignored of [undefined, 'bytes=5-1', 'bytes=0-1,3-4', 'items=0-1', 'bytes=-']) expect(parseRange(ignored)).toEqual({});
  });
});
