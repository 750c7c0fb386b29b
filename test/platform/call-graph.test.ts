import { agentsDefinition } from '@svc/clients';
import { createRpcClient, DomainError, formerPaths, newId, type Principal, PrincipalSigner, startGrpcServer } from '@svc/kit';
import { accounts, keys } from '@svc/proto';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * The service call graph is a DAG (agents -> accounts -> keys, agents -> keys): an agent's keys
 * go through the agents service, which calls keys with its own system token and the caller spelled
 * out; accounts reads agents from the records the agents service writes there (docs/accounts.md,
 * "Agents in accounts"), never calling agents.
 */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 60_000);
afterAll(() => t?.stop());

let seq = 0;
const ok: TestStack['ok'] = (...args) => t.ok(...args);
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );
const clients = () => ({
  keys: t.stack.registry.client('keys', keys.KeysServiceService, 'svc.keys.v1.KeysService'),
  accounts: t.stack.registry.client('accounts', accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService'),
  agents: t.stack.registry.client('agents', agentsDefinition, 'svc.agents.v1.AgentsService'),
});
const token = async (p: Principal) => ({ principalToken: (await new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!).sign(p)).token });
const system = () => token({ kind: 'system', accountId: 'system', channel: 'internal' });

async function person() {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++seq}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}
async function agentOf(key: string, name = `agent ${++seq}`) {
  return (await ok('POST', '/agents', key, { name })).body as { id: string; ownerAccountId: string };
}
const chainName = async (agentKey: string) => (await ok('GET', '/accounts/me/chain', agentKey)).body.chain[0].name as string;
async function waitFor(cond: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("an agent's keys: through the agents service", () => {
  test('the keys service manages an agent’s keys for platform services only, and takes no agent id from a person', async () => {
    const ada = await person();
    const a = await agentOf(ada.key);
    // The calling key is a real one: a key is made from a key that exists and is active (its lineage, docs/keys.md).
    const keyId = (await ok('GET', '/me', ada.key)).body.keyId as string;
    const human: Principal = { kind: 'human', userId: ada.id, accountId: ada.id, keyId, channel: 'api' };
    const c = clients();
    const caller = { accountId: ada.id, agentId: a.id };
    for (const call of [
      async () => c.keys.createAgentKey({ caller, name: 'x' }, await token(human)),
      async () => c.keys.listAgentKeys({ caller, limit: 10 }, await token(human)),
      async () => c.keys.revokeAgentKey({ caller, id: newId('key') }, await token(human)),
    ]) {
      expect(await codeOf(call())).toBe('internal_only');
    }
    // A person naming an agent to the keys service directly is refused: only the agents service knows whose it is.
    expect(await codeOf(c.keys.createKey({ name: 'x', agentId: a.id }, await token(human)))).toBe('invalid_request');
    expect(await codeOf(c.keys.listKeys({ agentId: a.id, limit: 10 }, await token(human)))).toBe('invalid_request');
    // The agents service: keys of an agent of the caller's account; another agent's key cannot mint for it.
    const made = await c.agents.createAgentKey({ agentId: a.id, name: 'direct' }, await token(human));
    expect(made.key).toMatchObject({ accountId: ada.id, ownerKind: 'agent', ownerId: a.id, createdByKeyId: keyId });
    const other = await agentOf(ada.key);
    const asAgent: Principal = { kind: 'agent', agentId: a.id, accountId: ada.id, keyId: made.key!.id, channel: 'api' };
    expect(await codeOf(c.agents.createAgentKey({ agentId: other.id, name: 'x' }, await token(asAgent)))).toBe('agent_not_found');
    expect((await c.agents.createAgentKey({ agentId: a.id, name: 'self' }, await token(asAgent))).key).toMatchObject({
      ownerId: a.id,
      accountId: ada.id,
    });
    const host: Principal = { kind: 'host', hostId: 'host_x', accountId: ada.id, channel: 'api' } as Principal;
    expect(await codeOf(c.agents.listAgentKeys({ agentId: a.id, limit: 10 }, await token(host)))).toBe('forbidden');
  });

  test('a project-scoped key makes agent keys inside its project, and sees only those', async () => {
    const ada = await person();
    const scoped = (await ok('POST', '/api/api-keys', ada.key, { name: 'p', projectId: 'web' })).body.key as string;
    const a = (await ok('POST', '/agents', scoped, { name: 'web agent' })).body;
    const inWeb = await ok('POST', `/agents/${a.id}/keys`, scoped, { name: 'k' });
    expect(inWeb.body.projectId).toBe('web');
    expect((await t.call('POST', `/agents/${a.id}/keys`, { key: scoped, body: { name: 'k', projectId: 'api' } })).status).toBe(403);
    const plain = await ok('POST', `/agents/${a.id}/keys`, ada.key, { name: 'account-wide' });
    expect((await ok('GET', `/agents/${a.id}/keys`, scoped)).body.keys.map((k: any) => k.id)).toEqual([inWeb.body.id]);
    expect((await t.call('DELETE', `/agents/${a.id}/keys/${plain.body.id}`, { key: scoped })).status).toBe(404);
    expect((await ok('GET', `/agents/${a.id}/keys`, ada.key)).body.keys).toHaveLength(2);
  });
});

describe('agents in accounts: records the agents service writes', () => {
  test('created, renamed, deleted: the chain and grants follow at once', async () => {
    const ada = await person();
    const a = await agentOf(ada.key, 'Scout');
    const key = (await ok('POST', `/agents/${a.id}/keys`, ada.key, { name: 'k' })).body.key as string;
    expect(await chainName(key)).toBe('Scout');
    await ok('PATCH', `/agents/${a.id}`, ada.key, { name: 'Ranger' });
    expect(await chainName(key)).toBe('Ranger');
    const url = `/accounts/${ada.id}/standing-grants`;
    await ok('POST', url, ada.key, { granteeId: a.id, verbs: ['drive.read'] });
    await ok('DELETE', `/agents/${a.id}`, ada.key);
    const late = await t.call('POST', url, { key: ada.key, body: { granteeId: a.id, verbs: ['drive.read'] } });
    expect([late.status, late.body.error.code]).toEqual([404, 'grantee_not_found']);
  });

  test('SyncAgents: platform services only; an older version changes nothing; an event repairs a record', async () => {
    const ada = await person();
    const a = await agentOf(ada.key, 'Current');
    const key = (await ok('POST', `/agents/${a.id}/keys`, ada.key, { name: 'k' })).body.key as string;
    await ok('PATCH', `/agents/${a.id}`, ada.key, { description: 'v2' });
    const c = clients();
    // The calling key is a real one: a key is made from a key that exists and is active (its lineage, docs/keys.md).
    const keyId = (await ok('GET', '/me', ada.key)).body.keyId as string;
    const human: Principal = { kind: 'human', userId: ada.id, accountId: ada.id, keyId, channel: 'api' };
    const stale = { id: a.id, ownerAccountId: ada.id, name: 'Stale', version: 1, deleted: false };
    expect(await codeOf(c.accounts.syncAgents({ agents: [stale] }, await token(human)))).toBe('internal_only');
    expect(await codeOf(c.accounts.forgetAgent({ id: a.id }, await token(human)))).toBe('internal_only');
    expect((await c.accounts.syncAgents({ agents: [stale] }, await system())).applied).toBe(0);
    expect(await chainName(key)).toBe('Current');
    expect(await codeOf(c.accounts.syncAgents({ agents: [{ ...stale, id: 'agt_nope' }] }, await system()))).toBe('invalid_request');

    // A change whose record did not reach accounts: its event writes it.
    const bus = await t.stack.backends.bus();
    await bus.publish('agents.agent.updated', {
      id: newId('evt'),
      type: 'agents.agent.updated',
      occurredAt: new Date().toISOString(),
      accountId: ada.id,
      data: { agent: { id: a.id, name: 'From the event', ownerAccountId: ada.id, projectId: null, model: null, version: 50 }, changed: ['name'] },
    });
    await waitFor(async () => (await chainName(key)) === 'From the event');
  });
});

describe('the agents service split into one gRPC service per area', () => {
  test('each method is on its area service, and a caller of the release before the split still reaches it under AgentsService', async () => {
    const paths = Object.values(agentsDefinition).map((m) => m.path);
    expect(paths).toEqual(expect.arrayContaining(['/svc.agents.v1.ThreadsService/CreateThread', '/svc.agents.v1.MemoryService/SetMemory']));
    expect(new Set(paths.map((p) => p.split('/')[1]))).toEqual(
      new Set(['Agents', 'Threads', 'Approvals', 'Memory', 'Tasks', 'Schedules'].map((s) => `svc.agents.v1.${s}Service`)),
    );
    const ada = await person();
    const keyId = (await ok('GET', '/me', ada.key)).body.keyId as string;
    const human: Principal = { kind: 'human', userId: ada.id, accountId: ada.id, keyId, channel: 'api' };
    // Every method of the release before, on its old path: over HTTP/2 (the old path is not offered in process).
    const former = Object.fromEntries(
      Object.entries(formerPaths(agentsDefinition, 'svc.agents.v1.AgentsService')).map(([name, m]) => [name, { ...m, originalName: name }]),
    ) as unknown as typeof agentsDefinition;
    expect(Object.keys(former)).toContain('setMemory');
    expect(Object.keys(former)).not.toContain('createAgent'); // still AgentsService's own
    const old = createRpcClient(former, 'svc.agents.v1.AgentsService', t.stack.registry.address('agents')!, { deadlineMs: 5000 });
    try {
      const set = await old.setMemory({ namespace: 'split', key: 'k', valueJson: '{"v":1}' }, await token(human));
      expect(set.entry).toMatchObject({ namespace: 'split', key: 'k', version: 1 });
      const now = await clients().agents.getMemory({ namespace: 'split', key: 'k' }, await token(human));
      expect(JSON.parse(now.entry!.valueJson)).toEqual({ v: 1 });
      const thread = await old.createThread({ agentId: (await agentOf(ada.key)).id }, await token(human));
      expect((await old.listThreads({ limit: 10 }, await token(human))).threads.map((x) => x.id)).toContain(thread.thread!.id);
      expect(await codeOf(old.getMemory({ namespace: 'split', key: 'none' }, await token(human)))).toBe('memory_not_found');
    } finally {
      old.close();
    }
  });

  test('a caller of this release reaches a replica of the release before under AgentsService when the area service is unknown there', async () => {
    // A server of the release before: every method under AgentsService only (a stand-in answers GetMemory).
    const answered: string[] = [];
    const old = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      serviceName: 'svc.agents.v1.AgentsService',
      services: [
        {
          definition: formerPaths({ getMemory: agentsDefinition.getMemory }, 'svc.agents.v1.AgentsService'),
          implementation: {
            getMemory: (call: { request: { key: string } }, done: (err: null, res: unknown) => void) => {
              answered.push(call.request.key);
              done(null, { entry: { namespace: 'n', key: call.request.key, valueJson: '1', version: 1 } });
            },
          },
        },
      ],
    });
    const client = createRpcClient(agentsDefinition, 'svc.agents.v1.AgentsService', old.address, { deadlineMs: 5000 });
    try {
      const res = await client.getMemory({ namespace: 'n', key: 'k' }, { principalToken: 'x' });
      expect(res.entry?.key).toBe('k');
      expect(answered).toEqual(['k']);
      // A method the old server does not have at all stays unknown (UNIMPLEMENTED, once per path).
      expect(await codeOf(client.setMemory({ namespace: 'n', key: 'k', valueJson: '1' }, { principalToken: 'x' }))).not.toBe('ok');
    } finally {
      client.close();
      await old.shutdown(0);
    }
  });
});
