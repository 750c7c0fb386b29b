import { startTestStack, type TestStack } from '../support/stack';

/**
 * A profile diff larger than its bound (services/profiles/src/profiles/diff-text.ts) through the
 * gateway: a clear 413, not a failure between the services; nearer versions and another tenant answered.
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
