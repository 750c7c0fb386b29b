import { startTestStack, type TestStack } from '../support/stack';

/** More profile operations (docs/profiles.md): branches as resources, staged items, search, stats, duplicate, revert. */

let t: TestStack;
let key: string;
let other: string;
beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Pia' })).body.key;
  other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ole' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, k = key, headers?: Record<string, string>) => t.call(method, p, { key: k, body, headers });
const c = (id: string, answer = 'yes') => ({ id, question: `${id}?`, answer });

/** A profile with v1 (warm, cool) and v2 (warm changed, bright added, cool removed). */
async function history() {
  const p = (await t.ok('POST', '/profiles', key, { name: 'light' })).body.id as string;
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('warm') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('cool') });
  const v1 = (await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'first' })).body.id as string;
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('warm', 'very') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('bright') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: { id: 'cool', $remove: true } });
  const v2 = (await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'second' })).body.id as string;
  return { p, v1, v2 };
}
const head = async (p: string) => (await call('GET', `/profiles/${p}`)).body.effectiveSnapshot.constraints;

test('stage, replace, unstage and discard working changes; ETags guard them', async () => {
  const p = (await t.ok('POST', '/profiles', key, { name: 'w' })).body.id;
  const a = await call('POST', `/profiles/${p}/working-changes/constraints`, { item: c('a') });
  expect(a.status).toBe(200);
  expect(a.body.counts).toEqual({ constraints: 1, exemplars: 0, comparisons: 0 });
  const replaced = await call('POST', `/profiles/${p}/working-changes/constraints`, { item: c('a', 'no') });
  expect(replaced.body.workingChanges.constraints).toEqual([c('a', 'no')]);
  const ex = await call('POST', `/profiles/${p}/working-changes/exemplars`, { item: { id: 'e1', label: 'good' } });
  expect((await call('POST', `/profiles/${p}/working-changes/nothing`, { item: {} })).status).toBe(400);
  expect((await call('POST', `/profiles/${p}/working-changes/constraints`, { item: [1] })).status).toBe(400);
  const stale = await call('DELETE', `/profiles/${p}/working-changes/constraints/a`, undefined, key, { 'if-match': '"stale"' });
  expect([stale.status, stale.body.error.code]).toEqual([412, 'etag_mismatch']);
  const un = await call('DELETE', `/profiles/${p}/working-changes/constraints/a`, undefined, key, { 'if-match': ex.headers.get('etag')! });
  expect(un.body.counts.constraints).toBe(0);
  expect((await call('DELETE', `/profiles/${p}/working-changes/constraints/a`)).status).toBe(200);
  const gone = await call('DELETE', `/profiles/${p}/working-changes`);
  expect(gone.body.counts).toEqual({ constraints: 0, exemplars: 0, comparisons: 0 });
  expect((await call('GET', `/profiles/${p}`)).body.profileData.workingChanges.exemplars).toEqual([]);
  expect((await call('POST', `/profiles/${p}/working-changes/constraints`, { item: c('x') }, other)).status).toBe(404);
});

test('branches: list, get, rename, reset to an earlier version', async () => {
  const { p, v1, v2 } = await history();
  const br = (await t.ok('POST', `/profiles/${p}/branches`, key, { name: 'exp' })).body.id;
  const list = await call('GET', `/profiles/${p}/branches`);
  expect(list.body.currentBranchId).toBe('main');
  expect(list.body.branches.map((b: any) => [b.id, b.current, b.versionCount, b.headVersion?.id])).toEqual([
    ['main', true, 2, v2],
    [br, false, 2, v2],
  ]);
  expect((await call('GET', `/profiles/${p}/branches/nope`)).body.error.code).toBe('branch_not_found');
  const renamed = await call('PATCH', `/profiles/${p}/branches/${br}`, { name: 'experiments/cool', description: 'try cool' });
  expect(renamed.body).toMatchObject({ name: 'experiments/cool', description: 'try cool' });
  expect((await call('PATCH', `/profiles/${p}/branches/main`, { name: 'trunk' })).body.error.code).toBe('main_branch_required');
  expect((await call('PATCH', `/profiles/${p}/branches/${br}`, { name: 'main' })).body.error.code).toBe('branch_name_taken');
  const reset = await call('POST', `/profiles/${p}/branches/main/reset`, { versionId: v1 });
  expect(reset.body).toMatchObject({ headVersionId: v1, versionCount: 1 });
  expect((await head(p)).map((x: any) => x.id)).toEqual(['warm', 'cool']);
  // v2 is no longer in main's history; it is still the other branch's head.
  expect((await call('POST', `/profiles/${p}/branches/main/reset`, { versionId: v2 })).body.error.code).toBe('version_not_in_history');
  expect((await call('GET', `/profiles/${p}/branches/${br}`)).body.headVersion.id).toBe(v2);
  expect((await call('GET', `/profiles/${p}/branches`, undefined, other)).status).toBe(404);
  // A copy keeps everything, also the version now off main.
  const copy = (await call('POST', `/profiles/${p}/duplicate`, { name: 'light, again' })).body;
  expect(copy.profileData.versions.map((v: any) => v.id)).toEqual([v1, v2]);
  expect(copy.profileData.branches.map((b: any) => [b.id, b.headVersionId])).toEqual([
    ['main', v1],
    [br, v2],
  ]);
  await t.ok('POST', `/profiles/${copy.id}/commits`, key, { message: 'on the copy' });
  expect((await call('GET', `/profiles/${p}/stats`)).body.versionCount).toBe(2);
});

