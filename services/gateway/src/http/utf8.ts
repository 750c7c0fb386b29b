import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';

import { DomainError } from '@svc/kit';

/**
 * Text the platform stores is UTF-8. Decoders replace what is not with U+FFFD and go on; these
 * checks refuse it instead, with a 400 that says where, before anything is decoded and stored.
 */

const notUtf8 = (where: string) => new DomainError('invalid_argument', 'invalid_encoding', `${where}: is not valid UTF-8 (after percent-decoding).`);

/** Whether a URL part (as node hands it over: one char per byte), once percent-decoded, is UTF-8. */
export function isUtf8Url(s: string): boolean {
  if (!/%[89a-f]|[\u0080-\uffff]/i.test(s)) return true; // ASCII only, percent-encoded ASCII only
  const bytes = Buffer.allocUnsafe(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const hex = s.charCodeAt(i) === 0x25 ? s.slice(i + 1, i + 3) : '';
    if (/^[0-9a-f]{2}$/i.test(hex)) {
      bytes[n++] = parseInt(hex, 16);
      i += 2;
    } else bytes[n++] = s.charCodeAt(i) & 0xff;
  }
  return isUtf8(bytes.subarray(0, n));
}

/** Refuses (400 invalid_encoding) a query string that does not decode to UTF-8. */
export function checkQueryUtf8(url: string): void {
  const q = url.indexOf('?');
  if (q >= 0 && !isUtf8Url(url.slice(q + 1))) throw notUtf8('query');
}

/** Refuses a path segment that does not decode to UTF-8. */
export function checkPathUtf8(segment: string): void {
  if (!isUtf8Url(segment)) throw notUtf8('path');
}

/**
 * express.json's `verify` hook, on the raw bytes before they are decoded: a charset other than
 * UTF-8 is 415, bytes that are not UTF-8 are 400 (instead of U+FFFD stored in their place).
 */
export function verifyJsonUtf8(_req: IncomingMessage, _res: unknown, buf: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8') {
    throw new DomainError('unsupported_media_type', 'unsupported_media_type', `A JSON body must be UTF-8 (charset=${encoding} is not accepted).`);
  }
  if (!isUtf8(buf)) throw notUtf8('body');
}
