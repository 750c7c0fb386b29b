import { startTestStack, type TestStack } from '../support/stack';

/** Agents at work (docs/threads.md): ask, runs, usage, tool calls, tools, clone, export, search, stop, default agents one by one. */

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

describe('agents at work', () => {
  let ada: { id: string; key: string };
  let bob: { id: string; key: string };
  beforeAll(async () => {
    [ada, bob] = await Promise.all([person(), person()]);
  });

  test('ask answers in one call; runs, usage and tool calls follow the agent across threads', async () => {
    const agent = (await ok('POST', '/agents', ada.key, { name: 'Helper', description: 'answers questions' })).body;
    const asked = await ok('POST', `/agents/${agent.id}/ask`, ada.key, { message: 'what time is it', timeoutMs: 15_000 });
    expect(asked.body).toMatchObject({ status: 'completed', timedOut: false, reply: { role: 'assistant', content: 'dev: what time is it' } });
    const thread = (await ok('GET', `/threads/${asked.body.threadId}`, ada.key)).body;
    expect(thread.agentId).toBe(agent.id);
    await ok('POST', `/agents/${agent.id}/ask`, ada.key, { message: '/tool whoami {}', timeoutMs: 15_000 });

    const runs = (await ok('GET', `/agents/${agent.id}/runs`, ada.key)).body;
    expect(runs.runs).toHaveLength(2);
    expect(runs.runs[1].id).toBe(asked.body.runId);
    const page = (await ok('GET', `/agents/${agent.id}/runs?limit=1`, ada.key)).body;
    expect(page.runs).toHaveLength(1);
    expect((await ok('GET', `/agents/${agent.id}/runs?limit=1&cursor=${page.nextCursor}`, ada.key)).body.runs[0].id).toBe(asked.body.runId);
    expect((await ok('GET', `/agents/${agent.id}/runs?status=failed`, ada.key)).body.runs).toEqual([]);

    const usage = (await ok('GET', `/agents/${agent.id}/usage`, ada.key)).body;
    expect(usage).toMatchObject({ runs: 2, completed: 2, failed: 0, active: 0, threads: 2, toolCalls: 1, toolErrors: 0 });
    expect(usage.usage.inputTokens).toBeGreaterThan(0);
    const later = (await ok('GET', `/agents/${agent.id}/usage?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, ada.key))
      .body;
    expect(later.runs).toBe(0);
    expect(await err('GET', `/agents/${agent.id}/usage?since=yesterday`, ada.key)).toEqual([400, 'invalid_request']);

    const calls = (await ok('GET', `/agents/${agent.id}/tool-calls`, ada.key)).body.toolCalls;
    expect(calls.map((c: any) => [c.name, c.isError])).toEqual([['whoami', false]]);
    expect((await ok('GET', `/agents/${agent.id}/tool-calls?name=run_code`, ada.key)).body.toolCalls).toEqual([]);

    for (const path of ['runs', 'usage', 'tool-calls', 'tools', 'export']) {
      expect(await err('GET', `/agents/${agent.id}/${path}`, bob.key)).toEqual([404, 'agent_not_found']);
    }
    expect(await err('POST', `/agents/${agent.id}/ask`, bob.key, { message: 'hi' })).toEqual([404, 'agent_not_found']);
    expect(await err('POST', `/agents/${agent.id}/ask`, ada.key, { message: '' })).toEqual([400, 'invalid_request']);
  });

  test('tools resolve the agent’s patterns against the catalogue', async () => {
    const plain = (await ok('POST', '/agents', ada.key, { name: 'Plain' })).body;
    const dflt = (await ok('GET', `/agents/${plain.id}/tools`, ada.key)).body;
    expect(dflt.usesDefault).toBe(true);
    expect(dflt.tools.map((x: any) => x.name)).toContain('whoami');
    const narrow = (await ok('POST', '/agents', ada.key, { name: 'Narrow', tools: ['threads_messages_*', 'whoami'] })).body;
    const tools = (await ok('GET', `/agents/${narrow.id}/tools`, ada.key)).body;
    expect(tools.usesDefault).toBe(false);
    const names: string[] = tools.tools.map((x: any) => x.name);
    expect(names).toEqual(expect.arrayContaining(['whoami', 'threads_messages_list', 'threads_messages_get']));
    expect(names.every((x) => x === 'whoami' || x.startsWith('threads_messages_'))).toBe(true);
    expect(names).not.toContain('threads_get');
  });

  test('hostile tool patterns resolve at once (no backtracking), and another account is served meanwhile', async () => {
    // As backtracking regular expressions, the first took 12.6 s against one tool name, the others far longer.
    const hostile = ['*'.repeat(12) + 'z', '*'.repeat(99) + 'z', `${'*_'.repeat(49)}z`, `${'*s'.repeat(49)}x`];
    const agent = (await ok('POST', '/agents', ada.key, { name: 'Hostile', tools: [...hostile, 'who*i'] })).body;
    const [tools, me, list] = await Promise.all([
      ok('GET', `/agents/${agent.id}/tools`, ada.key),
      t.call('GET', '/me', { key: bob.key }),
      t.call('GET', '/agents', { key: bob.key }),
    ]);
    expect(tools.body.tools.map((x: any) => x.name)).toEqual(['whoami']);
    expect([me.status, list.status]).toEqual([200, 200]);
  });

  test('clone and export copy the definition; search finds agents by text', async () => {
    const src = (
      await ok('POST', '/agents', ada.key, { name: 'Analyst', instructions: 'Summarise quarterly figures', tools: ['whoami'], maxSteps: 7 })
    ).body;
    const cloned = await ok('POST', `/agents/${src.id}/clone`, ada.key, {});
    expect(cloned.status).toBe(201);
    expect(cloned.body.runtimeCopied).toBe(true);
    expect(cloned.body.agent).toMatchObject({ name: 'Analyst (copy)', instructions: 'Summarise quarterly figures', tools: ['whoami'], maxSteps: 7 });
    expect(cloned.body.agent.id).not.toBe(src.id);
    const named = (await ok('POST', `/agents/${src.id}/clone`, ada.key, { name: 'Second analyst' })).body;
    expect(named.agent.name).toBe('Second analyst');
    expect(await err('POST', `/agents/${src.id}/clone`, bob.key, {})).toEqual([404, 'agent_not_found']);
    expect(await err('POST', `/agents/${src.id}/clone`, ada.key, { name: '' })).toEqual([400, 'invalid_request']);

    const exported = (await ok('GET', `/agents/${src.id}/export`, ada.key)).body.definition;
    expect(exported).toEqual({ name: 'Analyst', instructions: 'Summarise quarterly figures', tools: ['whoami'], maxSteps: 7 });
    // The definition creates the same agent in another account.
    const imported = (await ok('POST', '/agents', bob.key, exported)).body;
    expect(imported).toMatchObject({ ownerAccountId: bob.id, ...exported });

    const found = (await ok('GET', '/agents/search?q=QUARTERLY', ada.key)).body.agents.map((a: any) => a.name);
    expect(found.sort()).toEqual(['Analyst', 'Analyst (copy)', 'Second analyst']);
    expect((await ok('GET', '/agents/search?q=analyst&limit=1', ada.key)).body.agents).toHaveLength(1);
    expect((await ok('GET', '/agents/search?q=quarterly', bob.key)).body.agents.map((a: any) => a.id)).toEqual([imported.id]);
    expect(await err('GET', '/agents/search', ada.key)).toEqual([400, 'invalid_request']);
  });

  test('cancel-runs stops every run of the agent', async () => {
    const agent = (await ok('POST', '/agents', ada.key, { name: 'Busy' })).body;
    const slow = '/tool run_code {"code":"const end = Date.now() + 1500; while (Date.now() < end) {} 1"}';
    const a = (await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow })).body;
    const b = (await ok('POST', '/threads', ada.key, { agentId: agent.id, message: slow })).body;
    const res = await ok('POST', `/agents/${agent.id}/cancel-runs`, ada.key);
    expect(res.status).toBe(202);
    expect(res.body.runIds.sort()).toEqual([a.runId, b.runId].sort());
    for (const th of [a, b]) await ok('POST', `/threads/${th.id}/wait`, ada.key, { timeoutMs: 15_000 });
    expect((await ok('GET', `/agents/${agent.id}/runs?status=cancelled`, ada.key)).body.runs).toHaveLength(2);
    expect((await ok('POST', `/agents/${agent.id}/cancel-runs`, ada.key)).body.runIds).toEqual([]);
    expect(await err('POST', `/agents/${agent.id}/cancel-runs`, bob.key)).toEqual([404, 'agent_not_found']);
  });

  test('default agents one by one', async () => {
    const x = (await ok('POST', '/agents', ada.key, { name: 'X' })).body;
    const y = (await ok('POST', '/agents', ada.key, { name: 'Y' })).body;
    await ok('PUT', '/default-agents', ada.key, { agentIds: [] });
    expect((await ok('PUT', `/default-agents/${x.id}`, ada.key)).body.agentIds).toEqual([x.id]);
    expect((await ok('PUT', `/default-agents/${y.id}`, ada.key)).body.agentIds).toEqual([x.id, y.id]);
    expect((await ok('PUT', `/default-agents/${x.id}`, ada.key)).body.agentIds).toEqual([x.id, y.id]);
    expect((await ok('DELETE', `/default-agents/${x.id}`, ada.key)).body.agentIds).toEqual([y.id]);
    expect((await ok('DELETE', `/default-agents/${x.id}`, ada.key)).body.agentIds).toEqual([y.id]);
    expect(await err('PUT', `/default-agents/${x.id}`, bob.key)).toEqual([404, 'agent_not_found']);
    expect(await err('PUT', '/default-agents/nope', ada.key)).toEqual([400, 'invalid_request']);
  });

  test('a deleted agent is listed and restored, its keys still revoked; the audit trail records it', async () => {
    const agent = (await ok('POST', '/agents', ada.key, { name: 'Phoenix', instructions: 'rise' })).body;
    const key = (await ok('POST', `/agents/${agent.id}/keys`, ada.key, { name: 'k' })).body.key;
    const th = (await ok('POST', '/threads', ada.key, { agentId: agent.id, title: 'kept' })).body;
    await ok('DELETE', `/agents/${agent.id}`, ada.key);
    expect(await err('GET', `/agents/${agent.id}`, ada.key)).toEqual([404, 'agent_not_found']);
    const deleted = (await ok('GET', '/agents/deleted', ada.key)).body.agents.map((a: any) => a.id);
    expect(deleted).toContain(agent.id);
    expect((await ok('GET', '/agents/deleted', bob.key)).body.agents).toEqual([]);
    expect(await err('POST', `/agents/${agent.id}/restore`, bob.key)).toEqual([404, 'agent_not_found']);
    const restored = (await ok('POST', `/agents/${agent.id}/restore`, ada.key)).body;
    expect(restored).toMatchObject({ id: agent.id, name: 'Phoenix', instructions: 'rise' });
    expect((await ok('GET', `/agents/${agent.id}`, ada.key)).body.id).toBe(agent.id);
    expect((await ok('POST', `/agents/${agent.id}/restore`, ada.key)).body.id).toBe(agent.id);
    expect((await ok('GET', '/agents/deleted', ada.key)).body.agents.map((a: any) => a.id)).not.toContain(agent.id);
    expect((await t.call('GET', '/me', { key })).status).toBe(401);
    expect((await ok('POST', `/threads/${th.id}/ask`, ada.key, { content: 'back?', timeoutMs: 15_000 })).body.reply.content).toBe('dev: back?');
    const until = Date.now() + 10_000;
    let actions: string[] = [];
    while (Date.now() < until && !actions.includes('agent.restored')) {
      actions = (await ok('GET', `/accounts/${ada.id}/audit`, ada.key)).body.events.map((e: any) => e.action);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(actions).toContain('agent.restored');
    // Grants to it work again: the accounts service's record of the agent is live.
    const grant = await t.call('POST', `/accounts/${ada.id}/standing-grants`, { key: ada.key, body: { granteeId: agent.id, verbs: ['drive.read'] } });
    expect(grant.status).toBe(201);
    expect(await err('POST', '/agents/agt_nope/restore', ada.key)).toEqual([400, 'invalid_request']);
  });
});
