import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createPgliteSql, createPgSql, DomainError, migrate, type Principal, type Sql } from '@svc/kit';
import { buildCommitSnapshot, chunkItems, migrations, nextManifest, ProfilesDomain, SCHEMA, snapshotParts, toManifest } from '@svc/profiles';

import { createDatabase } from '../../../../test/support/backends';

/**
 * The domain against a real SQL backend: PostgreSQL when DATABASE_URL is set (a fresh database),
 * embedded PGlite otherwise. Tenancy is tested here, with two accounts' principals.
 */
const A: Principal = { kind: 'human', userId: 'acct_A', accountId: 'acct_A', keyId: 'key_a', channel: 'api' };
const B: Principal = { kind: 'human', userId: 'acct_B', accountId: 'acct_B', keyId: 'key_b', channel: 'api' };
const A_AGENT: Principal = { kind: 'agent', agentId: 'agt_x', accountId: 'acct_A', keyId: 'key_g', channel: 'api' };
const A_PROJ: Principal = { ...A, keyId: 'key_p', projectId: 'proj1' };

let sql: Sql;
let dir: string;
let drop: (() => Promise<void>) | undefined;
let d: ProfilesDomain;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-profiles-'));
  if (process.env.DATABASE_URL) {
    const db = await createDatabase(process.env.DATABASE_URL);
    sql = createPgSql(db.url, { max: 4 });
    drop = db.drop;
  } else {
    sql = await createPgliteSql(path.join(dir, 'pg'));
  }
  await migrate(sql, SCHEMA, migrations);
  d = new ProfilesDomain(sql);
});
afterAll(async () => {
  await sql?.close();
  await drop?.();
  fs.rmSync(dir, { recursive: true, force: true });
});

const doc = (r: { json: string }) => JSON.parse(r.json);
async function fails(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
}

const snap = (...ids: string[]) => ({
  constraints: ids.map((id) => ({ id, question: `q ${id}?`, answer: id })),
  exemplars: [],
  comparisons: [],
  latentScores: {},
});

describe('tenancy', () => {
  test("another account's profile is not found, for every operation, and is not listed", async () => {
    const created = doc(await d.create(A, { name: 'mine' }));
    const id = created.id as string;
    expect(id).toMatch(/^prof_[0-9a-z]{26}$/);
    const codes = await Promise.all([
      fails(d.get(B, id)),
      fails(d.update(B, id, { name: 'stolen' })),
      fails(d.remove(B, id)),
      fails(d.commit(B, id, { message: 'x' })),
      fails(d.createBranch(B, id, { name: 'x' })),
      fails(d.checkout(B, id, 'main')),
      fails(d.rollback(B, id, { versionId: 'ver_x' })),
      fails(d.merge(B, id, { sourceBranchId: 'main' })),
      fails(d.log(B, id, { limit: 10 })),
      fails(d.diff(B, id, {})),
      fails(d.version(B, id, 'ver_x')),
      fails(d.deleteBranch(B, id, 'x')),
    ]);
    for (const e of codes) {
      expect(e.kind).toBe('not_found');
      expect(e.code).toBe('profile_not_found');
    }
    expect((await d.list(B, { limit: 50 })).profiles).toEqual([]);
    expect((await d.list(A, { limit: 50 })).profiles.map((p) => p.id)).toContain(id);
    // Agents of the account use profiles like its people.
    expect(doc(await d.get(A_AGENT, id)).name).toBe('mine');
    expect(doc(await d.get(A, id)).name).toBe('mine');
  });

  test('a project-scoped key sees only its project', async () => {
    const open = doc(await d.create(A, { name: 'no project' }));
    const inProj = doc(await d.create(A_PROJ, { name: 'in project' }));
    expect(inProj.projectId).toBe('proj1');
    expect((await fails(d.get(A_PROJ, open.id))).kind).toBe('not_found');
    expect(doc(await d.get(A, inProj.id)).name).toBe('in project');
    const listed = (await d.list(A_PROJ, { limit: 200 })).profiles.map((p) => p.id);
    expect(listed).toContain(inProj.id);
    expect(listed).not.toContain(open.id);
    expect((await fails(d.create(A_PROJ, { projectId: 'other' }))).code).toBe('project_scope');
  });
});

