import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { models, type models_infer } from '@svc/proto';

import { fakeOpenAI, type FakeProvider } from '../support/model-fakes';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Choosing a model (one record, a family, cost estimates, token counts, comparison,
 * recommendation), inference usage records and their summary, providers' status, and the credit
 * ledger's views (entries, summary, forecast). Calls go through Infer to the OpenAI fake.
 */

let t: TestStack;
let openai: FakeProvider;
let signer: PrincipalSigner;
let seq = 0;

beforeAll(async () => {
  openai = await fakeOpenAI();
  t = await startTestStack({ SVC_MODELS_ALLOWED_HOSTS: '127.0.0.1', SVC_MODELS_OPENAI_KEY: 'sk-platform', SVC_MODELS_OPENAI_URL: openai.baseUrl });
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await openai?.close();
});

async function person() {
  const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `user ${++seq}` })).body;
  return { id: body.account.id as string, key: body.key as string };
}
const client = () => t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
const msg = (content: string): models_infer.ChatMessage => ({ role: 'user', content, toolCalls: [], toolCallId: '', name: '' });
async function infer(accountId: string, model: string, chargeKey: string): Promise<void> {
  const p: Principal = { kind: 'agent', agentId: 'agt_runner', accountId, channel: 'internal' };
  const opts = { principalToken: (await signer.sign(p)).token };
  for await (const e of client().infer({ model, messages: [msg('hello there')], tools: [], chargeKey }, opts)) void e;
}
const GPT4O = encodeURIComponent('openai/gpt-4o');

test('one model, one family', async () => {
  const a = await person();
  const m = (await t.ok('GET', `/models/${GPT4O}`, a.key)).body;
  expect(m).toMatchObject({ id: 'openai/gpt-4o', provider: 'openai', available: true });
  const old = (await t.ok('GET', `/models/${encodeURIComponent('openai/gpt-4-turbo')}`, a.key)).body;
  expect(old).toMatchObject({ deprecated: true, replacedBy: expect.any(String) });
  const none = await t.call('GET', `/models/${encodeURIComponent('openai/nope')}`, { key: a.key });
  expect([none.status, none.body.error.code]).toEqual([404, 'model_not_found']);
  expect((await t.call('GET', '/models/NOT%20AN%20ID', { key: a.key })).status).toBe(400);
  // The static paths are not taken for ids.
  expect((await t.ok('GET', '/models/catalog', a.key)).body.models.length).toBeGreaterThan(5);
  const fam = (await t.ok('GET', '/models/families/gpt-4o', a.key)).body;
  expect(fam.family.members).toEqual(fam.models.map((x: any) => x.id));
  expect(fam.models[0].pricing).toBeDefined();
  expect((await t.call('GET', '/models/families/nope', { key: a.key })).body.error.code).toBe('family_not_found');
});

