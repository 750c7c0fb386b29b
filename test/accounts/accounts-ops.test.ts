import { startTestStack, type TestStack } from '../support/stack';

/** One thing at a time (docs/accounts.md): permissions, a member, an audit event, a host and its rename. */

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

test('permissions: a person owning the account, and its agent', async () => {
  const ada = await person();
  const mine = (await ok('GET', '/me/permissions', ada.key)).body;
  expect(mine).toMatchObject({ kind: 'human', accountId: ada.id, channel: 'api', standing: 'owner', canChangeAuthority: true, canManage: true });
  expect(mine.heldGrants).toEqual([]);
  const agent = (await ok('POST', '/agents', ada.key, { name: 'perm' })).body;
  const agentKey = (await ok('POST', `/agents/${agent.id}/keys`, ada.key, { name: 'k' })).body.key;
  const its = (await ok('GET', '/me/permissions', agentKey)).body;
  expect(its).toMatchObject({ kind: 'agent', standing: 'agent', canChangeAuthority: false, canManage: false });
  const scoped = (await ok('POST', '/me/api-keys', ada.key, { name: 'scoped', projectId: 'p1' })).body.key;
  expect((await ok('GET', '/me/permissions', scoped)).body).toMatchObject({ projectId: 'p1', canChangeAuthority: false });
});

test('one member, one audit event; another account sees neither', async () => {
  const [ada, bob, cy] = await Promise.all([person(), person(), person()]);
  const org = (await ok('POST', '/accounts', ada.key, { kind: 'organization', name: 'Ada & co' })).body;
  await ok('POST', `/accounts/${org.id}/members`, ada.key, { accountId: cy.id, role: 'member' });
  const m = (await ok('GET', `/accounts/${org.id}/members/${cy.id}`, ada.key)).body;
  expect(m).toMatchObject({ accountId: cy.id, role: 'member' });
  expect((await ok('GET', `/accounts/${org.id}/members/${ada.id}`, ada.key)).body.role).toBe('owner');
  expect(await err('GET', `/accounts/${org.id}/members/${bob.id}`, ada.key)).toEqual([404, 'member_not_found']);
  expect(await err('GET', `/accounts/${org.id}/members/${cy.id}`, bob.key)).toEqual([404, 'account_not_found']);
  expect(await err('GET', `/accounts/${org.id}/members/nope`, ada.key)).toEqual([400, 'invalid_request']);
  // A person's own account: its one member is that person.
  expect((await ok('GET', `/accounts/${ada.id}/members/${ada.id}`, ada.key)).body.role).toBe('owner');

  const events = (await ok('GET', `/accounts/${org.id}/audit`, ada.key)).body.events;
  const added = events.find((e: any) => e.action === 'member.added');
  const one = (await ok('GET', `/accounts/${org.id}/audit/${added.id}`, ada.key)).body;
  expect(one).toEqual(added);
  expect(await err('GET', `/accounts/${org.id}/audit/${added.id}`, bob.key)).toEqual([404, 'account_not_found']);
  expect(await err('GET', `/accounts/${org.id}/audit/${added.id}`, cy.key)).toEqual([403, 'insufficient_role']);
  expect(await err('GET', `/accounts/${ada.id}/audit/${added.id}`, ada.key)).toEqual([404, 'audit_event_not_found']);
});

test('a host: details and rename (owners and admins); another account sees none', async () => {
  const [ada, bob] = await Promise.all([person(), person()]);
  const host = (await ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'laptop' })).body.host;
  const got = (await ok('GET', `/hosts/${host.id}`, ada.key)).body;
  expect(got).toMatchObject({ id: host.id, accountId: ada.id, name: 'laptop', lastSeenAt: null });
  const renamed = (await ok('PATCH', `/hosts/${host.id}`, ada.key, { name: 'workstation' })).body;
  expect(renamed.name).toBe('workstation');
  expect((await ok('GET', `/accounts/${ada.id}/hosts`, ada.key)).body.hosts[0].name).toBe('workstation');
  const audit = (await ok('GET', `/accounts/${ada.id}/audit?action=host.renamed`, ada.key)).body.events;
  expect(audit[0].data).toMatchObject({ hostId: host.id, name: 'workstation', previousName: 'laptop' });
  expect(await err('GET', `/hosts/${host.id}`, bob.key)).toEqual([404, 'host_not_found']);
  expect(await err('PATCH', `/hosts/${host.id}`, bob.key, { name: 'mine' })).toEqual([404, 'host_not_found']);
  expect(await err('PATCH', `/hosts/${host.id}`, ada.key, { name: '' })).toEqual([400, 'invalid_request']);
  const agent = (await ok('POST', '/agents', ada.key, { name: 'a' })).body;
  const agentKey = (await ok('POST', `/agents/${agent.id}/keys`, ada.key, { name: 'k' })).body.key;
  expect((await ok('GET', `/hosts/${host.id}`, agentKey)).body.id).toBe(host.id);
  expect(await err('PATCH', `/hosts/${host.id}`, agentKey, { name: 'x' })).toEqual([403, 'insufficient_role']);
  await ok('DELETE', `/hosts/${host.id}`, ada.key);
  expect(await err('GET', `/hosts/${host.id}`, ada.key)).toEqual([404, 'host_not_found']);
});