describe('history rules', () => {
  /** A profile with main: v1 <- v2, and branch feat (from v2): f1. */
  async function fixture() {
    const id = doc(await d.create(A, {})).id as string;
    const p1 = doc(
      await d.update(A, id, {
        profileData: {
          versions: [{ id: 'v1', branchId: 'main', parentVersionId: null, message: 'one', snapshot: snap('a') }],
          branches: [{ id: 'main', name: 'main', headVersionId: 'v1' }],
        },
      }),
    );
    const p2 = doc(
      await d.update(A, id, {
        profileData: {
          versions: [...p1.profileData.versions, { id: 'v2', branchId: 'main', parentVersionId: 'v1', message: 'two', snapshot: snap('a', 'b') }],
          branches: [{ ...p1.profileData.branches[0], headVersionId: 'v2' }],
        },
      }),
    );
    const p3 = doc(
      await d.update(A, id, {
        profileData: {
          branches: [...p2.profileData.branches, { id: 'feat', name: 'feature/x', headVersionId: 'v2', parentBranchId: 'main' }],
        },
      }),
    );
    const p4 = doc(
      await d.update(A, id, {
        profileData: {
          versions: [...p3.profileData.versions, { id: 'f1', branchId: 'feat', parentVersionId: 'v2', message: 'f', snapshot: snap('a', 'b', 'f') }],
          branches: [p3.profileData.branches[0], { ...p3.profileData.branches[1], headVersionId: 'f1' }],
        },
      }),
    );
    return { id, p: p4 };
  }

  test('the spec flows give the described state', async () => {
    const { id, p } = await fixture();
    expect(p.profileData.versions.map((v: any) => [v.id, v.parentVersionId, v.branchId])).toEqual([
      ['v1', null, 'main'],
      ['v2', 'v1', 'main'],
      ['f1', 'v2', 'feat'],
    ]);
    expect(p.profileData.branches).toEqual([
      { id: 'main', name: 'main', headVersionId: 'v2', createdAt: expect.any(String) },
      { id: 'feat', name: 'feature/x', headVersionId: 'f1', parentBranchId: 'main', createdAt: expect.any(String) },
    ]);
    expect(p.effectiveSnapshot).toEqual(snap('a', 'b'));
    // Switch: the effective snapshot follows; working changes carry along.
    const work = { constraints: [{ id: 'w', question: 'w?' }], exemplars: [], comparisons: [] };
    await d.update(A, id, { profileData: { workingChanges: work } });
    const sw = doc(await d.update(A, id, { profileData: { currentBranchId: 'feat' } }));
    expect(sw.effectiveSnapshot).toEqual(snap('a', 'b', 'f'));
    expect(sw.profileData.workingChanges).toEqual(work);
    // Roll back main to v1 (the client also sends effectiveSnapshot; the server recomputes it anyway).
    const rb = doc(
      await d.update(A, id, {
        profileData: { currentBranchId: 'main', branches: [{ id: 'main', headVersionId: 'v1' }, { id: 'feat' }] },
        effectiveSnapshot: { bogus: true },
      }),
    );
    expect(rb.effectiveSnapshot).toEqual(snap('a'));
    expect(rb.profileData.versions).toHaveLength(3);
    // A later commit on main has the rolled-back head as its parent.
    const bad = await fails(
      d.update(A, id, {
        profileData: {
          versions: [{ id: 'v1' }, { id: 'v2' }, { id: 'f1' }, { id: 'v3', branchId: 'main', parentVersionId: 'v2', snapshot: snap('c') }],
          branches: [{ id: 'main', headVersionId: 'v3' }, { id: 'feat' }],
        },
      }),
    );
    expect(bad.code).toBe('version_parent_mismatch');
    const ok = doc(
      await d.update(A, id, {
        profileData: {
          versions: [{ id: 'v1' }, { id: 'v2' }, { id: 'f1' }, { id: 'v3', branchId: 'main', parentVersionId: 'v1', snapshot: snap('c') }],
          branches: [{ id: 'main', headVersionId: 'v3' }, { id: 'feat' }],
        },
      }),
    );
    expect(ok.effectiveSnapshot).toEqual(snap('c'));
    // Versions without snapshots (as a history listing gives them) keep their stored snapshots.
    expect(JSON.parse(await d.version(A, id, 'v2')).snapshot).toEqual(snap('a', 'b'));
  });

  test('every corrupting PATCH is refused with 422 and changes nothing', async () => {
    const { id, p } = await fixture();
    const before = await d.get(A, id);
    const versions = p.profileData.versions.map((v: any) => ({ id: v.id }));
    const branches = p.profileData.branches;
    const cases: Array<[string, unknown]> = [
      ['version_immutable', { versions: [{ ...p.profileData.versions[0], message: 'rewritten' }, ...versions.slice(1)] }],
      ['version_immutable', { versions: [{ id: 'v1', snapshot: snap('zzz') }, ...versions.slice(1)] }],
      ['version_immutable', { versions: [{ id: 'v1', parentVersionId: 'v2' }, ...versions.slice(1)] }],
      ['version_dropped', { versions: versions.slice(1) }],
      ['duplicate_version_id', { versions: [...versions, { id: 'v1' }] }],
      ['duplicate_branch_id', { branches: [...branches, branches[1]] }],
      ['duplicate_branch_name', { branches: [...branches, { id: 'other', name: 'feature/x', parentBranchId: 'main', headVersionId: 'v2' }] }],
      ['main_branch_required', { branches: [branches[1]], currentBranchId: 'feat' }],
      ['branch_parent_missing', { branches: [...branches, { id: 'b2', name: 'b2', parentBranchId: 'nope', headVersionId: 'v2' }] }],
      ['branch_parent_missing', { branches: [branches[0]].concat([{ id: 'b3', name: 'b3', parentBranchId: 'feat', headVersionId: 'f1' }]) }],
      [
        'version_parent_mismatch',
        {
          versions: [...versions, { id: 'v9', branchId: 'main', parentVersionId: 'v1', snapshot: {} }],
          branches: [{ id: 'main', headVersionId: 'v9' }, { id: 'feat' }],
        },
      ],
      [
        'version_parent_mismatch',
        {
          versions: [...versions, { id: 'v9', branchId: 'main', parentVersionId: null, snapshot: {} }],
          branches: [{ id: 'main', headVersionId: 'v9' }, { id: 'feat' }],
        },
      ],
      ['head_not_new_version', { versions: [...versions, { id: 'v9', branchId: 'main', parentVersionId: 'v2', snapshot: {} }] }],
      ['version_snapshot_required', { versions: [...versions, { id: 'v9', branchId: 'main', parentVersionId: 'v2' }] }],
      ['version_branch_missing', { versions: [...versions, { id: 'v9', branchId: 'ghost', parentVersionId: null, snapshot: {} }] }],
      ['head_other_branch', { branches: [{ id: 'main', headVersionId: 'f1' }, { id: 'feat' }] }],
      ['head_other_branch', { branches: [{ id: 'main' }, { id: 'feat', headVersionId: 'v1' }] }],
      ['head_not_found', { branches: [{ id: 'main', headVersionId: 'ver_none' }, { id: 'feat' }] }],
      ['head_cleared', { branches: [{ id: 'main', headVersionId: null }, { id: 'feat' }] }],
      ['branch_start_mismatch', { branches: [...branches, { id: 'b4', name: 'b4', parentBranchId: 'main', headVersionId: 'v1' }] }],
      ['branch_parent_immutable', { branches: [{ id: 'main' }, { id: 'feat', parentBranchId: null }] }],
      ['current_branch_missing', { currentBranchId: 'ghost' }],
      ['current_branch_missing', { branches: [branches[0]], currentBranchId: 'feat' }],
      ['duplicate_item_id', { workingChanges: { constraints: [{ id: 'x' }, { id: 'x' }] } }],
    ];
    for (const [code, profileData] of cases) {
      const err = await fails(d.update(A, id, { profileData })).catch((e: Error) => {
        throw new Error(`${code}: ${e.message}`);
      });
      expect([code, err.kind, err.code]).toEqual([code, 'unprocessable', code]);
      expect(err.message.length).toBeGreaterThan(20);
    }
    const after = await d.get(A, id);
    expect(after.etag).toBe(before.etag);
    expect(after.json).toBe(before.json);
  });

  test('If-Match: a stale tag fails with precondition_failed; the current one and * pass', async () => {
    const { id } = await fixture();
    const { etag } = await d.get(A, id);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const next = await d.update(A, id, { name: 'renamed' }, etag);
    expect(next.etag).not.toBe(etag);
    const stale = await fails(d.update(A, id, { name: 'again' }, etag));
    expect([stale.kind, stale.code]).toEqual(['precondition_failed', 'etag_mismatch']);
    expect((await fails(d.commit(A, id, { message: 'm' }, etag))).kind).toBe('precondition_failed');
    expect((await fails(d.remove(A, id, `W/${next.etag}`))).kind).toBe('precondition_failed');
    await d.update(A, id, { name: 'star' }, '*');
    await d.update(A, id, { name: 'list' }, `"nope", ${(await d.get(A, id)).etag}`);
  });
});

