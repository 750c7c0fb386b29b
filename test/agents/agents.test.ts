import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/** Agents as principals: CRUD, their keys, deletion revoking keys, owner changes, default agents. */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const AGENT_FIELDS = [
  'createdAt',
  'description',
  'id',
  'instructions',
  'maxSteps',
  'maxTokensPerRun',
  'model',
  'name',
  'ownerAccountId',
  'projectId',
  'tools',
  'updatedAt',
];
let seq = 0;

/** Success with an answer that matches its documented schema (see TestStack.ok). */
const ok: TestStack['ok'] = (...args) => t.ok(...args);
async function person() {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++seq}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
async function agent(key: string, body: Record<string, unknown> = {}, headers?: Record<string, string>) {
  return (await ok('POST', '/agents', key, { name: `agent ${++seq}`, ...body }, headers)).body as { id: string; ownerAccountId: string };
}
async function keyOf(ownerKey: string, agentId: string, headers?: Record<string, string>) {
  return (await ok('POST', `/agents/${agentId}/keys`, ownerKey, { name: 'k' }, headers)).body as { id: string; key: string };
}
async function waitFor(cond: () => Promise<boolean>, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('agents', () => {
  test('create, get, list, update; another tenant gets 404', async () => {
    const ada = await person();
    const bob = await person();
    const res = await t.call('POST', '/agents', {
      key: ada.key,
      body: { name: 'Researcher', description: 'Reads papers', model: 'claude-sonnet-4', instructions: 'Be brief.' },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
    expect(res.body).toMatchObject({ ownerAccountId: ada.id, name: 'Researcher', model: 'claude-sonnet-4', projectId: null });
    expect(res.body.id).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(res.body.createdAt).toMatch(ISO);
    const id = res.body.id;

    expect((await ok('GET', `/agents/${id}`, ada.key)).body).toEqual(res.body);
    const second = await agent(ada.key);
    const list = await ok('GET', '/agents?limit=1', ada.key);
    expect(list.body.agents.map((a: any) => a.id)).toEqual([second.id]);
    const rest = await ok('GET', `/agents?limit=1&cursor=${list.body.nextCursor}`, ada.key);
    expect(rest.body.agents.map((a: any) => a.id)).toEqual([id]);
    expect(rest.body.nextCursor).toBeNull();

    const patched = await ok('PATCH', `/agents/${id}`, ada.key, { name: 'Reader', description: null });
    expect(patched.body).toMatchObject({ name: 'Reader', description: null, model: 'claude-sonnet-4', instructions: 'Be brief.' });

    const cases: Array<[string, unknown?, string?]> = [
      ['GET'],
      ['PATCH', { name: 'x' }],
      ['DELETE'],
      ['GET', undefined, '/keys'],
      ['POST', { name: 'k' }, '/keys'],
    ];
    for (const [method, body, suffix] of cases) {
      const other = await t.call(method, `/agents/${id}${suffix ?? ''}`, { key: bob.key, body });
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('agent_not_found');
    }
    expect((await ok('GET', '/agents', bob.key)).body.agents).toEqual([]);

    for (const body of [
      {},
      { name: '' },
      { name: 'x', model: 'has space' },
      { name: 'x', instructions: 'x'.repeat(100_001) },
      { name: 'x', owner: 1 },
    ]) {
      const bad = await t.call('POST', '/agents', { key: ada.key, body });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual(ERROR_BODY);
    }
    expect((await t.call('PATCH', `/agents/${id}`, { key: ada.key, body: {} })).status).toBe(400);
    expect((await t.call('GET', '/agents/agt_nope', { key: ada.key })).status).toBe(400);
  });

  test("agent keys: a person manages their agents' keys; an agent key acts as the agent in its owner's account", async () => {
    const ada = await person();
    const bob = await person();
    const a = await agent(ada.key);
    const bobAgent = await agent(bob.key);
    const k = await keyOf(ada.key, a.id);
    expect(k.key).toMatch(/^svc_[0-9a-f]{64}$/);

    const me = await ok('GET', '/me', k.key);
    expect(me.body).toMatchObject({ kind: 'agent', agentId: a.id, userId: null, accountId: ada.id });
    const keys = await ok('GET', `/agents/${a.id}/keys`, ada.key);
    expect(keys.body.keys.map((x: any) => x.id)).toEqual([k.id]);
    // Keys of Bob's agent are Bob's business.
    for (const [method, path] of [
      ['POST', `/agents/${bobAgent.id}/keys`],
      ['GET', `/agents/${bobAgent.id}/keys`],
      ['DELETE', `/agents/${bobAgent.id}/keys/${k.id}`],
    ] as const) {
      const res = await t.call(method, path, { key: ada.key, body: method === 'POST' ? { name: 'x' } : undefined });
      expect([path, res.status, res.body.error.code]).toEqual([path, 404, 'agent_not_found']);
    }
    // The agent sees its account's agents, makes keys of itself only.
    expect((await ok('GET', '/agents', k.key)).body.agents.map((x: any) => x.id)).toEqual([a.id]);
    const own = await ok('POST', `/agents/${a.id}/keys`, k.key, { name: 'child' });
    expect((await ok('GET', '/me', own.body.key)).body.agentId).toBe(a.id);
    // An agent key cannot mint a person's key: at every key route, what it creates is the agent's.
    for (const base of ['/api/api-keys', '/v1/api/api-keys', '/me/api-keys', '/v1/me/api-keys']) {
      const minted = await t.call('POST', base, { key: k.key, body: { name: 'escalate?' } });
      expect(minted.status).toBe(201);
      const who = (await ok('GET', '/me', minted.body.key)).body;
      expect(who).toMatchObject({ kind: 'agent', agentId: a.id, userId: null });
    }
    // ...and it does not see the person's keys.
    const adaKeyId = (await ok('GET', '/me', ada.key)).body.keyId;
    const seen = (await ok('GET', '/api/api-keys', k.key)).body.keys.map((x: any) => x.id);
    expect(seen).not.toContain(adaKeyId);
    expect(seen).toContain(k.id);
    const sibling = await agent(ada.key);
    expect((await t.call('POST', `/agents/${sibling.id}/keys`, { key: k.key, body: { name: 'x' } })).status).toBe(404);
    // Revoking an agent key by its path, or by ?id= as at /api/api-keys; Bob's agent is not a way in.
    expect((await t.call('DELETE', `/agents/${a.id}/keys/${own.body.id}`, { key: ada.key })).status).toBe(200);
    expect((await t.call('GET', '/me', { key: own.body.key })).status).toBe(401);
    const byQuery = await ok('POST', `/agents/${a.id}/keys`, ada.key, { name: 'by query' });
    expect((await t.call('DELETE', `/v1/agents/${bobAgent.id}/keys?id=${byQuery.body.id}`, { key: ada.key })).status).toBe(404);
    expect((await ok('DELETE', `/v1/agents/${a.id}/keys?id=${byQuery.body.id}`, ada.key)).body).toEqual({ success: true });
    expect((await t.call('GET', '/me', { key: byQuery.body.key })).status).toBe(401);
  });

  test('deleting an agent revokes its keys at once', async () => {
    const ada = await person();
    const a = await agent(ada.key);
    const k1 = await keyOf(ada.key, a.id);
    const k2 = await keyOf(ada.key, a.id);
    expect((await t.call('GET', '/me', { key: k1.key })).status).toBe(200); // cached by the gateway now
    const del = await t.call('DELETE', `/agents/${a.id}`, { key: ada.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true, revokedKeys: 2 });
    for (const k of [k1, k2]) {
      const res = await t.call('GET', '/me', { key: k.key });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_api_key');
    }
    expect((await t.call('GET', `/agents/${a.id}`, { key: ada.key })).status).toBe(404);
    expect((await t.call('DELETE', `/agents/${a.id}`, { key: ada.key })).status).toBe(404);
    expect((await t.call('POST', `/agents/${a.id}/keys`, { key: ada.key, body: { name: 'late' } })).status).toBe(404);
    await waitFor(async () => {
      const trail = (await ok('GET', `/accounts/${ada.id}/audit?action=agent.deleted`, ada.key)).body.events;
      return trail.length === 1 && trail[0].data.revokedKeys === 2 && trail[0].actor.id === ada.id;
    });
  });

  test("changing an agent's owner is an authority change: a person managing both accounts; the keys go", async () => {
    const ada = await person();
    const bob = await person();
    const orgId = (await ok('POST', '/accounts', ada.key, { kind: 'organization', name: 'Move Co' })).body.id;
    const a = await agent(ada.key);
    const k = await keyOf(ada.key, a.id);

    const byAgent = await t.call('PATCH', `/agents/${a.id}`, { key: k.key, body: { ownerAccountId: orgId } });
    expect(byAgent.status).toBe(403);
    expect(byAgent.body.error.code).toBe('human_principal_required');
    const renamed = await t.call('PATCH', `/agents/${a.id}`, { key: k.key, body: { description: 'self-described' } });
    expect(renamed.status).toBe(200); // not an authority change
    const elsewhere = await t.call('PATCH', `/agents/${a.id}`, { key: ada.key, body: { ownerAccountId: bob.id } });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error.code).toBe('account_not_found');

    const moved = await ok('PATCH', `/agents/${a.id}`, ada.key, { ownerAccountId: orgId });
    expect(moved.body.ownerAccountId).toBe(orgId);
    expect((await t.call('GET', '/me', { key: k.key })).status).toBe(401);
    expect((await t.call('GET', `/agents/${a.id}`, { key: ada.key })).status).toBe(404);
    expect((await ok('GET', `/agents/${a.id}`, ada.key, undefined, { 'x-svc-account': orgId })).body.id).toBe(a.id);
    const fresh = await keyOf(ada.key, a.id, { 'x-svc-account': orgId });
    expect((await ok('GET', '/me', fresh.key)).body).toMatchObject({ kind: 'agent', agentId: a.id, accountId: orgId });

    for (const account of [ada.id, orgId]) {
      await waitFor(async () => {
        const trail = (await ok('GET', `/accounts/${account}/audit?action=agent.owner_changed`, ada.key)).body.events;
        return trail.length === 1 && trail[0].data.fromAccountId === ada.id && trail[0].data.toAccountId === orgId;
      });
    }
  });

  test('default agents: an ordered list of the account’s own agents', async () => {
    const ada = await person();
    const bob = await person();
    const [a1, a2] = [await agent(ada.key), await agent(ada.key)];
    expect((await ok('GET', '/default-agents', ada.key)).body).toEqual({ agentIds: [], agents: [] });
    const set = await ok('PUT', '/default-agents', ada.key, { agentIds: [a2.id, a1.id] });
    expect(set.body.agentIds).toEqual([a2.id, a1.id]);
    expect(set.body.agents[0]).toMatchObject({ id: a2.id, ownerAccountId: ada.id });
    expect((await ok('GET', '/default-agents', ada.key)).body.agentIds).toEqual([a2.id, a1.id]);
    const foreign = await t.call('PUT', '/default-agents', { key: bob.key, body: { agentIds: [a1.id] } });
    expect(foreign.status).toBe(404);
    expect((await t.call('PUT', '/default-agents', { key: ada.key, body: { agentIds: [a1.id, a1.id] } })).status).toBe(400);
    expect((await ok('GET', '/default-agents', bob.key)).body.agentIds).toEqual([]);
    await ok('DELETE', `/agents/${a2.id}`, ada.key);
    expect((await ok('GET', '/default-agents', ada.key)).body.agentIds).toEqual([a1.id]);
  });

  test('a project-scoped key sees and makes agents of its project only', async () => {
    const ada = await person();
    const scoped = (await ok('POST', '/api/api-keys', ada.key, { name: 'p', projectId: 'web' })).body.key;
    const inWeb = await agent(scoped);
    expect((inWeb as any).projectId).toBe('web');
    const other = await agent(ada.key, { projectId: 'api' });
    const plain = await agent(ada.key);
    expect((await ok('GET', '/agents', scoped)).body.agents.map((a: any) => a.id)).toEqual([inWeb.id]);
    expect((await ok('GET', '/agents', ada.key)).body.agents).toHaveLength(3);
    for (const id of [other.id, plain.id]) expect((await t.call('GET', `/agents/${id}`, { key: scoped })).status).toBe(404);
    expect((await t.call('POST', '/agents', { key: scoped, body: { name: 'x', projectId: 'api' } })).status).toBe(403);
    expect((await t.call('POST', `/agents/${other.id}/keys`, { key: scoped, body: { name: 'x' } })).status).toBe(404);
  });
});
