import { z } from 'zod';

import { MAX_JSON_DEPTH, route } from '@svc/api';
import { nestsDeeperThan, validateInput } from '@svc/dispatch';
import { DomainError } from '@svc/kit';

const nested = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

const r = route({
  id: 'test.echo',
  method: 'post',
  path: '/echo',
  summary: 'Echo.',
  tag: 'test',
  body: z.object({ value: z.unknown() }),
  response: z.unknown(),
  auth: 'none',
  principals: [],
  authority: false,
  handler: { kind: 'local', name: 'echo' },
});

const refusal = (body: unknown) => {
  try {
    validateInput(r, { body });
  } catch (err) {
    if (err instanceof DomainError) return { status: err.httpStatus, code: err.code, message: err.message };
    throw err;
  }
  return undefined;
};

test('nesting is measured without recursion: exactly the limit passes, one more is refused', () => {
  expect(nestsDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
  expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true);
  expect(nestsDeeperThan(nested(200_000))).toBe(true); // would overflow a recursive walk
  expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
  expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
});

test('a body nested beyond the limit is a 400 naming the limit, not a stack overflow', () => {
  expect(refusal({ value: nested(100_000) })).toEqual({ status: 400, code: 'invalid_request', message: expect.stringMatching(/deeper than 64/) });
  expect(refusal({ value: nested(MAX_JSON_DEPTH - 1) })).toBeUndefined();
});

test('U+0000 and an overflowed number are named by their path', () => {
  expect(refusal({ value: [{ a: 'x' }, { b: 'y\0' }] })?.message).toBe('body.value.1.b: must not contain the NUL character (U+0000).');
  expect(refusal({ value: { n: Infinity } })).toEqual({
    status: 400,
    code: 'invalid_request',
    message: expect.stringMatching(/^body\.value\.n: must be a finite number/),
  });
  expect(refusal({ value: { n: -Infinity } })?.status).toBe(400);
});
