import { LINEAGE_REPAIR_SQL } from '@svc/keys';
import { type Stack, startStack } from '@svc/stack';

import { REAL } from '../support/backends';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * Lineage is authority (docs/keys.md): a key never outlives the key that created it. Its expiry is
 * capped at its parent's, and revoking a key revokes every key made from it, down the tree, on
 * every gateway within the bound of any revocation.
 */
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

let n = 0;
async function person() {
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return res.body.key as string;
}
type Created = { key: string; id: string; expiresAt: string | null; expiryCapped?: true };
async function create(key: string, body: Record<string, unknown> = {}, base = '/me/api-keys'): Promise<Created> {
  return (await t.ok('POST', base, key, { name: `key ${++n}`, ...body })).body as Created;
}
const status = async (key: string) => (await t.call('GET', '/me', { key })).status;
/** Polls (up to 2 s) until every key answers 401; returns the statuses seen last. */
async function refusedSoon(keys: string[]): Promise<number[]> {
  let last: number[] = [];
  await until(
    async () => {
      last = await Promise.all(keys.map(status));
      return last.every((s) => s === 401);
    },
    2000,
    { every: 20 },
  ).catch(() => {});
  return last;
}
async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

test('a child asking for no expiry, or a later one, gets its parent’s, and the answer says so', async () => {
  const root = await person();
  const parent = await create(root, { expiresInDays: 1 });
  expect(parent.expiryCapped).toBeUndefined();
  const none = await create(parent.key);
  const tenYears = await create(parent.key, { expiresInDays: 3650 });
  for (const child of [none, tenYears]) {
    expect([child.expiresAt, child.expiryCapped]).toEqual([parent.expiresAt, true]);
    expect((await t.ok('GET', `/me/api-keys/${child.id}`, root)).body.expiresAt).toBe(parent.expiresAt);
  }
  // A grandchild is capped by the same expiry; an earlier expiry than the parent's is kept as asked.
  const grandchild = await create(none.key, { expiresInDays: 30 });
  expect(grandchild.expiresAt).toBe(parent.expiresAt);
  const longer = await create(root, { expiresInDays: 10 });
  const shorter = await create(longer.key, { expiresInDays: 2 });
  expect(shorter.expiryCapped).toBeUndefined();
  expect(Date.parse(shorter.expiresAt!)).toBeLessThan(Date.parse(longer.expiresAt!));
  // A key that never expires caps nothing.
  expect((await create(root)).expiresAt).toBeNull();
  expect((await create(root, { expiresInDays: 3650 })).expiryCapped).toBeUndefined();
});

test('an agent key’s keys are capped the same way, and so are agent keys a person’s key makes', async () => {
  const root = await person();
  const shortPerson = await create(root, { expiresInDays: 1 });
  const agent = (await t.ok('POST', '/agents', root, { name: `agent ${++n}` })).body as { id: string };
  // A person's one-day key making a key for the agent: capped at the person key's expiry.
  const viaPerson = await create(shortPerson.key, {}, `/agents/${agent.id}/keys`);
  expect([viaPerson.expiresAt, viaPerson.expiryCapped]).toEqual([shortPerson.expiresAt, true]);
  // The agent's own one-day key making keys of itself, through either path.
  const agentKey = await create(root, { expiresInDays: 1 }, `/agents/${agent.id}/keys`);
  const own = await create(agentKey.key, { expiresInDays: 3650 });
  const viaAgents = await create(agentKey.key, {}, `/agents/${agent.id}/keys`);
  for (const child of [own, viaAgents]) expect([child.expiresAt, child.expiryCapped]).toEqual([agentKey.expiresAt, true]);
  expect((await t.ok('GET', '/me', own.key)).body.agentId).toBe(agent.id);
});

test('revoking a key revokes every key made from it, down the tree, within a second', async () => {
  const root = await person();
  const parent = await create(root);
  const sibling = await create(root);
  const child = await create(parent.key);
  const grandchild = await create(child.key);
  const agent = (await t.ok('POST', '/agents', root, { name: `agent ${++n}` })).body as { id: string };
  const agentChild = await create(child.key, {}, `/agents/${agent.id}/keys`);
  const agentGrandchild = await create(agentChild.key);
  const tree = [parent, child, grandchild, agentChild, agentGrandchild];
  // Every one verified and cached at the gateway first.
  for (const k of [...tree, sibling]) expect(await status(k.key)).toBe(200);
  expect((await t.ok('DELETE', `/me/api-keys/${parent.id}`, root)).body).toEqual({ success: true });
  expect(await refusedSoon(tree.map((k) => k.key))).toEqual(tree.map(() => 401));
  // Outside the tree nothing changed.
  expect([await status(root), await status(sibling.key)]).toEqual([200, 200]);
  const rows = await sql<{ id: string; revoked: boolean }>('SELECT id, revoked_at IS NOT NULL AS revoked FROM keys.api_keys WHERE id = ANY($1)', [
    [...tree, sibling].map((k) => k.id),
  ]);
  expect(Object.fromEntries(rows.map((r) => [r.id, r.revoked]))).toEqual({
    ...Object.fromEntries(tree.map((k) => [k.id, true])),
    [sibling.id]: false,
  });
  // A revoked key makes no more keys (401), and a retried revocation still answers success.
  expect((await t.call('POST', '/me/api-keys', { key: child.key, body: { name: 'late' } })).status).toBe(401);
  expect((await t.call('DELETE', `/me/api-keys/${parent.id}`, { key: root })).status).toBe(200);
});