describe('first-class operations', () => {
  test('commit, branch, checkout, rollback, log and diff agree with the PATCH flows', async () => {
    const id = doc(await d.create(A, {})).id as string;
    await d.update(A, id, { profileData: { workingChanges: { constraints: [{ id: 'a', question: 'Warm?', answer: 'yes' }] } } });
    const c1 = await d.commit(A, id, { message: 'first' });
    expect(c1.result).toMatchObject({ branchId: 'main', parentVersionId: null, message: 'first' });
    expect(c1.result.id).toMatch(/^ver_/);
    let p = doc(await d.get(A, id));
    expect(p.profileData.workingChanges).toEqual({ constraints: [], exemplars: [], comparisons: [] });
    expect(p.profileData.branches[0].headVersionId).toBe(c1.result.id);
    expect(p.effectiveSnapshot.constraints).toEqual([{ id: 'a', question: 'Warm?', answer: 'yes' }]);
    expect(p.effectiveSnapshot.promptSummary).toContain('Warm?: yes');

    const br = await d.createBranch(A, id, { name: 'exp/1' });
    expect(br.result).toMatchObject({ name: 'exp/1', headVersionId: c1.result.id, parentBranchId: 'main' });
    expect((await fails(d.createBranch(A, id, { name: 'exp/1' }))).kind).toBe('conflict');
    await d.checkout(A, id, br.result.id);
    await d.update(A, id, {
      profileData: {
        workingChanges: {
          constraints: [
            { id: 'a', question: 'Warm?', answer: 'no' },
            { id: 'b', question: 'Grain?' },
          ],
        },
      },
    });
    const c2 = await d.commit(A, id, { message: 'on branch' });
    expect(c2.result).toMatchObject({ branchId: br.result.id, parentVersionId: c1.result.id });
    p = doc(await d.get(A, id));
    expect(p.effectiveSnapshot.constraints.map((c: any) => [c.id, c.answer])).toEqual([
      ['a', 'no'],
      ['b', undefined],
    ]);
    // Removing through working changes.
    await d.update(A, id, { profileData: { workingChanges: { constraints: [{ id: 'b', $remove: true }] } } });
    const c3 = await d.commit(A, id, { message: 'drop b' });
    const diff = JSON.parse(await d.diff(A, id, { from: c1.result.id, to: c3.result.id }));
    expect(diff.constraints).toEqual({
      added: [],
      removed: [],
      changed: [{ id: 'a', from: { id: 'a', question: 'Warm?', answer: 'yes' }, to: { id: 'a', question: 'Warm?', answer: 'no' } }],
    });
    expect(JSON.parse(await d.diff(A, id, {})).constraints.removed).toEqual([{ id: 'b', question: 'Grain?' }]);

    // Rollback: a new version restoring c1's state, history kept.
    const rb = await d.rollback(A, id, { versionId: c1.result.id });
    expect(rb.result.parentVersionId).toBe(c3.result.id);
    p = doc(await d.get(A, id));
    expect(p.effectiveSnapshot).toEqual(JSON.parse(await d.version(A, id, c1.result.id)).snapshot);
    const log = await d.log(A, id, { limit: 2 });
    expect(log.versions.map((v) => v.id)).toEqual([rb.result.id, c3.result.id]);
    expect(log.versions[0]).not.toHaveProperty('snapshot');
    const rest = await d.log(A, id, { limit: 2, cursor: log.nextCursor! });
    expect(rest.versions.map((v) => v.id)).toEqual([c2.result.id, c1.result.id]);
    expect(rest.nextCursor).toBeNull();
    // A version of another branch cannot be "rolled back" to.
    await d.checkout(A, id, 'main');
    expect((await fails(d.rollback(A, id, { versionId: c3.result.id }))).code).toBe('version_not_in_history');

    // Delete branch: not main, not the current one; its versions stay.
    expect((await fails(d.deleteBranch(A, id, 'main'))).code).toBe('main_branch_required');
    await d.deleteBranch(A, id, br.result.id);
    p = doc(await d.get(A, id));
    expect(p.profileData.branches.map((b: any) => b.id)).toEqual(['main']);
    expect(p.profileData.versions).toHaveLength(4);
  });

  test('merge: three-way by item id, with conflicts, resolutions and a dry run', async () => {
    const id = doc(await d.create(A, {})).id as string;
    const base = {
      constraints: [
        { id: 'a', v: 1 },
        { id: 'b', v: 1 },
        { id: 'c', v: 1 },
      ],
      latentScores: { warm: 0.5 },
    };
    await d.update(A, id, { profileData: { workingChanges: base } });
    await d.commit(A, id, { message: 'base' });
    const br = (await d.createBranch(A, id, { name: 'theirs' })).result;
    // ours (main): change a, remove c, add d; theirs: change a differently, change b, add e.
    await d.update(A, id, {
      profileData: {
        workingChanges: {
          constraints: [
            { id: 'a', v: 2 },
            { id: 'c', $remove: true },
            { id: 'd', v: 1 },
          ],
        },
      },
    });
    const ours = (await d.commit(A, id, { message: 'ours' })).result;
    await d.update(A, id, {
      profileData: {
        workingChanges: {
          constraints: [
            { id: 'a', v: 3 },
            { id: 'b', v: 2 },
            { id: 'e', v: 1 },
          ],
          latentScores: { cool: 1 },
        },
      },
    });
    await d.commit(A, id, { message: 'theirs', branchId: br.id });

    const { etag } = await d.get(A, id);
    const dry = JSON.parse((await d.merge(A, id, { sourceBranchId: br.id, dryRun: true })).json);
    expect(dry.merged).toBe(false);
    expect(dry.conflicts).toEqual([
      { kind: 'constraints', id: 'a', base: { id: 'a', v: 1 }, ours: { id: 'a', v: 2 }, theirs: { id: 'a', v: 3 }, resolution: null },
    ]);
    expect((await d.get(A, id)).etag).toBe(etag);
    const blocked = await fails(d.merge(A, id, { sourceBranchId: br.id }));
    expect([blocked.kind, blocked.code]).toEqual(['conflict', 'merge_conflict']);
    expect((blocked.details as any).conflicts).toHaveLength(1);

    const merged = JSON.parse((await d.merge(A, id, { sourceBranchId: br.id, resolutions: { constraints: { a: 'theirs' } } })).json);
    expect(merged.merged).toBe(true);
    expect(merged.conflicts[0]!.resolution).toBe('theirs');
    const p = doc(await d.get(A, id));
    expect(p.effectiveSnapshot.constraints).toEqual([
      { id: 'a', v: 3 },
      { id: 'b', v: 2 },
      { id: 'd', v: 1 },
      { id: 'e', v: 1 },
    ]);
    expect(p.effectiveSnapshot.latentScores).toEqual({ warm: 0.5, cool: 1 });
    expect(p.profileData.versions.at(-1)).toMatchObject({ branchId: 'main', parentVersionId: ours.id });
    expect(p.profileData.branches[0].headVersionId).toBe(merged.version.id);
    // Merging again is a no-op: the source head is already in the target's history.
    expect(JSON.parse((await d.merge(A, id, { sourceBranchId: br.id })).json).upToDate).toBe(true);
  });
});

