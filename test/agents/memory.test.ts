import { startTestStack, type TestStack } from '../support/stack';

/** Agent memory (docs/memory.md): values by namespace and key, versions, history, expiry, lists and counters, isolation. */

let t: TestStack;
let key: string;
let other: string;
beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Rin' })).body.key;
  other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Oda' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, k = key) => t.call(method, p, { key: k, body });
const E = '/memory/notes/entries';

test('set, get, compare-and-set by version, merge and delete', async () => {
  const a = await call('PUT', `${E}/user`, { value: { name: 'Ada' } });
  expect(a.status).toBe(200);
  expect(a.body).toMatchObject({ namespace: 'notes', key: 'user', value: { name: 'Ada' }, version: 1, expiresAt: null });
  expect(a.body.updatedBy.kind).toBe('human');
  expect((await call('GET', `${E}/user`)).body.value).toEqual({ name: 'Ada' });
  // Compare-and-set: a stale version is refused, the current one wins; 0 means "must not exist".
  expect((await call('PUT', `${E}/user`, { value: 1, ifVersion: 7 })).body.error.code).toBe('version_mismatch');
  expect((await call('PUT', `${E}/user`, { value: 1, ifVersion: 0 })).status).toBe(409);
  expect((await call('PUT', `${E}/fresh`, { value: 1, ifVersion: 0 })).body.version).toBe(1);
  const m = await call('PATCH', `${E}/user`, { patch: { lang: 'en', name: null }, ifVersion: 1 });
  expect(m.body).toMatchObject({ value: { lang: 'en' }, version: 2 });
  expect((await call('PATCH', `${E}/fresh`, { patch: { a: 1 } })).body.error.code).toBe('value_not_object');
  expect((await call('DELETE', `${E}/user?ifVersion=1`)).status).toBe(409);
  expect((await call('DELETE', `${E}/user`)).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', `${E}/user`)).body).toEqual({ deleted: 0 });
  const gone = await call('GET', `${E}/user`);
  expect([gone.status, gone.body.error.code]).toEqual([404, 'memory_not_found']);
});

test('bad input is a 400 naming the field; another account sees nothing', async () => {
  expect((await call('PUT', `/memory/Bad!/entries/x`, { value: 1 })).status).toBe(400);
  expect((await call('PUT', `${E}/has%20space`, { value: 1 })).status).toBe(400);
  const noValue = await call('PUT', `${E}/x`, {});
  expect([noValue.status, noValue.body.error.code]).toEqual([400, 'invalid_request']);
  expect((await call('PUT', `${E}/big`, { value: 'x'.repeat(70_000) })).status).toBe(413);
  await call('PUT', `${E}/secret`, { value: 'mine' });
  expect((await call('GET', `${E}/secret`, undefined, other)).status).toBe(404);
  expect((await call('GET', '/memory/notes/entries', undefined, other)).body.entries).toEqual([]);
  expect((await call('GET', '/memory/search?q=mine', undefined, other)).body.entries).toEqual([]);
  expect((await call('POST', `${E}/secret/increment`, { by: 1 }, other)).body.version).toBe(1);
  expect((await call('GET', `${E}/secret`)).body.value).toBe('mine');
});

test('counters and lists are atomic under concurrent writers', async () => {
  await Promise.all(Array.from({ length: 10 }, () => call('POST', '/memory/c/entries/hits/increment', {})));
  expect((await call('GET', '/memory/c/entries/hits')).body).toMatchObject({ value: 10, version: 10 });
  expect((await call('POST', '/memory/c/entries/hits/increment', { by: -2.5 })).body.value).toBe(7.5);
  await Promise.all(Array.from({ length: 5 }, (_, i) => call('POST', '/memory/c/entries/q/append', { values: [i] })));
  expect((await call('GET', '/memory/c/entries/q')).body.value.slice().sort()).toEqual([0, 1, 2, 3, 4]);
  const popped = await call('POST', '/memory/c/entries/q/pop', { from: 'start', count: 2 });
  expect(popped.body.values).toHaveLength(2);
  expect(popped.body.entry.value).toHaveLength(3);
  const rolling = await call('POST', '/memory/c/entries/log/append', { values: [1, 2, 3, 4], maxLength: 3 });
  expect(rolling.body.value).toEqual([2, 3, 4]);
  expect((await call('POST', '/memory/c/entries/hits/append', { values: [1] })).body.error.code).toBe('value_not_list');
  expect((await call('POST', '/memory/c/entries/log/increment', {})).body.error.code).toBe('value_not_number');
  expect((await call('POST', '/memory/c/entries/none/pop', {})).status).toBe(404);
});

test('expiry: an expired entry is gone; expire sets and removes a ttl', async () => {
  await call('PUT', '/memory/tmp/entries/short', { value: 1, ttlSeconds: 1 });
  const kept = await call('PUT', '/memory/tmp/entries/kept', { value: 2 });
  expect(kept.body.expiresAt).toBeNull();
  const ex = await call('POST', '/memory/tmp/entries/kept/expire', { ttlSeconds: 60 });
  expect(Date.parse(ex.body.expiresAt)).toBeGreaterThan(Date.now() + 50_000);
  expect((await call('POST', '/memory/tmp/entries/kept/expire', { ttlSeconds: null })).body).toMatchObject({ expiresAt: null, value: 2 });
  await new Promise((r) => setTimeout(r, 1200));
  expect((await call('GET', '/memory/tmp/entries/short')).status).toBe(404);
  expect((await call('POST', '/memory/tmp/getMany', { keys: ['x'] })).status).toBe(404);
  const many = await call('POST', '/memory/tmp/get-many', { keys: ['short', 'kept'] });
  expect(many.body.missing).toEqual(['short']);
  // A key written again after it expired continues its versions.
  expect((await call('PUT', '/memory/tmp/entries/short', { value: 3 })).body.version).toBe(2);
});

test('history and restore undo a change, also after a delete; rename moves a key', async () => {
  const P = '/memory/h/entries';
  await call('PUT', `${P}/plan`, { value: 'first' });
  await call('PUT', `${P}/plan`, { value: 'second' });
  await call('DELETE', `${P}/plan`);
  const h = await call('GET', `${P}/plan/history`);
  expect(h.body.versions.map((v: any) => [v.version, v.op, v.value])).toEqual([
    [3, 'delete', undefined],
    [2, 'set', 'second'],
    [1, 'set', 'first'],
  ]);
  const r = await call('POST', `${P}/plan/restore`, { version: 1 });
  expect(r.body).toMatchObject({ value: 'first', version: 4 });
  expect((await call('POST', `${P}/plan/restore`, { version: 3 })).body.error.code).toBe('version_not_found');
  await call('PUT', `${P}/other`, { value: 'x' });
  expect((await call('POST', `${P}/plan/rename`, { newKey: 'other' })).body.error.code).toBe('key_exists');
  const moved = await call('POST', `${P}/plan/rename`, { newKey: 'other', overwrite: true });
  expect(moved.body).toMatchObject({ key: 'other', value: 'first' });
  expect((await call('GET', `${P}/plan`)).status).toBe(404);
  expect((await call('GET', `/memory/h/entries/never/history`)).status).toBe(404);
});

test('search takes its text literally, without case, in linear time; another account is served meanwhile', async () => {
  await call('POST', '/memory/lit/set-many', {
    entries: [
      { key: 'pct', value: 'it is 100%_X (really) \\ .* done' },
      ...Array.from({ length: 10 }, (_, i) => ({ key: `long${i}`, value: 'a'.repeat(60_000) })),
    ],
  });
  const search = (q: string, k = key) => call('GET', `/memory/search?namespace=lit&q=${encodeURIComponent(q)}`, undefined, k);
  const keys = async (q: string) => (await search(q)).body.entries.map((e: any) => e.key).sort();
  // ILIKE '%…%' backtracked over every "a" before the "b": 200 characters against 10 MB took 8.8 s in PGlite.
  const [hostile, me] = await Promise.all([search(`${'a'.repeat(199)}b`), t.call('GET', '/me', { key: other })]);
  expect([hostile.status, hostile.body.entries]).toEqual([200, []]);
  expect(me.status).toBe(200);
  expect(await keys('AAAA')).toHaveLength(10);
  for (const q of ['100%_x', '(REALLY)', '\\ .*', 'IT IS']) expect([q, await keys(q)]).toEqual([q, ['pct']]);
  for (const q of ['100%x', '1_0', 'a.b', 'it.is', '^it']) expect([q, await keys(q)]).toEqual([q, []]);
});

test('batches, listing by prefix, search, namespaces: copy and clear', async () => {
  const bad = await call('POST', '/memory/b/set-many', {
    entries: [
      { key: 'ok', value: 1 },
      { key: 'x y', value: 2 },
    ],
  });
  expect(bad.status).toBe(400);
  const dup = await call('POST', '/memory/b/set-many', {
    entries: [
      { key: 'k', value: 1 },
      { key: 'k', value: 2 },
    ],
  });
  expect(dup.status).toBe(400);
  expect((await call('GET', '/memory/b/entries')).body.entries).toEqual([]);
  const set = await call('POST', '/memory/b/set-many', {
    entries: [
      { key: 'task:1', value: { text: 'buy lemons' } },
      { key: 'task:2', value: 'call Bo' },
      { key: 'pref:tz', value: 'UTC' },
    ],
  });
  expect(set.body.entries).toHaveLength(3);
  const page1 = await call('GET', '/memory/b/entries?prefix=task:&limit=1');
  expect(page1.body.entries.map((e: any) => e.key)).toEqual(['task:1']);
  const page2 = await call('GET', `/memory/b/entries?prefix=task:&limit=1&cursor=${page1.body.nextCursor}`);
  expect([page2.body.entries.map((e: any) => e.key), page2.body.nextCursor]).toEqual([['task:2'], null]);
  expect((await call('GET', '/memory/search?q=LEMON')).body.entries.map((e: any) => e.key)).toEqual(['task:1']);
  expect((await call('GET', '/memory/search?q=UTC&namespace=other')).body.entries).toEqual([]);
  const copy = await call('POST', '/memory/b/copy', { to: 'b-copy' });
  expect(copy.body).toEqual({ copied: 3, skipped: 0 });
  expect((await call('POST', '/memory/b/copy', { to: 'b-copy' })).body).toEqual({ copied: 0, skipped: 3 });
  expect((await call('POST', '/memory/empty/copy', { to: 'x' })).status).toBe(404);
  const names = (await call('GET', '/memory')).body.namespaces.map((n: any) => n.name);
  expect(names).toEqual(expect.arrayContaining(['b', 'b-copy']));
  expect((await call('POST', '/memory/b/delete-many', { keys: ['task:1', 'nope'] })).body).toEqual({ deleted: 1 });
  expect((await call('DELETE', '/memory/b-copy')).body).toEqual({ deleted: 3 });
  expect((await call('GET', '/memory/b-copy/entries')).body.entries).toEqual([]);
  expect((await call('GET', '/memory', undefined, other)).body.namespaces.map((n: any) => n.name)).not.toContain('b');
});
