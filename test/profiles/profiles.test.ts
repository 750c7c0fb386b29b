import { type EventEnvelope, PrincipalSigner } from '@svc/kit';
import * as proto from '@svc/proto';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/** Taste profiles end to end: HTTP → gateway → gRPC → profiles service → SQL, events on the bus. */
let t: TestStack;
const events: Array<{ subject: string; event: EventEnvelope }> = [];
beforeAll(async () => {
  t = await startTestStack();
  const bus = await t.stack.backends.bus();
  await bus.subscribe('profiles.>', async (event, meta) => {
    events.push({ subject: meta.subject, event });
  });
});
afterAll(() => t?.stop());

type Res = Awaited<ReturnType<TestStack['call']>>;
const call = (method: string, p: string, body?: unknown, headers?: Record<string, string>) =>
  t.call(method, p, { key: t.bootstrapKey, body, headers });
const ok = (res: Res, status = 200) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
};
const snap = (...ids: string[]) => ({
  constraints: ids.map((id) => ({ id, question: `Is ${id} liked?`, answer: 'yes' })),
  exemplars: [{ id: `ex-${ids.length}`, imageUrl: 'https://img.example/1.png', label: 'good' }],
  comparisons: [],
  latentScores: { warmth: ids.length / 10 },
});
const newProfile = async (name = 'p') => ok(await call('POST', '/v1/profiles', { name }), 201);

