import type { z } from 'zod';

import { DomainError, parseInput } from '@svc/kit';

import { checkDepth } from './snapshots.js';

/**
 * Input is checked again here with the schemas the gateway checks it with (@svc/api's
 * schemas/profiles.ts): a malformed body is a 400 with the field named; a well-formed body that
 * would corrupt history is a 422 (history.ts).
 */

/** Parses with a schema; a failure is a 400 whose message names the field. */
export function parse<T extends z.ZodType>(schema: T, value: unknown, where = 'body'): z.infer<T> {
  return parseInput(schema, value, { where });
}

export function parseJson(text: string, where = 'body'): unknown {
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_json', `${where} is not valid JSON.`);
  }
  // Every walk of a profile (zod, canonical forms, merges) recurses: too deep a value is refused first.
  checkDepth(value);
  return value;
}
