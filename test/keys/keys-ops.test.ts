import { startTestStack, type TestStack } from '../support/stack';

/** One API key at a time (docs/keys.md): details, rename, the calling key, revoked keys; an agent's keys. */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

let n = 0;
const ok: TestStack['ok'] = (...args) => t.ok(...args);
async function person() {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
const err = async (method: string, path: string, key: string, body?: unknown) => {
  const res = await t.call(method as 'GET', path, { key, body });
  return [res.status, res.body?.error?.code];
};

test('a key’s details, rename, the calling key, revoked keys; other accounts see none', async () => {
  const [ada, bob] = await Promise.all([person(), person()]);
  const made = (await ok('POST', '/me/api-keys', ada.key, { name: 'ci', expiresInDays: 30 })).body;
  const one = (await ok('GET', `/me/api-keys/${made.id}`, ada.key)).body;
  expect(one).toMatchObject({ id: made.id, name: 'ci', prefix: made.prefix, ownerKind: 'human', revokedAt: null, usageCount: 0 });
  expect(one.expiresAt).not.toBeNull();
  expect(await err('GET', `/me/api-keys/${made.id}`, bob.key)).toEqual([404, 'key_not_found']);
  expect(await err('PATCH', `/me/api-keys/${made.id}`, bob.key, { name: 'mine' })).toEqual([404, 'key_not_found']);

  const renamed = (await ok('PATCH', `/me/api-keys/${made.id}`, ada.key, { name: 'deploys' })).body;
  expect(renamed.name).toBe('deploys');
  const listed = (await ok('GET', '/me/api-keys', ada.key)).body.keys.find((k: any) => k.id === made.id);
  expect(listed.name).toBe('deploys');
  expect(await err('PATCH', `/me/api-keys/${made.id}`, ada.key, { name: '' })).toEqual([400, 'invalid_request']);

  // The new key, used, knows itself (by its new name).
  const current = (await ok('GET', '/me/api-keys/current', made.key)).body;
  expect(current).toMatchObject({ id: made.id, name: 'deploys' });
  expect((await ok('PATCH', `/me/api-keys/${made.id}`, ada.key, { name: 'deploys 2' })).body.name).toBe('deploys 2');
  expect((await ok('GET', '/me/api-keys/current', made.key)).body.name).toBe('deploys 2');

  await ok('DELETE', `/me/api-keys/${made.id}`, ada.key);
  const revoked = (await ok('GET', '/me/api-keys/revoked', ada.key)).body.keys;
  expect(revoked.map((k: any) => k.id)).toEqual([made.id]);
  expect(revoked[0].revokedAt).not.toBeNull();
  expect((await ok('GET', `/me/api-keys/${made.id}`, ada.key)).body.revokedAt).not.toBeNull();
  expect(await err('PATCH', `/me/api-keys/${made.id}`, ada.key, { name: 'again' })).toEqual([409, 'key_revoked']);
  expect((await ok('GET', '/me/api-keys/revoked', bob.key)).body.keys).toEqual([]);
  expect(await err('GET', '/me/api-keys/revoked?limit=0', ada.key)).toEqual([400, 'invalid_request']);
});

test('an agent’s key: details and rename, by a person of its account or by the agent itself', async () => {
  const [ada, bob] = await Promise.all([person(), person()]);
  const agent = (await ok('POST', '/agents', ada.key, { name: 'keyed' })).body;
  const k = (await ok('POST', `/agents/${agent.id}/keys`, ada.key, { name: 'agent key' })).body;
  const got = (await ok('GET', `/agents/${agent.id}/keys/${k.id}`, ada.key)).body;
  expect(got).toMatchObject({ id: k.id, name: 'agent key', ownerKind: 'agent', ownerId: agent.id });
  expect((await ok('GET', '/me/api-keys/current', k.key)).body).toMatchObject({ id: k.id, ownerKind: 'agent' });
  expect((await ok('PATCH', `/agents/${agent.id}/keys/${k.id}`, k.key, { name: 'renamed by itself' })).body.name).toBe('renamed by itself');
  expect((await ok('GET', `/agents/${agent.id}/keys/${k.id}`, k.key)).body.name).toBe('renamed by itself');
  expect(await err('GET', `/agents/${agent.id}/keys/${k.id}`, bob.key)).toEqual([404, 'agent_not_found']);
  const other = (await ok('POST', '/agents', ada.key, { name: 'other' })).body;
  expect(await err('GET', `/agents/${other.id}/keys/${k.id}`, ada.key)).toEqual([404, 'key_not_found']);
  expect(await err('PATCH', `/agents/${agent.id}/keys/${k.id}`, ada.key, { name: 'x'.repeat(101) })).toEqual([400, 'invalid_request']);
});

test('rotate: a new key like the old one, the old one revoked; only the owner rotates', async () => {
  const [ada, bob] = await Promise.all([person(), person()]);
  const old = (await ok('POST', '/me/api-keys', ada.key, { name: 'deploy', projectId: 'web', expiresInDays: 10 })).body;
  const rotated = await ok('POST', `/me/api-keys/${old.id}/rotate`, ada.key);
  expect(rotated.status).toBe(201);
  expect(rotated.body).toMatchObject({ name: 'deploy', projectId: 'web', revokedKeyId: old.id });
  expect(rotated.body.key).toMatch(/^svc_/);
  expect(Math.abs(Date.parse(rotated.body.expiresAt) - Date.parse(old.expiresAt))).toBeLessThan(86_400_000 + 60_000);
  expect((await t.call('GET', '/me', { key: old.key })).status).toBe(401);
  expect((await ok('GET', '/me/api-keys/current', rotated.body.key)).body.id).toBe(rotated.body.id);
  expect(await err('POST', `/me/api-keys/${old.id}/rotate`, ada.key)).toEqual([409, 'key_revoked']);
  expect(await err('POST', `/me/api-keys/${rotated.body.id}/rotate`, bob.key)).toEqual([404, 'key_not_found']);
  // A person sees the keys of the account's agents, but only the agent rotates its own.
  const agent = (await ok('POST', '/agents', ada.key, { name: 'a' })).body;
  const ak = (await ok('POST', `/agents/${agent.id}/keys`, ada.key, { name: 'ak' })).body;
  expect(await err('POST', `/me/api-keys/${ak.id}/rotate`, ada.key)).toEqual([403, 'key_owner_required']);
  const self = (await ok('POST', `/me/api-keys/${ak.id}/rotate`, ak.key)).body;
  expect((await ok('GET', `/agents/${agent.id}/keys/${self.id}`, ada.key)).body).toMatchObject({ ownerKind: 'agent', ownerId: agent.id, name: 'ak' });
});
