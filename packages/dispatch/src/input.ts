import type { z } from 'zod';

import type { Content, Route, RouteInput } from '@svc/api';
import { DomainError, parseInput } from '@svc/kit';

/** An operation's input as a front received it, before validation. */
export interface RawInput {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  /** Request headers (lowercase names); only those the operation declares are read. */
  headers?: Record<string, unknown>;
  /** The JSON body, parsed but not yet validated (undefined: none was sent). */
  body?: unknown;
  /** Reads the bytes of an operation that takes content; called once the input is valid. */
  content?: () => Promise<Content>;
  /** A body the front could not take (not JSON where JSON is declared): refused after the principal checks. */
  unreadableBody?: DomainError;
}

/** The path of the first string in a JSON value that holds U+0000, if any. */
function nulPath(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const found = nulPath(v, `${path}.${k}`);
    if (found) return found;
  }
  return undefined;
}

function parsePart(schema: z.ZodType | undefined, value: unknown, where: string) {
  if (!schema) return where === 'body' ? undefined : {};
  // No text column or JSON document in PostgreSQL can hold U+0000: refused here, as bad input,
  // rather than failing in a service's SQL.
  const nul = nulPath(value, where);
  if (nul) throw new DomainError('invalid_argument', 'invalid_request', `${nul}: must not contain the NUL character (U+0000).`);
  return parseInput(schema, value ?? (where === 'body' ? undefined : {}), { where });
}

/** Validates an operation's input against its declared schemas (400 naming the field when not). */
export function validateInput(route: Route, raw: RawInput): RouteInput {
  // An operation that takes no input (GET /me, /health): nothing to read.
  if (!route.params && !route.query && !route.body && !route.headers && !route.content)
    return { params: {}, query: {}, body: undefined, headers: {} };
  if (route.content && !raw.content) {
    throw new DomainError('invalid_argument', 'invalid_request', 'body: the content is required.');
  }
  return {
    params: parsePart(route.params, raw.params, 'path') as Record<string, unknown>,
    query: parsePart(route.query, raw.query, 'query') as Record<string, unknown>,
    body: parsePart(route.body, raw.body, 'body'),
    headers: parsePart(route.headers, raw.headers, 'header') as Record<string, unknown>,
  };
}
