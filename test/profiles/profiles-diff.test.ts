import { startTestStack, type TestStack } from '../support/stack';

/**
 * Large diffs and merges through the gateway (services/profiles/src/profiles/diff-text.ts,
 * merging.ts): a diff past its bound is a clear 413, a merge's answer leaves out what passes its
 * bounds and says so, never a failure between the services; nearer versions and another tenant answered.
 */
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

type Res = Awaited<ReturnType<TestStack['call']>>;
const call = (method: string, p: string, body?: unknown) => t.call(method, p, { key: t.bootstrapKey, body });
const ok = (res: Res, status = 200) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
};

describe('profiles: a diff past its bound', () => {
  test('answers 413 diff_too_large with the error body; nearer versions, and another tenant, are answered', async () => {
    const { id } = ok(await call('POST', '/v1/profiles', { name: 'large' }), 201);
    const url = `/v1/profiles/${id}`;
    // 7 commits of 400 items of ~2 KB: 4.9 MB between the first and the last, over the 4 MiB bound.
    const versions: string[] = [];
    for (let c = 0; c < 7; c++) {
      const constraints = Array.from({ length: 400 }, (_, i) => ({ id: `c${c}-${i}`, question: `Item ${c}-${i}?`, answer: 'x'.repeat(2000) }));
      ok(await call('PATCH', `${url}?snapshots=false`, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } }));
      versions.push(ok(await call('POST', `${url}/commits`, { message: `commit ${c}` }), 201).id);
    }
    const far = await call('GET', `${url}/diff?from=${versions[0]}&to=${versions[6]}`);
    expect(far.status).toBe(413);
    expect(far.body).toEqual({
      error: {
        code: 'diff_too_large',
        message: expect.stringMatching(/compare nearer versions/),
        requestId: expect.any(String),
        details: { maxBytes: 4 * 1024 * 1024 },
      },
    });
    // The same profile's nearer versions: 400 items added.
    const near = ok(await call('GET', `${url}/diff?from=${versions[5]}&to=${versions[6]}`));
    expect(near.constraints.added).toHaveLength(400);
    expect(near).toMatchObject({ from: versions[5], to: versions[6], constraints: { removed: [], changed: [] } });

    // Another tenant's diff is its own business: answered, and the large profile is not theirs.
    const other = ok(await call('POST', '/v1/accounts', { kind: 'user', name: 'Other tenant' }), 201);
    const mine = ok(await t.call('POST', '/v1/profiles', { key: other.key, body: { name: 'small' } }), 201);
    ok(
      await t.call('PATCH', `/v1/profiles/${mine.id}`, { key: other.key, body: { profileData: { workingChanges: { constraints: [{ id: 'a' }] } } } }),
    );
    const first = ok(await t.call('POST', `/v1/profiles/${mine.id}/commits`, { key: other.key, body: { message: 'one' } }), 201);
    const small = ok(await t.call('GET', `/v1/profiles/${mine.id}/diff`, { key: other.key }));
    expect(small).toEqual({
      from: null,
      to: first.id,
      constraints: { added: [{ id: 'a' }], removed: [], changed: [] },
      exemplars: { added: [], removed: [], changed: [] },
      comparisons: { added: [], removed: [], changed: [] },
      latentScores: { added: {}, removed: {}, changed: {} },
    });
    expect((await t.call('GET', `${url}/diff?from=${versions[5]}&to=${versions[6]}`, { key: other.key })).status).toBe(404);
  });
});