describe('storage', () => {
  test('chunks are content-defined: an edit in the middle rewrites few chunks', () => {
    const items = Array.from({ length: 5000 }, (_, i) => ({ id: `i${i}`, question: `Question ${i}?`, answer: `answer ${i}` }));
    const a = chunkItems(items).map((c) => c.hash);
    const edited = [...items];
    edited.splice(2500, 0, { id: 'new', question: 'inserted?', answer: 'x' });
    edited[100] = { ...edited[100]!, answer: 'changed' };
    const b = chunkItems(edited).map((c) => c.hash);
    const old = new Set(a);
    expect(b.filter((h) => !old.has(h)).length).toBeLessThanOrEqual(4);
    expect(a.length).toBeGreaterThan(50);
  });

  test('a commit re-chunks only from its first changed item, with the same result as a full re-chunk', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const item = (i: number) => ({ id: `c${i}`, question: `q${i}?`, answer: 'a'.repeat(rnd(40)) });
    let head = {
      constraints: Array.from({ length: 1500 }, (_, i) => item(i)),
      exemplars: [{ id: 'e', label: 'good', embedding: [1, 2] }],
      comparisons: [],
    } as Record<string, unknown>;
    let next = 1500;
    for (let round = 0; round < 15; round++) {
      const stored = toManifest(head);
      const texts = new Map(stored.chunks.map((c) => [c.hash, c.body]));
      const { snapshot, offsets } = snapshotParts(stored.manifest, texts);
      const changes: unknown[] = [];
      const kind = rnd(4);
      if (kind === 0 || kind === 3) for (let k = 0; k < 1 + rnd(20); k++) changes.push(item(next++));
      if (kind === 1 || kind === 3) changes.push({ ...item(rnd(next)), answer: `edited ${round}` });
      if (kind === 2) changes.push({ id: `c${rnd(next)}`, $remove: true });
      const built = buildCommitSnapshot(snapshot, { constraints: changes });
      const inc = nextManifest(built.snapshot, stored.manifest, offsets, built.firstChanged, (h) => texts.get(h)!.length);
      const full = toManifest(built.snapshot);
      expect(inc.manifest).toEqual(full.manifest);
      expect(inc.bytes).toBe(full.bytes);
      const fresh = new Set(full.chunks.map((c) => c.hash).filter((h) => !texts.has(h)));
      expect(new Set(inc.chunks.map((c) => c.hash).filter((h) => !texts.has(h)))).toEqual(fresh);
      head = built.snapshot;
    }
  });

  test('a snapshot comes back exactly as committed, key order and all', async () => {
    const weird = {
      latentScores: { z: 1, a: [1, 2, { b: null }] },
      constraints: [{ id: 1, ü: 'é\n"' }, { x: 1 }, { x: 1 }],
      extra: 'kept',
      exemplars: [],
    };
    const id = doc(await d.create(A, {})).id as string;
    const p = doc(
      await d.update(A, id, {
        profileData: {
          versions: [{ id: 'v1', branchId: 'main', parentVersionId: null, message: '', snapshot: weird }],
          branches: [{ id: 'main', name: 'main', headVersionId: 'v1' }],
        },
      }),
    );
    expect(p.effectiveSnapshot).toEqual(weird);
    expect(Object.keys(p.effectiveSnapshot)).toEqual(Object.keys(weird));
    expect(p.profileData.versions[0].snapshot).toEqual(weird);
    // Sent back with its snapshot (reordered keys), the committed version is accepted as unchanged.
    const reordered = Object.fromEntries(Object.entries(weird).reverse());
    await d.update(A, id, { profileData: { versions: [{ ...p.profileData.versions[0], snapshot: reordered }] } });
    expect(toManifest(weird).manifest.keys).toEqual(['latentScores', 'constraints', 'extra', 'exemplars']);
  });

  test("GET lists the versions' snapshots while they are small, and on request", async () => {
    const id = doc(await d.create(A, {})).id as string;
    const big = (n: number) => ({ constraints: [{ id: `c${n}`, text: 'x'.repeat(300_000) }] });
    for (let n = 0; n < 4; n++) {
      await d.update(A, id, { profileData: { workingChanges: big(n) } });
      await d.commit(A, id, { message: `v${n}` });
    }
    const auto = doc(await d.get(A, id));
    expect(auto.profileData.versions).toHaveLength(4);
    expect(auto.profileData.versions.every((v: any) => v.snapshot === undefined)).toBe(true);
    expect(auto.effectiveSnapshot.constraints).toHaveLength(4);
    const all = doc(await d.get(A, id, { snapshots: true }));
    expect(all.profileData.versions[3].snapshot).toEqual(auto.effectiveSnapshot);
    expect(all.profileData.versions[0].snapshot.constraints).toHaveLength(1);
    const small = doc(await d.create(A, {})).id as string;
    await d.commit(A, small, { message: 'tiny' });
    expect(doc(await d.get(A, small)).profileData.versions[0].snapshot).toBeDefined();
    expect(doc(await d.get(A, small, { snapshots: false })).profileData.versions[0].snapshot).toBeUndefined();
  });

  test('a profile deletes with its history', async () => {
    const id = doc(await d.create(A, {})).id as string;
    await d.commit(A, id, { message: 'x' });
    await d.remove(A, id);
    expect((await fails(d.get(A, id))).kind).toBe('not_found');
    const left = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM profiles.versions WHERE profile_id = $1`, [id]);
    expect(Number(left[0]!.n)).toBe(0);
  });
});
