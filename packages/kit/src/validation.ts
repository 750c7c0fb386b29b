import type { z } from 'zod';

import type { ErrorCode } from './error-codes.js';
import { DomainError } from './errors.js';

const KINDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
};
const UNITS: Record<string, string> = { string: ' characters', array: ' items', set: ' items', file: ' bytes' };

/**
 * A validation issue as a sentence for the client. Messages a schema wrote itself pass through;
 * zod's generic ones ("Invalid input: expected string, received undefined") are reworded.
 */
export function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      const kind = KINDS[issue.expected] ?? issue.expected;
      return issue.message.endsWith('received undefined') ? `${kind} is required.` : `must be ${kind}.`;
    }
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}.`;
    case 'too_big':
    case 'too_small': {
      if (!/^Too (big|small):/.test(issue.message)) return issue.message;
      const big = issue.code === 'too_big';
      const bound = big ? issue.maximum : issue.minimum;
      const word = issue.inclusive === false ? (big ? 'less than' : 'more than') : big ? 'at most' : 'at least';
      return `must be ${word} ${bound}${UNITS[issue.origin] ?? ''}.`;
    }
    case 'invalid_value':
      return /^Invalid (option|input)/.test(issue.message)
        ? `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`
        : issue.message;
    default:
      return issue.message;
  }
}

/**
 * Parses input with a schema; a failure is a 400 (`invalid_argument`) whose message names the
 * field (`body.name: a string is required.`), prefixed with `where` when given.
 */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, options: { where?: string; code?: ErrorCode } = {}): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = issue.path.map(String).join('.');
  const field = options.where ? (path ? `${options.where}.${path}` : options.where) : path;
  throw new DomainError('invalid_argument', options.code ?? 'invalid_request', field ? `${field}: ${describeIssue(issue)}` : describeIssue(issue));
}