test('revert undoes one version item by item, and refuses when an item changed since', async () => {
  const { p, v1, v2 } = await history();
  const r = await call('POST', `/profiles/${p}/revert`, { versionId: v2 });
  expect(r.status).toBe(201);
  expect(r.body.message).toBe(`Revert ${v2}: second`);
  expect((await head(p)).sort((a: any, b: any) => a.id.localeCompare(b.id))).toEqual([c('cool'), c('warm')]);
  // v1 added warm, which 'third' changes again: reverting v1 conflicts.
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('warm', 'changed') });
  await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'third' });
  const conflict = await call('POST', `/profiles/${p}/revert`, { versionId: v1 });
  expect([conflict.status, conflict.body.error.code]).toEqual([409, 'revert_conflict']);
  expect((await call('POST', `/profiles/${p}/revert`, { versionId: 'ver_nope' })).status).toBe(404);
});

test('search, stats and duplicate', async () => {
  const { p, v1 } = await history();
  const found = await call('GET', `/profiles/${p}/search?q=BRIGHT`);
  expect(found.body).toMatchObject({ total: 1, items: [{ kind: 'constraints', item: c('bright') }] });
  expect((await call('GET', `/profiles/${p}/search?q=cool&versionId=${v1}`)).body.total).toBe(1);
  expect((await call('GET', `/profiles/${p}/search?q=cool`)).body.total).toBe(0);
  expect((await call('GET', `/profiles/${p}/search?q=x&kind=nope`)).status).toBe(400);
  const stats = (await call('GET', `/profiles/${p}/stats`)).body;
  expect(stats).toMatchObject({ versionCount: 2, branchCount: 1, authorCount: 1, items: { constraints: 2, exemplars: 0, comparisons: 0 } });
  expect(stats.historyBytes).toBeGreaterThan(stats.headSnapshotBytes);
  const copy = await call('POST', `/profiles/${p}/duplicate`, {});
  expect(copy.status).toBe(201);
  expect(copy.body.name).toBe('light (copy)');
  expect(copy.body.id).not.toBe(p);
  expect(copy.body.profileData.versions.map((v: any) => v.message)).toEqual(['first', 'second']);
  expect(copy.body.effectiveSnapshot.constraints).toEqual(await head(p));
  expect((await call('POST', `/profiles/${p}/duplicate`, {}, other)).status).toBe(404);
  expect((await call('GET', `/profiles/${p}/stats`, undefined, other)).status).toBe(404);
});

