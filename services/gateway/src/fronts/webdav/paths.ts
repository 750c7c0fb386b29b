/** Request URLs and item paths: /dav/<names...> is the drive from its root. */
import type { Request } from 'express';

import { DomainError } from '@svc/kit';

/** What a request names. */
export interface Target {
  /** The mount prefix the client used (/dav or /v1/dav). */
  prefix: string;
  segments: string[];
}

export function segmentsOf(pathname: string): string[] {
  return pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      let name: string;
      try {
        name = decodeURIComponent(s);
      } catch {
        throw new DomainError('invalid_argument', 'invalid_path', 'The URL is not validly encoded.');
      }
      // NUL and other control characters name no item (the API refuses them alike).
      if (/[\u0000-\u001f\u007f]/.test(name)) throw new DomainError('invalid_argument', 'invalid_path', 'A path cannot contain control characters.');
      return name;
    });
}

export function hrefOf(prefix: string, segments: string[], collection: boolean): string {
  const p = segments.map((s) => encodeURIComponent(s)).join('/');
  return `${prefix}/${p}${collection && p ? '/' : ''}`;
}

/** A Host value as URL parsing normalizes it (lowercase, the default port dropped), or null. */
function authority(host: string, protocol = 'http:'): string | null {
  try {
    return new URL(`${protocol}//${host}`).host;
  } catch {
    return null;
  }
}

/**
 * The item path of a Destination header (absolute URI or path), or null when it is not on this
 * server (RFC 4918 §9.9.4: 502): not under /dav, or an absolute URI whose authority is not the
 * one the request was sent to (its Host, or X-Forwarded-Host behind a trusted proxy, since the
 * Host a client used may not be the one the gateway sees). The scheme is not compared: TLS may
 * end at an ingress.
 */
export function destinationOf(req: Request, prefix: string): string[] | null {
  const raw = req.headers.destination;
  if (typeof raw !== 'string' || !raw) throw new DomainError('invalid_argument', 'missing_destination', 'A Destination header is required.');
  let url: URL;
  try {
    url = new URL(raw, 'http://localhost');
  } catch {
    throw new DomainError('invalid_argument', 'invalid_destination', 'The Destination header is not a URL.');
  }
  // Anything but a path (`/dav/…`) names an authority, `//host/…` included.
  if (!/^\/(?!\/)/.test(raw)) {
    const own = [req.headers.host, req.host].filter((h): h is string => !!h).map((h) => authority(h, url.protocol));
    if (!own.includes(url.host)) return null;
  }
  const pathname = url.pathname;
  for (const p of [prefix, '/dav', '/v1/dav']) {
    if (pathname === p || pathname.startsWith(`${p}/`)) return segmentsOf(pathname.slice(p.length));
  }
  return null;
}