describe('profiles: a merge past the bounds of its answer', () => {
  const big = (prefix: string, n: number, answer: string) =>
    Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, question: `Item ${prefix}${i}?`, answer: answer.repeat(2000) }));
  const commit = async (url: string, constraints: unknown[], message: string) => {
    ok(await call('PATCH', `${url}?snapshots=false`, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } }));
    return ok(await call('POST', `${url}/commits`, { message }), 201);
  };

  test('changes over 4 MiB are left out (changesOmitted), and the merge is answered, not failed', async () => {
    const { id } = ok(await call('POST', '/v1/profiles', { name: 'merge-large' }), 201);
    const url = `/v1/profiles/${id}`;
    const base = await commit(url, [{ id: 'seed' }], 'seed');
    const br = ok(await call('POST', `${url}/branches`, { name: 'wide' }), 201);
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: br.id }));
    for (let c = 0; c < 6; c++) await commit(url, big(`b${c}-`, 400, 'y'), `wide ${c}`);
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: 'main' }));

    const dry = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id, dryRun: true }));
    expect(dry).toMatchObject({ dryRun: true, merged: false, changes: null, changesOmitted: true, conflicts: [], conflictsOmitted: 0 });
    const merged = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id }));
    expect(merged).toMatchObject({ merged: true, changes: null, changesOmitted: true, mergeBaseVersionId: base.id });
    const log = ok(await call('GET', `${url}/log?limit=1`));
    expect(log.versions[0]).toMatchObject({ id: merged.version.id, message: `Merge branch wide into main` });
    // What it left out is the diff's to answer, under the same bound.
    expect((await call('GET', `${url}/diff?from=${base.id}&to=${merged.version.id}`)).status).toBe(413);
    // A small merge lists its changes as before.
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: br.id }));
    await commit(url, [{ id: 'late' }], 'late');
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: 'main' }));
    const small = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id }));
    expect(small).toMatchObject({
      merged: true,
      changesOmitted: false,
      changes: { constraints: { added: [{ id: 'late' }], removed: [], changed: [] } },
    });
  });

  test('conflicts are listed up to about 1 MiB and counted; a 409 lists what fits in 6 KiB and counts them all', async () => {
    const { id } = ok(await call('POST', '/v1/profiles', { name: 'merge-conflicts' }), 201);
    const url = `/v1/profiles/${id}`;
    await commit(url, big('c', 400, 'a'), 'base');
    const br = ok(await call('POST', `${url}/branches`, { name: 'theirs' }), 201);
    await commit(url, big('c', 400, 'o'), 'ours');
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: br.id }));
    await commit(url, big('c', 400, 't'), 'theirs');
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: 'main' }));

    // 400 conflicts of three 2 KB items each: 2.4 MB.
    const refused = await call('POST', `${url}/merge`, { sourceBranchId: br.id });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'merge_conflict', details: { conflictCount: 400 } });
    // Each conflict carries three 2 KB items, over the 6 KiB the details may list.
    expect(refused.body.error.details.conflicts).toEqual([]);
    expect(refused.body.error.message).toMatch(/lists none, too large to list here; a dry run lists them all/);
    const merged = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id, strategy: 'theirs' }));
    expect(merged.merged).toBe(true);
    expect(merged.conflicts.length).toBeGreaterThan(100);
    expect(merged.conflicts.length).toBeLessThan(400);
    expect(merged.conflicts.length + merged.conflictsOmitted).toBe(400);
    expect(merged.conflicts[0]).toMatchObject({ kind: 'constraints', id: 'c0', resolution: 'theirs' });
    expect(JSON.stringify(merged.conflicts).length).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('profiles: a merge and a commit at once', () => {
  test('the merge compares outside its write, and a commit that lands meanwhile is never lost', async () => {
    const { id } = ok(await call('POST', '/v1/profiles', { name: 'merge-race' }), 201);
    const url = `/v1/profiles/${id}`;
    const commit = async (constraints: unknown[], message: string) => {
      ok(await call('PATCH', `${url}?snapshots=false`, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } }));
      return ok(await call('POST', `${url}/commits`, { message }), 201);
    };
    await commit([{ id: 'seed' }], 'seed');
    const br = ok(await call('POST', `${url}/branches`, { name: 'many' }), 201);
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: br.id }));
    for (let c = 0; c < 3; c++)
      await commit(
        Array.from({ length: 3000 }, (_, i) => ({ id: `m${c}-${i}`, q: `Item ${i}?` })),
        `many ${c}`,
      );
    ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: 'main' }));
    for (let round = 0; round < 3; round++) {
      // Staged first: the commit below applies it to main's head, whichever lands first.
      ok(
        await call('PATCH', `${url}?snapshots=false`, {
          profileData: { workingChanges: { constraints: [{ id: `late${round}` }], exemplars: [], comparisons: [] } },
        }),
      );
      const [merged, committed] = await Promise.all([
        call('POST', `${url}/merge`, { sourceBranchId: br.id }),
        call('POST', `${url}/commits`, { message: `late ${round}` }),
      ]);
      expect(committed.status).toBe(201);
      expect(merged.status).toBe(200);
      const head = ok(await call('GET', `${url}?snapshots=false`)).effectiveSnapshot.constraints.map((c: { id: string }) => c.id);
      // Whatever the order, main's head holds the staged item of every round and the branch's items:
      for (let r = 0; r <= round; r++) expect(head).toContain(`late${r}`);
      // seed, the branch's 9,000, each round's staged item, and the branch's later ones.
      expect(head).toHaveLength(1 + 9000 + (round + 1) + round);
      // The next round merges new work of the branch.
      ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: br.id }));
      await commit([{ id: `m-next${round}`, q: 'next' }], `next ${round}`);
      ok(await call('POST', `${url}/checkout?snapshots=false`, { branchId: 'main' }));
    }
  });

  test('a revert, too, and a commit that lands meanwhile is never lost', async () => {
    const { id } = ok(await call('POST', '/v1/profiles', { name: 'revert-race' }), 201);
    const url = `/v1/profiles/${id}`;
    const stage = (constraints: unknown[]) =>
      call('PATCH', `${url}?snapshots=false`, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } });
    ok(await stage(Array.from({ length: 9000 }, (_, i) => ({ id: `a${i}`, q: `Item ${i}?` }))));
    ok(await call('POST', `${url}/commits`, { message: 'many' }), 201);
    for (let round = 0; round < 3; round++) {
      ok(await stage([{ id: `x${round}` }]));
      const x = ok(await call('POST', `${url}/commits`, { message: `x ${round}` }), 201);
      ok(await stage([{ id: `late${round}` }]));
      const [reverted, committed] = await Promise.all([
        call('POST', `${url}/revert`, { versionId: x.id }),
        call('POST', `${url}/commits`, { message: `late ${round}` }),
      ]);
      expect([reverted.status, committed.status]).toEqual([201, 201]);
      const head = ok(await call('GET', `${url}?snapshots=false`)).effectiveSnapshot.constraints.map((c: { id: string }) => c.id);
      // The revert took x out, and the commit's item stayed, whichever landed first.
      expect(head).not.toContain(`x${round}`);
      for (let r = 0; r <= round; r++) expect(head).toContain(`late${r}`);
      expect(head).toHaveLength(9000 + round + 1);
    }
  });
});
