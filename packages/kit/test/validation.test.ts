import { z } from 'zod';

import { DomainError, parseInput } from '@svc/kit';

const message = (schema: z.ZodType, value: unknown, where?: string) => {
  try {
    parseInput(schema, value, { where });
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('invalid_request');
    return (err as DomainError).message;
  }
  throw new Error('parsed');
};

test('parseInput names the field and says what is wrong in a sentence', () => {
  const S = z.object({ name: z.string().min(1, 'is required'), role: z.enum(['a', 'b']), kind: z.enum(['x'], { error: 'must be x' }) }).strict();
  const ok = { name: 'n', role: 'a', kind: 'x' };
  expect(parseInput(S, ok)).toEqual(ok);
  expect(message(S, { ...ok, name: undefined })).toBe('name: a string is required.');
  expect(message(S, { ...ok, name: '' }, 'body')).toBe('body.name: is required');
  expect(message(S, { ...ok, role: 'c' })).toBe('role: must be one of "a", "b".');
  expect(message(S, { ...ok, kind: 'y' })).toBe('kind: must be x');
  expect(message(S, 'text', 'body')).toBe('body: must be a JSON object.');
  expect(message(S, { ...ok, extra: 1 }, 'body')).toBe('body: unknown field "extra".');
  expect(message(z.number().gt(0), 0)).toBe('must be more than 0.');
  expect(message(z.array(z.string()).max(2), ['a', 'b', 'c'], 'query.ids')).toBe('query.ids: must be at most 2 items.');
});
