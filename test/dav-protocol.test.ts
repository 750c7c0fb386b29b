import { Readable } from 'node:stream';

import { dispositionParams, MultipartReader } from '@svc/gateway/dist/fronts/api/drive.js';
import { parseIfHeader } from '@svc/gateway/dist/fronts/webdav/if-header.js';
import { hrefOf } from '@svc/gateway/dist/fronts/webdav/paths.js';
import { escapeXml, parseXml, serializeElement } from '@svc/gateway/dist/fronts/webdav/xml.js';

// The protocol pieces of the WebDAV front and the upload route, without a stack.

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

describe('upload helpers', () => {
  test('Content-Disposition parameters', () => {
    expect(dispositionParams('form-data; name="file"; filename="a \\"b\\".txt"')).toEqual({ name: 'file', filename: 'a "b".txt' });
    expect(dispositionParams(`form-data; name=f; filename="x.txt"; filename*=UTF-8''%E6%97%A5.txt`)).toEqual({ name: 'f', filename: '日.txt' });
  });

  async function parts(body: Buffer, boundary: string, chunk: number) {
    const pieces: Buffer[] = [];
    for (let i = 0; i < body.length; i += chunk) pieces.push(body.subarray(i, i + chunk));
    const r = new MultipartReader(Readable.from(pieces), boundary);
    const out: Array<{ headers: Record<string, string>; body: string }> = [];
    for (let h = await r.nextPart(); h; h = await r.nextPart()) {
      const bufs: Buffer[] = [];
      for await (const b of r.body()) bufs.push(b);
      out.push({ headers: h, body: Buffer.concat(bufs).toString('latin1') });
    }
    return out;
  }

  test('multipart: parts stream out whatever the chunking, boundaries inside data are not boundaries', async () => {
    const boundary = '----x7';
    const data = 'line\r\n------x-not\r\n--\r\n------x\r\n--';
    const body = Buffer.from(
      `preamble\r\n--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nn.txt\r\n--${boundary}\r\n` +
        `Content-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: text/plain\r\n\r\n${data}\r\n--${boundary}--\r\nepilogue`,
    );
    for (const chunk of [1, 2, 3, 7, 13, 64, 1000]) {
      const got = await parts(body, boundary, chunk);
      expect(got).toEqual([
        { headers: { 'content-disposition': 'form-data; name="name"' }, body: 'n.txt' },
        { headers: { 'content-disposition': 'form-data; name="file"; filename="f.bin"', 'content-type': 'text/plain' }, body: data },
      ]);
    }
    expect(MultipartReader.boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(MultipartReader.boundaryOf('multipart/form-data; charset=x; boundary=abc')).toBe('abc');
    expect(MultipartReader.boundaryOf('application/octet-stream')).toBeUndefined();
  });

  test('multipart: a body cut short is malformed', async () => {
    const body = Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nabc');
    await expect(parts(body, 'b', 4)).rejects.toMatchObject({ code: 'invalid_multipart' });
  });
});