test('cost estimates and token counts', async () => {
  const a = await person();
  // gpt-4o: $2.5 in, $10 out per million.
  const e = (await t.ok('POST', '/models/cost-estimate', a.key, { model: 'openai/gpt-4o', inputTokens: 1000, outputTokens: 500, calls: 3 })).body;
  expect(e).toMatchObject({
    inputCost: '0.0025',
    outputCost: '0.005',
    costPerCall: '0.0075',
    total: '0.0225',
    calls: 3,
    paidWithCredits: true,
    fits: true,
  });
  const free = (await t.ok('POST', '/models/cost-estimate', a.key, { model: 'svc/dev', inputTokens: 10 })).body;
  expect(free).toMatchObject({ total: '0', paidWithCredits: false });
  const big = (await t.ok('POST', '/models/cost-estimate', a.key, { model: 'openai/gpt-4o', inputTokens: 200000 })).body;
  expect(big.fits).toBe(false);
  expect(big.warnings[0]).toMatch(/context window/);
  expect((await t.call('POST', '/models/cost-estimate', { key: a.key, body: { model: 'openai/gpt-4o', inputTokens: -1 } })).status).toBe(400);
  expect((await t.call('POST', '/models/cost-estimate', { key: a.key, body: { model: 'openai/nope', inputTokens: 1 } })).status).toBe(404);

  const c = (await t.ok('POST', '/models/tokens/count', a.key, { text: 'abcdefghi' })).body;
  expect(c).toMatchObject({ tokens: 3, characters: 9 });
  expect(c.method).toMatch(/estimate/);
  const fit = (await t.ok('POST', '/models/tokens/count', a.key, { text: 'x'.repeat(400), model: 'openai/gpt-4o' })).body;
  expect(fit).toMatchObject({ tokens: 100, contextWindow: 128000, remaining: 127900, fits: true });
  expect((await t.call('POST', '/models/tokens/count', { key: a.key, body: {} })).status).toBe(400);

  const cut = (await t.ok('POST', '/models/tokens/truncate', a.key, { text: 'abcdefghijkl', maxTokens: 2 })).body;
  expect(cut).toMatchObject({ text: 'abcdefgh', tokens: 2, originalTokens: 3, truncated: true, maxTokens: 2 });
  const tail = (await t.ok('POST', '/models/tokens/truncate', a.key, { text: 'abcdefghijkl', maxTokens: 2, keep: 'end' })).body;
  expect(tail.text).toBe('efghijkl');
  const whole = (await t.ok('POST', '/models/tokens/truncate', a.key, { text: 'short', maxTokens: 10 })).body;
  expect(whole).toMatchObject({ text: 'short', truncated: false });
  // A model's context window less the output reserved: gpt-4o has 128000.
  const window = (
    await t.ok('POST', '/models/tokens/truncate', a.key, { text: 'x'.repeat(600000), model: 'openai/gpt-4o', reserveOutputTokens: 8000 })
  ).body;
  expect(window).toMatchObject({ tokens: 120000, originalTokens: 150000, truncated: true, maxTokens: 120000 });
  expect((await t.call('POST', '/models/tokens/truncate', { key: a.key, body: { text: 'abc' } })).status).toBe(400);
  expect((await t.call('POST', '/models/tokens/truncate', { key: a.key, body: { text: 'abc', maxTokens: 1, keep: 'middle' } })).status).toBe(400);
});

test('comparison and recommendation', async () => {
  const a = await person();
  const cmp = (await t.ok('GET', '/models/compare?ids=openai/gpt-4o,openai/gpt-4o-mini&inputTokens=1000000&outputTokens=0', a.key)).body;
  expect(cmp.models.map((m: any) => [m.model.id, m.costPerCall, m.costRank])).toEqual([
    ['openai/gpt-4o', '2.5', 2],
    ['openai/gpt-4o-mini', '0.15', 1],
  ]);
  expect((await t.call('GET', '/models/compare?ids=openai/gpt-4o', { key: a.key })).status).toBe(400);
  expect((await t.call('GET', '/models/compare?ids=openai/gpt-4o,openai/nope', { key: a.key })).status).toBe(404);

  const rec = (await t.ok('POST', '/models/recommend', a.key, { useCase: 'vision', tools: true, availableOnly: true })).body;
  expect(rec.models.length).toBeGreaterThan(0);
  for (const r of rec.models) {
    expect(r.model.useCases).toContain('vision');
    expect(r.model.capabilities.tools).toBe(true);
    expect(r.model.available).toBe(true);
  }
  const costs = rec.models.map((r: any) => Number(r.costPerCall));
  expect(costs).toEqual([...costs].sort((x, y) => x - y));
  const cheap = (await t.ok('POST', '/models/recommend', a.key, { useCase: 'chat', maxCostPerCall: '0.001', limit: 20 })).body;
  expect(cheap.models.every((r: any) => Number(r.costPerCall) <= 0.001)).toBe(true);
  expect(cheap.excluded.some((x: string) => x.startsWith('anthropic/claude-opus-4'))).toBe(true);
  expect((await t.call('POST', '/models/recommend', { key: a.key, body: { useCase: 'poetry' } })).status).toBe(400);
});

