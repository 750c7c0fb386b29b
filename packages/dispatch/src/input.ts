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

type Problem = { path: string; problem: 'deep' | 'nul' | 'surrogate' | 'infinite' };

/** A UTF-16 surrogate without its other half: not a Unicode character, and no UTF-8 text (or PostgreSQL jsonb) can hold it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first problem in a parsed JSON value, found in one walk without recursion (an explicit stack),
 * so that input built to overflow the call stack is refused before anything walks it recursively:
 * nesting deeper than `max` arrays and objects, and (when `values`) a string holding U+0000 (which no
 * PostgreSQL text column or JSON document can hold), a lone UTF-16 surrogate in a string or a key
 * (`"\ud800"`: not Unicode; PostgreSQL refuses it in jsonb, and UTF-8 would turn it into U+FFFD), or
 * a number that is not finite (JSON cannot carry Infinity: a parsed ±Infinity is a literal that
 * overflowed, such as 1e400).
 */
function findProblem(value: unknown, root: string, max: number, values: boolean): Problem | undefined {
  const stack: Array<[unknown, string, number]> = [[value, root, 0]];
  while (stack.length) {
    const [v, path, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (values && v.includes('\0')) return { path, problem: 'nul' };
      if (values && LONE_SURROGATE.test(v)) return { path, problem: 'surrogate' };
    } else if (typeof v === 'number') {
      if (values && !Number.isFinite(v)) return { path, problem: 'infinite' };
    } else if (typeof v === 'object' && v !== null) {
      if (depth + 1 > max) return { path, problem: 'deep' };
      // Pushed in reverse so that the first offending field in document order is the one named.
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], `${path}.${entries[i]![0]}`, depth + 1]);
      // A key is text too: checked after its value's problems are queued, before them in the order found.
      if (values && !Array.isArray(v)) {
        const bad = entries.find(([k]) => LONE_SURROGATE.test(k) || k.includes('\0'));
        if (bad) return { path, problem: LONE_SURROGATE.test(bad[0]) ? 'surrogate' : 'nul' };
      }
    }
  }
  return undefined;
}

/** Whether a parsed JSON value nests deeper than `max` levels of arrays and objects. */
export const nestsDeeperThan = (value: unknown, max = MAX_JSON_DEPTH): boolean => findProblem(value, '', max, false) !== undefined;

function parsePart(schema: z.ZodType | undefined, value: unknown, where: string) {
  if (!schema) return where === 'body' ? undefined : {};
  // Refused here, as bad input, rather than failing deeper: nesting that would overflow a recursive
  // walk (here, in zod, in a service), U+0000 that no PostgreSQL text can hold, and numbers that
  // overflowed to Infinity (which a schema's default would otherwise silently replace).
  const bad = findProblem(value, where, MAX_JSON_DEPTH, true);
  if (bad?.problem === 'deep') {
    throw new DomainError('invalid_argument', 'invalid_request', `${where}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects.`);
  }
  if (bad?.problem === 'nul')
    throw new DomainError('invalid_argument', 'invalid_request', `${bad.path}: must not contain the NUL character (U+0000).`);
  if (bad?.problem === 'surrogate') {
    throw new DomainError('invalid_argument', 'invalid_request', `${bad.path}: must be Unicode text (it holds a lone UTF-16 surrogate).`);
  }

  if (bad) throw new DomainError('invalid_argument', 'invalid_request', `${bad.path}: must be a finite number (the literal is out of range).`);
  if (where === 'body' && value === undefined && !schema.safeParse(undefined).success) {
    throw new DomainError('invalid_argument', 'invalid_request', 'body: a JSON body is required (send {} for the defaults).');
  }
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
