/** The hostile values the mutations draw from. */

/** Placeholders for JSON text that JSON.stringify cannot write (1e400, -0, 2^53+1 exactly): see `jsonText`. */
export const raw = (text: string) => `\u0001raw:${text}\u0001`;

/** JSON text of a value, with `raw(...)` placeholders written as their literal text. */
export function jsonText(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(/"\\u0001raw:(.*?)\\u0001"/g, (_m, text: string) => JSON.parse(`"${text}"`));
}

export const UNICODE = [
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udfffy',
  '\u202eevil\u202c.txt',
  'שלום עולם',
  '😀👩‍👩‍👧‍👦',
  'e\u0301\u0301\u0301\u0301',
  '\ufeffbom',
  '\uffff\ufffe',
  '𝕳𝖊𝖑𝖑𝖔',
  'İı',
  'line\u2028sep\u2029',
  '字'.repeat(300),
  '\u001b[31mred',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '${jndi:ldap://127.0.0.1/a}',
  '%s%n%x',
  '../../etc/passwd',
];

export const NUMBERS: unknown[] = [
  raw('-0'),
  1e308,
  raw('1e400'),
  raw('-1e400'),
  raw('1e-400'),
  'NaN',
  'Infinity',
  raw('9007199254740993'),
  -1,
  0.5,
  -2147483649,
  raw('123456789012345678901234567890'),
  raw('0.0000000000000000000000001'),
];

export const WRONG_TYPES: unknown[] = [12345, -1, true, false, null, {}, [], 'str', [1, [2]], { a: { b: 1 } }, '', 0];

const long = (n: number) => 'a'.repeat(n);

/** Path segments as sent (never encoded again). */
export const PATH_TRICKS = [
  '..',
  '.',
  '%2e%2e',
  '%2E%2E%2F%2E%2E',
  '..%2f..%2fetc%2fpasswd',
  '%00',
  'x%00y',
  '%2F',
  '%ff',
  '%',
  '%zz',
  '%252e%252e',
  '%C0%AE%C0%AE',
  '%ED%A0%80',
  ';x=1',
  '~',
  '*',
  long(300),
  long(8000),
  long(70000),
  '%E2%80%AE',
  '%F0%9F%98%80',
];

export const CONTENT_TYPES: Array<[string | null, (json: string) => string | Buffer]> = [
  ['text/plain', (j) => j],
  ['application/x-www-form-urlencoded', () => 'a=1&b=2'],
  ['application/xml', () => '<a>1</a>'],
  ['application/json', () => '{"a":'],
  ['application/json', () => ''],
  ['application/json', () => '[]'],
  ['application/json', () => '"a string"'],
  ['application/json', () => 'null'],
  ['application/json', () => '1'],
  ['application/json', (j) => '\ufeff' + j],
  ['application/json', (j) => Buffer.concat([Buffer.from(j.slice(0, -1) || '{'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('}')])],
  ['application/json; charset=utf-16le', (j) => j],
  ['application/merge-patch+json', (j) => j],
  ['multipart/form-data', () => '--x\r\n\r\n--x--'],
  ['multipart/form-data; boundary=zz', () => 'garbage without parts'],
  [
    'multipart/form-data; boundary=zz',
    () => '--zz\r\nContent-Disposition: form-data; name="file"; filename="../../a\u0000.txt"\r\n\r\nbody\r\n--zz--\r\n',
  ],
  [null, (j) => j],
  ['application/json', (j) => j + j],
  ['application/json', () => '{"a":1,"a":2}'],
];

/** Cursor-like values (base64 of things a server might decode). */
export const CURSORS = [
  'AAAA',
  '!!!!',
  Buffer.from('{"a":1}').toString('base64url'),
  Buffer.from('not json').toString('base64url'),
  Buffer.from('{"id":null,"at":"x"}').toString('base64url'),
  Buffer.from('[1,2,3]').toString('base64url'),
  Buffer.from('{"offset":-1}').toString('base64url'),
  Buffer.from('{"offset":1e400}').toString('base64url'),
  Buffer.from('"\u0000"').toString('base64url'),
  'eyJ',
];

export const HEADER_VALUES = [
  '*',
  'W/"x"',
  '"' + long(3000) + '"',
  '""',
  'bytes=0-',
  'bytes=-0',
  'bytes=99999999999999999999-',
  'bytes=5-1',
  Array.from({ length: 200 }, (_, i) => `${i}-${i}`)
    .join(',')
    .replace(/^/, 'bytes='),
  'abc',
  '-1',
  '99999999999999999999999',
  '\xff\xfe',
  long(9000),
];

/** Percent-encodes a string for a URL, lone surrogates included (as their WTF-8 bytes). */
export function encodeLoose(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    let out = '';
    for (const ch of s) {
      const code = ch.codePointAt(0)!;
      if (code >= 0xd800 && code <= 0xdfff) {
        const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
        out += bytes.map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');
      } else out += encodeURIComponent(ch);
    }
    return out;
  }
}

/** `levels` nested arrays around a leaf, as raw JSON text. */
export const nestedArrays = (levels: number) => raw('['.repeat(levels) + '1' + ']'.repeat(levels));
export const nestedObjects = (levels: number) => raw('{"a":'.repeat(levels) + '1' + '}'.repeat(levels));