test('an agent key revoked through /agents/:id/keys takes its keys along', async () => {
  const root = await person();
  const agent = (await t.ok('POST', '/agents', root, { name: `agent ${++n}` })).body as { id: string };
  const agentKey = await create(root, {}, `/agents/${agent.id}/keys`);
  const made = await create(agentKey.key);
  const madeAgain = await create(made.key, {}, `/agents/${agent.id}/keys`);
  for (const k of [agentKey, made, madeAgain]) expect(await status(k.key)).toBe(200);
  await t.ok('DELETE', `/agents/${agent.id}/keys/${agentKey.id}`, root);
  expect(await refusedSoon([agentKey.key, made.key, madeAgain.key])).toEqual([401, 401, 401]);
});

test('rotation: the new key takes the old one’s place; the old one’s keys go with it; a key cannot rotate its own ancestor', async () => {
  const root = await person();
  const rootId = (await t.ok('GET', '/me', root)).body.keyId as string;
  const old = await create(root, { expiresInDays: 5 });
  const child = await create(old.key);
  expect(await status(child.key)).toBe(200);
  const rotated = (await t.ok('POST', `/me/api-keys/${old.id}/rotate`, old.key)).body;
  expect(rotated.expiresAt).toBe(old.expiresAt);
  expect(rotated.revokedKeyId).toBe(old.id);
  const details = (await t.ok('GET', `/me/api-keys/${rotated.id}`, root)).body;
  expect(details.createdByKeyId).toBe(rootId);
  expect(await refusedSoon([old.key, child.key])).toEqual([401, 401]);
  expect(await status(rotated.key)).toBe(200);
  // A key made from the rotated key cannot rotate it: that would revoke the caller and the new key.
  const below = await create(rotated.key);
  const refused = await t.call('POST', `/me/api-keys/${rotated.id}/rotate`, { key: below.key });
  expect([refused.status, refused.body.error.code]).toEqual([409, 'key_in_lineage']);
  expect(await status(rotated.key)).toBe(200);
});

test('keys made before the rule are brought under it: capped below an expiring ancestor, revoked below a revoked one', async () => {
  const root = await person();
  const expiring = await create(root, { expiresInDays: 2 });
  const revokedParent = await create(root);
  const [a, b, c] = [await create(root), await create(root), await create(root)];
  // As lineage was before: children that outlive their parents, a child of a revoked key.
  await sql(`UPDATE keys.api_keys SET created_by_key_id = $2, expires_at = NULL WHERE id = $1`, [a.id, expiring.id]);
  await sql(`UPDATE keys.api_keys SET created_by_key_id = $2, expires_at = now() + interval '100 days' WHERE id = $1`, [b.id, a.id]);
  await sql(`UPDATE keys.api_keys SET created_by_key_id = $2 WHERE id = $1`, [c.id, revokedParent.id]);
  await sql(`UPDATE keys.api_keys SET revoked_at = now() WHERE id = $1`, [revokedParent.id]);
  await sql(LINEAGE_REPAIR_SQL);
  const rows = await sql<{ id: string; expires_at: Date | null; revoked_at: Date | null }>(
    'SELECT id, expires_at, revoked_at FROM keys.api_keys WHERE id = ANY($1)',
    [[a.id, b.id, c.id]],
  );
  const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
  expect(byId[a.id]!.expires_at?.toISOString()).toBe(expiring.expiresAt);
  expect(byId[b.id]!.expires_at?.toISOString()).toBe(expiring.expiresAt);
  expect([byId[a.id]!.revoked_at, byId[b.id]!.revoked_at]).toEqual([null, null]);
  expect(byId[c.id]!.revoked_at).not.toBeNull();
});

(REAL.nats ? test : test.skip)('another gateway replica refuses the keys below a revoked key too (NATS)', async () => {
  const root = await person();
  const parent = await create(root);
  const child = await create(parent.key);
  const grandchild = await create(child.key);
  const replica: Stack = await startStack({
    ...t.env,
    SVC_SERVICE: 'gateway',
    PORT: '0',
    SVC_KEYS_ADDR: t.stack.registry.address('keys')!,
    SVC_ACCOUNTS_ADDR: t.stack.registry.address('accounts')!,
  });
  try {
    const other = (key: string) =>
      fetch(`http://127.0.0.1:${replica.port}/me`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    for (const k of [child, grandchild]) expect(await other(k.key)).toBe(200); // cached on the replica
    await t.ok('DELETE', `/me/api-keys/${parent.id}`, root);
    let last: number[] = [];
    await until(
      async () => {
        last = await Promise.all([other(child.key), other(grandchild.key)]);
        return last.every((s) => s === 401);
      },
      2000,
      { every: 20 },
    ).catch(() => {});
    expect(last).toEqual([401, 401]);
  } finally {
    await replica.stop();
  }
});
