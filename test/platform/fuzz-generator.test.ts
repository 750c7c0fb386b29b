import { routes } from '@svc/api';

import { jsonText, raw } from '../support/fuzz/hostile';
import { accepts, shapesOf, validInput } from '../support/fuzz/input';
import { IdPool } from '../support/fuzz/pools';
import { Rng } from '../support/fuzz/prng';
import { sampleRegex } from '../support/fuzz/regex';
import type { Schema } from '../support/fuzz/values';

/** The fuzz generator on its own (no stack): what test/platform/fuzz.test.ts relies on. */

function patterns(schema: Schema | undefined, out = new Set<string>()): Set<string> {
  if (!schema || typeof schema !== 'object') return out;
  if (typeof schema.pattern === 'string') out.add(schema.pattern);
  for (const v of Object.values(schema)) if (v && typeof v === 'object') patterns(v as Schema, out);
  return out;
}

test('the regex sampler makes a matching string for every pattern of the route table', () => {
  const all = new Set<string>();
  for (const r of routes) for (const s of Object.values(shapesOf(r))) patterns(s, all);
  expect(all.size).toBeGreaterThan(10);
  const rng = new Rng(1);
  const failing = [...all].filter((p) => {
    const v = sampleRegex(p, rng);
    return v === null || !new RegExp(p).test(v);
  });
  expect(failing).toEqual([]);
});

test('the same seed makes the same input', () => {
  const pool = new IdPool();
  pool.add('agt_' + 'a'.repeat(26));
  for (const r of routes) {
    expect(JSON.stringify(validInput(r, new Rng(42), pool))).toBe(JSON.stringify(validInput(r, new Rng(42), pool)));
  }
});

test('most operations get an input their schemas accept, with ids from the pool', () => {
  // One id of every prefix the route table's id patterns name (`^ord_...`), as a run's answers would give.
  const all = new Set<string>();
  for (const r of routes) for (const s of Object.values(shapesOf(r))) patterns(s, all);
  const prefixes = new Set([...all].map((p) => /^\^\(?([a-z]{1,12})_/.exec(p)?.[1]).filter((p): p is string => Boolean(p)));
  expect(prefixes.size).toBeGreaterThan(10);
  const pool = new IdPool();
  for (const p of prefixes) pool.add(`${p}_${'0123456789abcdefghjkmnpqrs'}`);
  const refused = routes.filter((r) => !validInput(r, new Rng(7), pool).valid).map((r) => r.id);
  expect(refused.length).toBeLessThanOrEqual(Math.ceil(routes.length * 0.1));
  const drive = routes.find((r) => r.id === 'drive.get')!;
  const { input } = validInput(drive, new Rng(1), pool);
  expect(['file_0123456789abcdefghjkmnpqrs', 'fld_0123456789abcdefghjkmnpqrs']).toContain(input.params.id);
  expect(accepts(drive, input)).toBe(true);
});

test('raw JSON literals are written as they are', () => {
  expect(jsonText({ a: raw('1e400'), b: [raw('-0')], c: 'x' })).toBe('{"a":1e400,"b":[-0],"c":"x"}');
});
