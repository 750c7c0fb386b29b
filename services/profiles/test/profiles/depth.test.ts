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
      deepEqual(deep, structuredClone(deep));
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

test('deepEqual answers what comparing the canonical forms answers, for random JSON values', () => {
  let seed = 7;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const value = (depth: number): unknown => {
    const pick = rnd(depth > 3 ? 6 : 9);
    if (pick === 0) return null;
    if (pick === 1) return rnd(2) === 0;
    if (pick === 2) return [0, -0, 1, 1.5, NaN, Infinity][rnd(6)];
    if (pick === 3) return ['a', 'b', ''][rnd(3)];
    if (pick === 4) return undefined;
    if (pick === 5) return rnd(3) - 1;
    if (pick === 6) return Array.from({ length: rnd(3) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (const k of ['x', 'y', 'z'].slice(0, rnd(4))) o[k] = value(depth + 1);
    return rnd(2) ? o : Object.fromEntries(Object.entries(o).reverse());
  };
  let equal = 0;
  for (let i = 0; i < 20000; i++) {
    const a = value(0);
    // Half the time a reordered copy of a (equal), else another value (mostly different).
    const b = rnd(2) ? JSON.parse(JSON.stringify([a]))[0] : value(0);
    const want = canonical(a) === canonical(b);
    if (want) equal++;
    expect([deepEqual(a, b), a, b]).toEqual([want, a, b]);
  }
  expect(equal).toBeGreaterThan(2000);
});
