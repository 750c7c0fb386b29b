import type { z } from 'zod';

import { type Content, MAX_JSON_DEPTH, type Route, type RouteInput } from '@svc/api';
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

/**
 * Whether a parsed JSON value nests deeper than `max` levels, found without recursion (an explicit
 * stack), so that input built to overflow the call stack is refused before anything walks it.
 */
export function nestsDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The first finding in a JSON value, walked without recursion: the path of a string holding U+0000
 * (which no PostgreSQL text column or JSON document can hold), or of a number that is not finite
 * (JSON cannot carry Infinity: a parsed ±Infinity is a literal that overflowed, such as 1e400).
 */
function badValue(value: unknown, root: string): { path: string; problem: 'nul' | 'infinite' } | undefined {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\0')) return { path, problem: 'nul' };
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { path, problem: 'infinite' };
    } else if (typeof v === 'object' && v !== null) {
      // Pushed in reverse so that the first offending field in document order is the one named.
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], `${path}.${entries[i]![0]}`]);
    }
  }
  return undefined;
}

function parsePart(schema: z.ZodType | undefined, value: unknown, where: string) {
  if (!schema) return where === 'body' ? undefined : {};
  // Refused here, as bad input, rather than failing deeper: nesting that would overflow a recursive
  // walk (here, in zod, in a service), U+0000 that no PostgreSQL text can hold, and numbers that
  // overflowed to Infinity (which a schema's default would otherwise silently replace).
  if (nestsDeeperThan(value)) {
    throw new DomainError('invalid_argument', 'invalid_request', `${where}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects.`);
  }
  const bad = badValue(value, where);
  if (bad?.problem === 'nul')
    throw new DomainError('invalid_argument', 'invalid_request', `${bad.path}: must not contain the NUL character (U+0000).`);
  if (bad) throw new DomainError('invalid_argument', 'invalid_request', `${bad.path}: must be a finite number (the literal is out of range).`);
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