test('usage records, summary, providers and credit views follow the calls', async () => {
  const a = await person();
  const b = await person();
  await t.ok('POST', '/credits/grants', t.bootstrapKey, { accountId: a.id, amount: '1' });
  await infer(a.id, 'openai/gpt-4o-mini', 'run_u:1');
  await infer(a.id, 'svc/dev', 'run_u:2');
  const list = (await t.ok('GET', '/models/usage', a.key)).body;
  expect(list.records.map((r: any) => [r.model, r.charged, r.ownKey])).toEqual([
    ['svc/dev', false, false],
    ['openai/gpt-4o-mini', true, false],
  ]);
  const mini = list.records[1];
  expect(mini).toMatchObject({
    provider: 'openai',
    inputTokens: 11,
    outputTokens: 7,
    cost: '0.00000585',
    chargeKey: 'run_u:1',
    actor: { kind: 'agent', id: 'agt_runner' },
  });
  expect((await t.ok('GET', `/models/usage/${mini.id}`, a.key)).body).toEqual(mini);
  expect((await t.call('GET', `/models/usage/${mini.id}`, { key: b.key })).status).toBe(404);
  expect((await t.ok('GET', '/models/usage', b.key)).body.records).toEqual([]);
  const page = (await t.ok('GET', '/models/usage?limit=1', a.key)).body;
  expect((await t.ok('GET', `/models/usage?limit=1&cursor=${page.nextCursor}`, a.key)).body.records[0].id).toBe(mini.id);
  expect((await t.ok('GET', `/models/usage?model=${encodeURIComponent('svc/dev')}`, a.key)).body.records).toHaveLength(1);
  expect((await t.call('GET', '/models/usage?cursor=bad', { key: a.key })).status).toBe(400);

  const sum = (await t.ok('GET', '/models/usage/summary?groupBy=model', a.key)).body;
  expect(sum.groups.map((g: any) => [g.key, g.calls, g.charged])).toEqual([
    ['openai/gpt-4o-mini', 1, '0.00000585'],
    ['svc/dev', 1, '0'],
  ]);
  expect(sum.totals).toMatchObject({ calls: 2, cost: '0.00000585' });
  expect((await t.ok('GET', '/models/usage/summary?groupBy=agent', a.key)).body.groups[0].key).toBe('agent:agt_runner');
  expect((await t.call('GET', '/models/usage/summary?groupBy=colour', { key: a.key })).status).toBe(400);

  // A provider failure is the provider's last error for the account.
  openai.next({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
  await expect(infer(a.id, 'openai/gpt-4o-mini', 'run_u:3')).rejects.toBeInstanceOf(DomainError);
  const providers = (await t.ok('GET', '/models/providers', a.key)).body.providers;
  const op = providers.find((p: any) => p.provider === 'openai');
  expect(op).toMatchObject({
    platformKey: true,
    ownKey: false,
    servedBy: 'platform_key',
    available: true,
    lastError: { code: 'provider_unavailable' },
  });
  expect(op.lastUsedAt).toEqual(expect.any(String));
  expect(providers.find((p: any) => p.provider === 'svc')).toMatchObject({ servedBy: 'built_in' });
  expect(providers.find((p: any) => p.provider === 'anthropic')).toMatchObject({ servedBy: 'none', available: false });
  expect((await t.ok('GET', '/models/providers', b.key)).body.providers.find((p: any) => p.provider === 'openai').lastError).toBeUndefined();

  const charges = (await t.ok('GET', '/credits/entries?kind=charge', a.key)).body;
  expect(charges.entries.map((e: any) => e.amount)).toEqual(['-0.00000585']);
  expect(charges.balance).toBe('0.99999415');
  const grants = (await t.ok('GET', '/credits/entries?kind=grant', a.key)).body.entries;
  expect((await t.ok('GET', `/credits/entries/${grants[0].id}`, a.key)).body).toEqual(grants[0]);
  expect((await t.call('GET', `/credits/entries/${grants[0].id}`, { key: b.key })).status).toBe(404);
  expect((await t.call('GET', '/credits/entries?kind=refund', { key: a.key })).status).toBe(400);

  const cs = (await t.ok('GET', '/credits/summary', a.key)).body;
  expect(cs).toMatchObject({ granted: '1', spent: '0.00000585', net: '0.99999415', balance: '0.99999415' });
  expect(cs.models).toEqual([{ model: 'openai/gpt-4o-mini', spent: '0.00000585', calls: 1 }]);
  const f = (await t.ok('GET', '/credits/forecast?days=1', a.key)).body;
  expect(f).toMatchObject({ windowDays: 1, spentInWindow: '0.00000585', dailyAverage: '0.00000585', projected30d: '0.0001755' });
  expect(f.daysLeft).toBeGreaterThan(1000);
  expect(Date.parse(f.runsOutAt)).toBeGreaterThan(Date.now());
  expect((await t.ok('GET', '/credits/forecast', b.key)).body.daysLeft).toBeUndefined();
  expect((await t.call('GET', '/credits/forecast?days=0', { key: a.key })).status).toBe(400);
});
