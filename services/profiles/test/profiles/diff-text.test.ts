import { DomainError } from '@svc/kit';
import { diffSnapshots, diffText, mergeSnapshots } from '@svc/profiles';

/** The diff answer written in slices (diff-text.ts) against the one-piece diff (merge.ts). */
/** The work's result, and how many turns of the event loop other work had while it ran. */
async function countTurns<T>(work: Promise<T>): Promise<[T, number]> {
  let turns = 0;
  let done = false;
  const tick = () => {
    turns++;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return [await work, turns];
  } finally {
    done = true;
  }
}

const item = (id: number | string, text: string) => ({ id, question: `Question ${id}?`, answer: text, weight: { w: [1, 2, 3] } });

describe('profiles: the diff as sliced text', () => {
  test('writes what the whole diff would, key for key', async () => {
    const from = {
      constraints: [item('a', 'yes'), item('b', 'no'), item(3, 'same'), { question: 'no id' }, { question: 'no id' }, { question: 'twice' }],
      exemplars: [{ id: 'e1', label: 'good', nested: { b: 1, a: 2 } }],
      latentScores: { warmth: 0.1, '2': 'two', gone: true, same: [1] },
    };
    const to = {
      constraints: [item('b', 'changed'), item(3, 'same'), item('new', 'x'), { question: 'no id' }, { question: 'twice' }, { question: 'twice' }],
      exemplars: [{ id: 'e1', label: 'good', nested: { a: 2, b: 1 } }],
      comparisons: [{ id: 1, left: 'l', right: 'r' }],
      latentScores: { warmth: 0.5, '2': 'two', '1': 'one', same: [1], added: { x: null } },
    };
    for (const [a, b] of [
      [from, to],
      [to, from],
      [{}, to],
      [from, {}],
      [{}, {}],
    ] as const) {
      const text = await diffText({ from: 'ver_a', to: null }, a, b);
      expect(text).toBe(JSON.stringify({ from: 'ver_a', to: null, ...(await diffSnapshots(a, b)) }));
    }
    const d = JSON.parse(await diffText({ from: null, to: 'ver_b' }, from, to));
    expect(d.constraints.changed).toEqual([{ id: 'b', from: item('b', 'no'), to: item('b', 'changed') }]);
    expect(d.constraints.added).toEqual([item('new', 'x'), { question: 'twice' }]);
    expect(d.constraints.removed).toEqual([item('a', 'yes'), { question: 'no id' }]);
    expect(d.exemplars).toEqual({ added: [], removed: [], changed: [] });
    expect(d.latentScores).toEqual({
      added: { '1': 'one', added: { x: null } },
      removed: { gone: true },
      changed: { warmth: { from: 0.1, to: 0.5 } },
    });
  });

  test('gives the event loop back while it compares large snapshots', async () => {
    // 3 × 30,000 items, every one changed: hundreds of milliseconds of work in one piece before.
    const big = (tag: string) => Array.from({ length: 30_000 }, (_, i) => item(i, `${tag} ${i}`));
    const a = { constraints: big('a'), exemplars: big('a'), comparisons: big('a') };
    const b = { constraints: big('b'), exemplars: big('b'), comparisons: big('b') };
    const [text, turns] = await countTurns(diffText({ from: null, to: null }, a, b, 64 * 1024 * 1024));
    expect(JSON.parse(text).comparisons.changed).toHaveLength(30_000);
    // Other work ran in between: at least one turn per slice of a few milliseconds.
    expect(turns).toBeGreaterThan(5);
  });

  test('a merge of large branches gives the event loop back too, and merges as before', async () => {
    const big = (tag: string) => Array.from({ length: 30_000 }, (_, i) => item(i, i % 3 === 0 ? tag : 'base'));
    const base = { constraints: big('base'), exemplars: big('base'), latentScores: { a: 1, b: 2 } };
    const ours = { constraints: big('ours'), exemplars: big('base'), latentScores: { a: 1, b: 3 } };
    const theirs = { constraints: big('theirs'), exemplars: big('theirs'), latentScores: { a: 5, b: 2 } };
    const [outcome, turns] = await countTurns(mergeSnapshots(base, ours, theirs, { strategy: 'theirs' }));
    expect(turns).toBeGreaterThan(5);
    // Every third constraint changed on both sides: a conflict, settled by the strategy.
    expect(outcome.conflicts).toHaveLength(10_000);
    expect(outcome.conflicts.every((c) => c.kind === 'constraints' && c.resolution === 'theirs')).toBe(true);
    expect(outcome.snapshot.constraints).toEqual(theirs.constraints);
    expect(outcome.snapshot.exemplars).toEqual(theirs.exemplars);
    expect(outcome.snapshot.latentScores).toEqual({ a: 5, b: 3 });
  });

  test('stops at its bound with 413 diff_too_large', async () => {
    const a = { constraints: Array.from({ length: 1000 }, (_, i) => item(i, 'a')) };
    const b = { constraints: Array.from({ length: 1000 }, (_, i) => item(i, 'b')) };
    const whole = JSON.stringify({ from: null, to: null, ...(await diffSnapshots(a, b)) });
    await expect(diffText({ from: null, to: null }, a, b, Buffer.byteLength(whole))).resolves.toBe(whole);
    const err = await diffText({ from: null, to: null }, a, b, 20_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code: 'diff_too_large', httpStatus: 413, details: { maxBytes: 20_000 } });
  });
});
