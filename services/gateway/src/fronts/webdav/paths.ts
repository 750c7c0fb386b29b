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
export function destinationOf(req: Request, prefix: string): string[] | null {
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
