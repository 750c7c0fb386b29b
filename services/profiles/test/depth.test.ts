import { DomainError } from '@svc/kit';
import { canonical, deepEqual, MAX_DEPTH, parseJson } from '@svc/profiles';

const nested = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

test('the canonical form refuses nesting beyond the limit with a 400 instead of overflowing the stack', () => {
  expect(canonical({ b: nested(MAX_DEPTH - 1), a: 1 })).toMatch(/^\{"a":1,"b":\[/);
  for (const deep of [nested(3000), { a: nested(MAX_DEPTH) }]) {
    let err: unknown;
    try {
      deepEqual(deep, [1]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).httpStatus).toBe(400);
    expect((err as DomainError).message).toMatch(/deeper than 64 levels/);
  }
});

test('a request body nested beyond the limit is refused when parsed, before anything walks it', () => {
  expect(() => parseJson(JSON.stringify({ constraints: nested(3000) }))).toThrow(/deeper than 64 levels/);
  expect(parseJson(JSON.stringify({ constraints: nested(10) }))).toEqual({ constraints: nested(10) });
});
