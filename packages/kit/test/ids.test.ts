import { hasPrefix, newId, randomHex } from '@svc/kit';

describe('ids', () => {
  test('ids are unique, well formed and sort in the order they were made, across many refills of the random pool', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('ord'));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => hasPrefix(id, 'ord'))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
  });

  test('ids of other milliseconds carry fresh randomness', () => {
    const tails = new Set(Array.from({ length: 1000 }, (_, i) => newId('x', 1_700_000_000_000 + i * 1000).slice(-16)));
    expect(tails.size).toBe(1000);
  });

  test('randomHex gives n fresh bytes each time', () => {
    const values = Array.from({ length: 2000 }, () => randomHex(12));
    expect(values.every((v) => /^[0-9a-f]{24}$/.test(v))).toBe(true);
    expect(new Set(values).size).toBe(values.length);
  });
});