describe('profiles: CRUD', () => {
  test('create, get with ETag, list, delete', async () => {
    const res = await call('POST', '/v1/profiles', { name: 'Warm light' });
    expect(res.status).toBe(201);
    const p = res.body;
    expect(p).toEqual({
      id: expect.stringMatching(/^prof_[0-9a-z]{26}$/),
      name: 'Warm light',
      projectId: null,
      profileData: {
        versions: [],
        branches: [{ id: 'main', name: 'main', headVersionId: null, createdAt: expect.any(String) }],
        currentBranchId: 'main',
        workingChanges: { constraints: [], exemplars: [], comparisons: [] },
      },
      effectiveSnapshot: {},
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updatedAt: expect.any(String),
    });
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(res.headers.get('location')).toBe(`/v1/profiles/${p.id}`);

    const got = await call('GET', `/profiles/${p.id}`);
    expect(got.body).toEqual(p);
    expect(got.headers.get('etag')).toBe(res.headers.get('etag'));

    const list = ok(await call('GET', '/v1/profiles?limit=1'));
    expect(list.profiles).toHaveLength(1);
    expect(list.profiles[0]).toMatchObject({ id: p.id, name: 'Warm light', versionCount: 0, branchCount: 1, currentBranchId: 'main' });
    expect(list.nextCursor === null || typeof list.nextCursor === 'string').toBe(true);

    expect(ok(await call('DELETE', `/v1/profiles/${p.id}`))).toEqual({ success: true });
    const gone = await call('GET', `/v1/profiles/${p.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual(ERROR_BODY);
    expect(gone.body.error.code).toBe('profile_not_found');
    expect((await call('GET', '/v1/profiles/not-an-id')).status).toBe(400);
    expect((await t.call('GET', `/v1/profiles`)).status).toBe(401);
  });

  test('the routes are served, no longer planned', async () => {
    const doc = ok(await t.call('GET', '/openapi.json'));
    expect(doc.paths['/profiles/{id}'].patch['x-svc-status']).toBeUndefined();
    expect(doc.paths['/profiles/{id}/merge'].post.operationId).toBe('profiles.merge');
  });
});

describe('profiles: the spec PATCH flows', () => {
  test('commit, branch, switch, roll back, commit again: exactly the described state', async () => {
    const p = await newProfile();
    const url = `/v1/profiles/${p.id}`;
    // Working changes, then commit 1: the new version's parent is null; the head moves; working changes clear.
    ok(await call('PATCH', url, { profileData: { workingChanges: { constraints: snap('a').constraints, exemplars: [], comparisons: [] } } }));
    let cur = ok(await call('GET', url));
    const v1 = { id: 'ver_1', branchId: 'main', parentVersionId: null, message: 'first', snapshot: snap('a'), createdAt: '2025-01-01T00:00:00.000Z' };
    const res = await call('PATCH', url, {
      profileData: {
        versions: [...cur.profileData.versions, v1],
        branches: cur.profileData.branches.map((b: any) => (b.id === 'main' ? { ...b, headVersionId: 'ver_1' } : b)),
        workingChanges: { constraints: [], exemplars: [], comparisons: [] },
      },
      effectiveSnapshot: snap('a'),
    });
    cur = ok(res);
    expect(res.headers.get('etag')).toMatch(/^"/);
    // createdAt is the server's: the one sent (2025) is ignored.
    expect(cur.profileData.versions).toEqual([{ ...v1, createdAt: expect.stringMatching(/^\d{4}-/) }]);
    expect(cur.profileData.versions[0].createdAt).not.toBe(v1.createdAt);
    expect(cur.profileData.branches[0].headVersionId).toBe('ver_1');
    expect(cur.profileData.workingChanges).toEqual({ constraints: [], exemplars: [], comparisons: [] });
    expect(cur.effectiveSnapshot).toEqual(snap('a'));

    // Commit 2: parent = previous head.
    const v2 = {
      id: 'ver_2',
      branchId: 'main',
      parentVersionId: 'ver_1',
      message: 'second',
      snapshot: snap('a', 'b'),
      createdAt: '2025-01-02T00:00:00.000Z',
    };
    cur = ok(
      await call('PATCH', url, {
        profileData: { versions: [...cur.profileData.versions, v2], branches: [{ ...cur.profileData.branches[0], headVersionId: 'ver_2' }] },
      }),
    );
    expect(cur.effectiveSnapshot).toEqual(snap('a', 'b'));

    // Create branch: its head is the parent's head; parentBranchId set.
    cur = ok(
      await call('PATCH', url, {
        profileData: {
          branches: [
            ...cur.profileData.branches,
            { id: 'br_x', name: 'experiments/cool', description: 'try', headVersionId: 'ver_2', parentBranchId: 'main' },
          ],
        },
      }),
    );
    expect(cur.profileData.branches[1]).toEqual({
      id: 'br_x',
      name: 'experiments/cool',
      description: 'try',
      headVersionId: 'ver_2',
      parentBranchId: 'main',
      createdAt: expect.any(String),
    });

    // Switch: effective snapshot follows the branch; working changes carry along.
    const working = { constraints: [{ id: 'w', question: 'Pending?' }], exemplars: [], comparisons: [] };
    ok(await call('PATCH', url, { profileData: { workingChanges: working } }));
    cur = ok(await call('PATCH', url, { profileData: { currentBranchId: 'br_x' } }));
    expect(cur.profileData.currentBranchId).toBe('br_x');
    expect(cur.effectiveSnapshot).toEqual(snap('a', 'b'));
    expect(cur.profileData.workingChanges).toEqual(working);

    // Commit on the branch.
    const f1 = {
      id: 'ver_f1',
      branchId: 'br_x',
      parentVersionId: 'ver_2',
      message: 'cool',
      snapshot: snap('a', 'b', 'w'),
      createdAt: '2025-01-03T00:00:00.000Z',
    };
    cur = ok(
      await call('PATCH', url, {
        profileData: {
          versions: [...cur.profileData.versions, f1],
          branches: cur.profileData.branches.map((b: any) => (b.id === 'br_x' ? { ...b, headVersionId: 'ver_f1' } : b)),
          workingChanges: { constraints: [], exemplars: [], comparisons: [] },
        },
      }),
    );
    expect(cur.effectiveSnapshot).toEqual(snap('a', 'b', 'w'));
    expect(cur.profileData.branches.map((b: any) => [b.id, b.headVersionId])).toEqual([
      ['main', 'ver_2'],
      ['br_x', 'ver_f1'],
    ]);

    // Switch back: main's state.
    cur = ok(await call('PATCH', url, { profileData: { currentBranchId: 'main' } }));
    expect(cur.effectiveSnapshot).toEqual(snap('a', 'b'));

    // Roll back main to ver_1: the later version stays in versions, off the head chain.
    const v1Snapshot = cur.profileData.versions.find((v: any) => v.id === 'ver_1').snapshot;
    expect(v1Snapshot).toEqual(snap('a'));
    cur = ok(
      await call('PATCH', url, {
        profileData: { branches: cur.profileData.branches.map((b: any) => (b.id === 'main' ? { ...b, headVersionId: 'ver_1' } : b)) },
        effectiveSnapshot: v1Snapshot,
      }),
    );
    expect(cur.effectiveSnapshot).toEqual(snap('a'));
    expect(cur.profileData.versions.map((v: any) => v.id)).toEqual(['ver_1', 'ver_2', 'ver_f1']);
    expect(cur.profileData.branches[0].headVersionId).toBe('ver_1');

    // A later commit on main: parent = the rolled-back head (ver_2 as parent is refused).
    const stale = { id: 'ver_3', branchId: 'main', parentVersionId: 'ver_2', message: 'third', snapshot: snap('c') };
    const refused = await call('PATCH', url, {
      profileData: { versions: [...cur.profileData.versions, stale], branches: [{ id: 'main', headVersionId: 'ver_3' }, { id: 'br_x' }] },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.message).toMatch(/ver_3.*parent/);
    cur = ok(
      await call('PATCH', url, {
        profileData: {
          // As a history listing gives them: without snapshots.
          versions: [...cur.profileData.versions.map(({ snapshot: _, ...v }: any) => v), { ...stale, parentVersionId: 'ver_1' }],
          branches: [{ id: 'main', headVersionId: 'ver_3' }, { id: 'br_x' }],
        },
      }),
    );
    expect(cur.profileData.versions.find((v: any) => v.id === 'ver_3').parentVersionId).toBe('ver_1');
    expect(cur.effectiveSnapshot).toEqual(snap('c'));
    expect(cur.profileData.versions.find((v: any) => v.id === 'ver_2').snapshot).toEqual(snap('a', 'b'));

    // The log of main follows the head chain.
    const log = ok(await call('GET', `${url}/log`));
    expect(log.versions.map((v: any) => v.id)).toEqual(['ver_3', 'ver_1']);
    const logX = ok(await call('GET', `${url}/log?branchId=br_x&limit=2`));
    expect(logX.versions.map((v: any) => v.id)).toEqual(['ver_f1', 'ver_2']);
    expect(ok(await call('GET', `${url}/log?branchId=br_x&cursor=${logX.nextCursor}`)).versions.map((v: any) => v.id)).toEqual(['ver_1']);
  });

  test('each corrupting PATCH answers 422 naming the problem, and changes nothing', async () => {
    const p = await newProfile();
    const url = `/v1/profiles/${p.id}`;
    let cur = ok(
      await call('PATCH', url, {
        profileData: {
          versions: [
            { id: 'ver_1', branchId: 'main', parentVersionId: null, message: 'one', snapshot: snap('a') },
            { id: 'ver_2', branchId: 'main', parentVersionId: 'ver_1', message: 'two', snapshot: snap('a', 'b') },
          ],
          branches: [{ id: 'main', name: 'main', headVersionId: 'ver_2' }],
        },
      }),
    );
    cur = ok(
      await call('PATCH', url, {
        profileData: {
          versions: [...cur.profileData.versions, { id: 'ver_f', branchId: 'br_f', parentVersionId: 'ver_2', message: 'f', snapshot: snap('f') }],
          branches: [...cur.profileData.branches, { id: 'br_f', name: 'f', headVersionId: 'ver_f', parentBranchId: 'main' }],
        },
      }),
    );
    expect(cur.profileData.branches[1]).toMatchObject({ id: 'br_f', headVersionId: 'ver_f' });
    const before = await call('GET', url);
    const vs = cur.profileData.versions;
    const bs = cur.profileData.branches;
    const cases: Array<[RegExp, unknown]> = [
      [/ver_1.*immutable/, { versions: [{ ...vs[0], message: 'edited' }, vs[1], vs[2]] }],
      [/ver_1.*snapshot.*immutable/, { versions: [{ ...vs[0], snapshot: snap('z') }, vs[1], vs[2]] }],
      [/ver_1.*cannot be removed/, { versions: [vs[1], vs[2]] }],
      [
        /ver_3.*parent.*ver_2/,
        {
          versions: [...vs, { id: 'ver_3', branchId: 'main', parentVersionId: 'ver_1', snapshot: {} }],
          branches: [{ id: 'main', headVersionId: 'ver_3' }, { id: 'br_f' }],
        },
      ],
      [/main.*ver_f.*branch br_f/, { branches: [{ id: 'main', headVersionId: 'ver_f' }, { id: 'br_f' }] }],
      [/ver_missing.*no version/, { branches: [{ id: 'main', headVersionId: 'ver_missing' }, { id: 'br_f' }] }],
      [/ver_1.*more than once/, { versions: [...vs, vs[0]] }],
      [/br_f.*more than once/, { branches: [...bs, bs[1]] }],
      [/parent branch ghost.*does not exist/, { branches: [...bs, { id: 'br_g', name: 'g', parentBranchId: 'ghost', headVersionId: 'ver_2' }] }],
      [/main cannot be deleted/, { branches: [bs[1]], currentBranchId: 'br_f' }],
    ];
    for (const [message, profileData] of cases) {
      const res = await call('PATCH', url, { profileData });
      expect([res.status, res.body.error?.message]).toEqual([422, expect.stringMatching(message)]);
      expect(res.body).toEqual(ERROR_BODY);
    }
    const after = await call('GET', url);
    expect(after.body).toEqual(before.body);
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    // Malformed (not corrupting) input is a 400 naming the field.
    const bad = await call('PATCH', url, { profileData: { versions: [{ id: '' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^body\.profileData\.versions\.0\.id/);
    expect((await call('PATCH', url, { profileData: { workingChanges: { constraints: [1] } } })).status).toBe(400);
  });

  test('If-Match: a stale ETag answers 412, the current one succeeds with a new ETag', async () => {
    const p = await newProfile();
    const url = `/v1/profiles/${p.id}`;
    const first = await call('GET', url);
    const etag = first.headers.get('etag')!;
    const a = await call('PATCH', url, { name: 'editor A' }, { 'if-match': etag });
    expect(a.status).toBe(200);
    expect(a.body.name).toBe('editor A');
    const next = a.headers.get('etag')!;
    expect(next).not.toBe(etag);
    const b = await call('PATCH', url, { name: 'editor B' }, { 'if-match': etag });
    expect(b.status).toBe(412);
    expect(b.body).toEqual(ERROR_BODY);
    expect(ok(await call('GET', url)).name).toBe('editor A');
    expect((await call('POST', `${url}/commits`, { message: 'x' }, { 'if-match': etag })).status).toBe(412);
    expect((await call('DELETE', url, undefined, { 'if-match': etag })).status).toBe(412);
    expect((await call('POST', `${url}/commits`, { message: 'x' }, { 'if-match': next })).status).toBe(201);
  });
});

describe('profiles: what the server owns', () => {
  test('createdAt sent in a PATCH is ignored: new versions and branches get the time of the write', async () => {
    const p = await newProfile();
    const url = `/v1/profiles/${p.id}`;
    const future = '2099-01-01T00:00:00.000Z';
    ok(
      await call('PATCH', url, {
        profileData: {
          versions: [{ id: 'ver_future', branchId: 'main', parentVersionId: null, message: 'late', snapshot: snap('a'), createdAt: future }],
          branches: [{ id: 'main', name: 'main', headVersionId: 'ver_future', createdAt: future }],
        },
      }),
    );
    const cur = ok(
      await call('PATCH', url, {
        profileData: {
          branches: [
            { id: 'main', createdAt: future },
            { id: 'br_future', name: 'future', parentBranchId: 'main', headVersionId: 'ver_future', createdAt: future },
          ],
        },
      }),
    );
    const now = Date.now();
    expect(Date.parse(cur.profileData.versions[0].createdAt)).toBeLessThanOrEqual(now);
    expect(cur.profileData.branches.map((b: any) => Date.parse(b.createdAt) <= now)).toEqual([true, true]);
    expect(cur.profileData.branches[0].createdAt).toBe(p.profileData.branches[0].createdAt);
    // A committed version sent back with another createdAt is not a change (nor a 422): the stored one stays.
    const etag = (await call('GET', url)).headers.get('etag')!;
    const again = await call('PATCH', url, { profileData: { versions: [{ ...cur.profileData.versions[0], createdAt: future }] } });
    expect([again.status, again.body.profileData?.versions[0].createdAt, again.headers.get('etag')]).toEqual([
      200,
      cur.profileData.versions[0].createdAt,
      etag,
    ]);
  });

  test('a PATCH that changes nothing keeps the ETag, so another editor’s If-Match still holds', async () => {
    const p = await newProfile('same');
    const url = `/v1/profiles/${p.id}`;
    const cur = ok(
      await call('PATCH', url, {
        profileData: {
          versions: [{ id: 'ver_1', branchId: 'main', parentVersionId: null, message: 'one', snapshot: snap('a') }],
          branches: [{ id: 'main', name: 'main', headVersionId: 'ver_1' }],
          workingChanges: { constraints: [{ id: 'w', question: 'Pending?' }], exemplars: [], comparisons: [] },
        },
      }),
    );
    const etag = (await call('GET', url)).headers.get('etag')!;
    for (const body of [
      { profileData: cur.profileData },
      { name: 'same' },
      { profileData: { currentBranchId: 'main', workingChanges: cur.profileData.workingChanges } },
      {},
    ]) {
      const res = await call('PATCH', url, body, { 'if-match': etag });
      expect([JSON.stringify(body).slice(0, 40), res.status, res.headers.get('etag')]).toEqual([JSON.stringify(body).slice(0, 40), 200, etag]);
    }
    // The other editor's change, made with the ETag it read, still goes through and moves it.
    const other = await call('PATCH', url, { name: 'changed' }, { 'if-match': etag });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).not.toBe(etag);
  });
});

describe('profiles: first-class operations', () => {
  test('agree with the PATCH flows, and each publishes an event', async () => {
    const p = await newProfile('ops');
    const url = `/v1/profiles/${p.id}`;
    const work = (constraints: unknown[]) => call('PATCH', url, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } });

    ok(await work([{ id: 'a', question: 'Warm?', answer: 'yes' }]));
    const c1 = await call('POST', `${url}/commits`, { message: 'first' });
    expect(c1.status).toBe(201);
    expect(c1.body).toEqual({
      id: expect.stringMatching(/^ver_/),
      branchId: 'main',
      parentVersionId: null,
      message: 'first',
      createdAt: expect.any(String),
    });
    expect(c1.headers.get('etag')).toMatch(/^"/);
    ok(await work([{ id: 'b', question: 'Grainy?', answer: 'no' }]));
    const c2 = ok(await call('POST', `${url}/commits`, { message: 'second' }), 201);
    expect(c2.parentVersionId).toBe(c1.body.id);
    let cur = ok(await call('GET', url));
    expect(cur.profileData.branches[0].headVersionId).toBe(c2.id);
    expect(cur.profileData.workingChanges).toEqual({ constraints: [], exemplars: [], comparisons: [] });
    expect(cur.effectiveSnapshot.constraints.map((c: any) => c.id)).toEqual(['a', 'b']);

    const br = await call('POST', `${url}/branches`, { name: 'feature/cool' });
    expect(br.status).toBe(201);
    expect(br.body).toEqual({
      id: expect.stringMatching(/^br_/),
      name: 'feature/cool',
      headVersionId: c2.id,
      parentBranchId: 'main',
      createdAt: expect.any(String),
    });
    expect((await call('POST', `${url}/branches`, { name: 'feature/cool' })).status).toBe(409);

    ok(await work([{ id: 'c', question: 'Cool?', answer: 'yes' }]));
    const co = await call('POST', `${url}/checkout`, { branchId: br.body.id });
    cur = ok(co);
    expect(cur.profileData.currentBranchId).toBe(br.body.id);
    expect(cur.profileData.workingChanges.constraints).toEqual([{ id: 'c', question: 'Cool?', answer: 'yes' }]);
    expect(cur.effectiveSnapshot.constraints.map((c: any) => c.id)).toEqual(['a', 'b']);
    const f1 = ok(await call('POST', `${url}/commits`, { message: 'cool' }), 201);
    expect(f1).toMatchObject({ branchId: br.body.id, parentVersionId: c2.id });
    cur = ok(await call('POST', `${url}/checkout`, { branchId: 'main' }));
    expect(cur.effectiveSnapshot.constraints.map((c: any) => c.id)).toEqual(['a', 'b']);

    // Rollback: a new forward version with the old state; history kept.
    const rb = await call('POST', `${url}/rollback`, { versionId: c1.body.id });
    expect(rb.status).toBe(201);
    expect(rb.body).toMatchObject({ branchId: 'main', parentVersionId: c2.id, message: `Roll back to ${c1.body.id}` });
    cur = ok(await call('GET', url));
    const v1 = ok(await call('GET', `${url}/versions/${c1.body.id}`));
    expect(cur.effectiveSnapshot).toEqual(v1.snapshot);
    expect(cur.profileData.versions).toHaveLength(4);

    // The state the operations made is one the PATCH rules accept as is (sent back unchanged).
    const echo = await call('PATCH', url, { profileData: cur.profileData, effectiveSnapshot: cur.effectiveSnapshot });
    expect(echo.status).toBe(200);
    expect(echo.body.profileData).toEqual(cur.profileData);

    // Diff: per item.
    const diff = ok(await call('GET', `${url}/diff?from=${c1.body.id}&to=${br.body.id}`));
    expect(diff.constraints.added.map((c: any) => c.id)).toEqual(['b', 'c']);
    expect(diff.constraints.removed).toEqual([]);

    // Merge the branch into main: dry run, then for real. Three-way: main's rollback removed b
    // after the merge base (c2) and the branch left b alone, so b stays removed; c comes in.
    const dry = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.body.id, dryRun: true }));
    expect(dry).toMatchObject({ dryRun: true, merged: false, conflicts: [], mergeBaseVersionId: c2.id });
    expect(dry.changes.constraints).toEqual({ added: [{ id: 'c', question: 'Cool?', answer: 'yes' }], removed: [], changed: [] });
    const merged = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.body.id }));
    expect(merged.merged).toBe(true);
    cur = ok(await call('GET', url));
    expect(cur.effectiveSnapshot.constraints.map((c: any) => c.id)).toEqual(['a', 'c']);
    expect(cur.profileData.branches[0].headVersionId).toBe(merged.version.id);

    // Delete the branch (now merged); main refuses.
    expect((await call('DELETE', `${url}/branches/main`)).status).toBe(422);
    expect(ok(await call('DELETE', `${url}/branches/${br.body.id}`))).toEqual({ success: true });
    expect(ok(await call('GET', url)).profileData.branches.map((b: any) => b.id)).toEqual(['main']);

    // Events: every operation published one, without snapshots.
    await waitFor(() => events.some((e) => e.subject.endsWith('profiles.branch.deleted') && e.event.data.profileId === p.id));
    const mine = events
      .filter((e) => (e.event.data as { profileId?: string }).profileId === p.id)
      .map((e) => e.subject.split('.').slice(-3).join('.'));
    for (const s of [
      'profiles.profile.created',
      'profiles.commit.created',
      'profiles.branch.created',
      'profiles.branch.checked_out',
      'profiles.rollback.created',
      'profiles.merge.completed',
      'profiles.branch.deleted',
      'profiles.profile.updated',
    ]) {
      expect(mine).toContain(s);
    }
    expect(JSON.stringify(events.filter((e) => e.subject.endsWith('commit.created')))).not.toContain('snapshot');
  });

  test('merge conflicts answer 409 unless resolved per item', async () => {
    const p = await newProfile('merge');
    const url = `/v1/profiles/${p.id}`;
    ok(await call('PATCH', url, { profileData: { workingChanges: { constraints: [{ id: 'a', answer: 'base' }] } } }));
    ok(await call('POST', `${url}/commits`, { message: 'base' }), 201);
    const br = ok(await call('POST', `${url}/branches`, { name: 'other' }), 201);
    ok(await call('PATCH', url, { profileData: { workingChanges: { constraints: [{ id: 'a', answer: 'ours' }] } } }));
    ok(await call('POST', `${url}/commits`, { message: 'ours' }), 201);
    ok(await call('PATCH', url, { profileData: { workingChanges: { constraints: [{ id: 'a', answer: 'theirs' }] } } }));
    ok(await call('POST', `${url}/commits`, { message: 'theirs', branchId: br.id }), 201);
    const dry = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id, dryRun: true }));
    expect(dry.conflicts).toEqual([
      {
        kind: 'constraints',
        id: 'a',
        base: { id: 'a', answer: 'base' },
        ours: { id: 'a', answer: 'ours' },
        theirs: { id: 'a', answer: 'theirs' },
        resolution: null,
      },
    ]);
    const blocked = await call('POST', `${url}/merge`, { sourceBranchId: br.id });
    expect(blocked.status).toBe(409);
    expect(blocked.body.error.code).toBe('merge_conflict');
    const done = ok(await call('POST', `${url}/merge`, { sourceBranchId: br.id, resolutions: { constraints: { a: 'theirs' } } }));
    expect(done.merged).toBe(true);
    expect(ok(await call('GET', url)).effectiveSnapshot.constraints).toEqual([{ id: 'a', answer: 'theirs' }]);
  });
});

describe('profiles: tenancy', () => {
  test("another account's profile answers 404 (called as that account through the service)", async () => {
    const p = await newProfile('private');
    const signer = new PrincipalSigner(t.stack.config.internalSecret);
    const { token } = await signer.sign({ kind: 'human', userId: 'acct_other', accountId: 'acct_other', channel: 'api' });
    const client = t.stack.registry.client('profiles', proto.profiles.ProfilesServiceService, 'svc.profiles.v1.ProfilesService');
    await expect(client.getProfile({ id: p.id }, { principalToken: token })).rejects.toMatchObject({ kind: 'not_found', code: 'profile_not_found' });
    await expect(client.updateProfile({ id: p.id, patchJson: '{"name":"x"}' }, { principalToken: token })).rejects.toMatchObject({
      kind: 'not_found',
    });
    expect((await client.listProfiles({ limit: 50 }, { principalToken: token })).profiles).toEqual([]);
  });

  test('a project-scoped key sees only its project', async () => {
    const open = await newProfile('unscoped');
    const key = ok(await call('POST', '/api/api-keys', { name: 'proj', projectId: 'projA' }), 201).key as string;
    const created = ok(await t.call('POST', '/v1/profiles', { key, body: { name: 'in A' } }), 201);
    expect(created.projectId).toBe('projA');
    expect((await t.call('GET', `/v1/profiles/${open.id}`, { key })).status).toBe(404);
    const listed = ok(await t.call('GET', '/v1/profiles?limit=200', { key })).profiles.map((x: any) => x.id);
    expect(listed).toEqual([created.id]);
    expect(ok(await call('GET', `/v1/profiles/${created.id}`)).name).toBe('in A');
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