test('cherry-pick applies one version’s change onto another branch', async () => {
  const p = (await t.ok('POST', '/profiles', key, { name: 'pick' })).body.id as string;
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('warm') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('cool') });
  const v1 = (await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'first' })).body.id as string;
  const old = (await t.ok('POST', `/profiles/${p}/branches`, key, { name: 'old' })).body.id;
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('warm', 'very') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('bright') });
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: { id: 'cool', $remove: true } });
  const v2 = (await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'second' })).body.id as string;
  const picked = await call('POST', `/profiles/${p}/cherry-pick`, { versionId: v2, branchId: old });
  expect(picked.status).toBe(201);
  expect(picked.body).toMatchObject({ branchId: old, parentVersionId: v1, message: 'second' });
  const state = (await call('GET', `/profiles/${p}/versions/${picked.body.id}`)).body.snapshot.constraints;
  expect(state.sort((a: any, b: any) => a.id.localeCompare(b.id))).toEqual([c('bright'), c('warm', 'very')]);
  const again = await call('POST', `/profiles/${p}/cherry-pick`, { versionId: v2, branchId: old });
  expect([again.status, again.body.error.code]).toEqual([409, 'cherry_pick_conflict']);
  expect((await call('POST', `/profiles/${p}/cherry-pick`, { versionId: v1 })).body.error.code).toBe('version_in_history');
  expect((await call('POST', `/profiles/${p}/cherry-pick`, { versionId: v2, branchId: old }, other)).status).toBe(404);
});

test('tags name versions; names are unique; delete is idempotent', async () => {
  const { p, v1, v2 } = await history();
  const head = await call('POST', `/profiles/${p}/tags`, { name: 'v2.0', message: 'spring' });
  expect(head.status).toBe(201);
  expect(head.body).toMatchObject({ name: 'v2.0', versionId: v2, message: 'spring', createdBy: { kind: 'human' } });
  await t.ok('POST', `/profiles/${p}/tags`, key, { name: 'v1.0', versionId: v1 });
  expect((await call('POST', `/profiles/${p}/tags`, { name: 'v1.0', versionId: v2 })).body.error.code).toBe('tag_exists');
  expect((await call('POST', `/profiles/${p}/tags`, { name: 'bad name' })).status).toBe(400);
  expect((await call('POST', `/profiles/${p}/tags`, { name: 'x', versionId: 'ver_nope' })).body.error.code).toBe('version_not_found');
  expect((await call('GET', `/profiles/${p}/tags`)).body.tags.map((x: any) => [x.name, x.versionId])).toEqual([
    ['v2.0', v2],
    ['v1.0', v1],
  ]);
  expect((await call('GET', `/profiles/${p}/tags`, undefined, other)).status).toBe(404);
  expect((await call('DELETE', `/profiles/${p}/tags/v1.0`, undefined, other)).status).toBe(404);
  expect((await call('DELETE', `/profiles/${p}/tags/v1.0`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `/profiles/${p}/tags/v1.0`)).body).toEqual({ deleted: 0 });
});

test('versions across branches, filtered by branch, author, message and time', async () => {
  const { p, v1, v2 } = await history();
  const side = (await t.ok('POST', `/profiles/${p}/branches`, key, { name: 'side' })).body.id;
  await t.ok('POST', `/profiles/${p}/working-changes/constraints`, key, { item: c('dim') });
  const v3 = (await t.ok('POST', `/profiles/${p}/commits`, key, { message: 'dim on the side', branchId: side })).body.id;
  const all = (await call('GET', `/profiles/${p}/versions`)).body;
  expect([all.total, all.versions.map((v: any) => v.id)]).toEqual([3, [v3, v2, v1]]);
  expect(all.versions[0].createdBy.kind).toBe('human');
  expect((await call('GET', `/profiles/${p}/versions?branchId=${side}`)).body.versions.map((v: any) => v.id)).toEqual([v3]);
  expect((await call('GET', `/profiles/${p}/versions?q=FIRST`)).body.versions.map((v: any) => v.id)).toEqual([v1]);
  expect((await call('GET', `/profiles/${p}/versions?authorId=${all.versions[0].createdBy.id}`)).body.total).toBe(3);
  expect((await call('GET', `/profiles/${p}/versions?authorId=agt_someone`)).body.total).toBe(0);
  expect((await call('GET', `/profiles/${p}/versions?since=2999-01-01T00:00:00Z`)).body.total).toBe(0);
  const page = (await call('GET', `/profiles/${p}/versions?limit=2`)).body;
  const rest = (await call('GET', `/profiles/${p}/versions?limit=2&cursor=${page.nextCursor}`)).body;
  expect([...page.versions, ...rest.versions].map((v: any) => v.id)).toEqual([v3, v2, v1]);
  expect((await call('GET', `/profiles/${p}/versions?branchId=nope`)).body.error.code).toBe('branch_not_found');
  expect((await call('GET', `/profiles/${p}/versions`, undefined, other)).status).toBe(404);
});
