import { type Principal, PrincipalSigner } from '@svc/kit';
import { models, type models_infer } from '@svc/proto';

import { fakeOpenAI, type FakeProvider } from '../support/model-fakes';
import { startTestStack, type TestStack } from '../support/stack';

/** Low-balance alerts on credits: triggered by a charge, at creation, armed again by a change; tenancy and bad input. */

let t: TestStack;
let openai: FakeProvider;
let signer: PrincipalSigner;

beforeAll(async () => {
  openai = await fakeOpenAI();
  t = await startTestStack({ SVC_MODELS_ALLOWED_HOSTS: '127.0.0.1', SVC_MODELS_OPENAI_KEY: 'sk-platform', SVC_MODELS_OPENAI_URL: openai.baseUrl });
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await openai?.close();
});

async function person(name: string) {
  const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
  return { id: body.account.id as string, key: body.key as string };
}
async function infer(accountId: string, chargeKey: string): Promise<void> {
  const p: Principal = { kind: 'agent', agentId: 'agt_runner', accountId, channel: 'internal' };
  const opts = { principalToken: (await signer.sign(p)).token };
  const msg: models_infer.ChatMessage = { role: 'user', content: 'hi', toolCalls: [], toolCallId: '', name: '' };
  const c = t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
  for await (const e of c.infer({ model: 'openai/gpt-4o-mini', messages: [msg], tools: [], chargeKey }, opts)) void e;
}

test('an alert triggers when a charge takes the balance to its threshold; a change arms it again', async () => {
  const a = await person('Ada');
  const b = await person('Ben');
  await t.ok('POST', '/credits/grants', t.bootstrapKey, { accountId: a.id, amount: '1' });
  const low = (await t.ok('POST', '/credits/alerts', a.key, { threshold: '0.9999942', note: 'top up' })).body;
  expect(low).toMatchObject({ threshold: '0.9999942', note: 'top up', status: 'active' });
  // The fake's call costs 0.00000585: the balance becomes 0.99999415, below the threshold.
  await infer(a.id, 'run_a:1');
  const hit = (await t.ok('GET', `/credits/alerts/${low.id}`, a.key)).body;
  expect(hit).toMatchObject({ status: 'triggered', triggeredBalance: '0.99999415' });
  expect(hit.triggeredAt).toEqual(expect.any(String));

  const already = (await t.ok('POST', '/credits/alerts', a.key, { threshold: '5' })).body;
  expect(already.status).toBe('triggered');
  const rearmed = (await t.ok('PATCH', `/credits/alerts/${low.id}`, a.key, { threshold: '0.5', note: null })).body;
  expect(rearmed).toMatchObject({ threshold: '0.5', status: 'active' });
  expect(rearmed.note).toBeUndefined();
  expect((await t.ok('GET', '/credits/alerts?status=active', a.key)).body.alerts.map((x: any) => x.id)).toEqual([low.id]);
  const all = (await t.ok('GET', '/credits/alerts?limit=1', a.key)).body;
  expect(all.alerts.map((x: any) => x.id)).toEqual([already.id]);
  expect((await t.ok('GET', `/credits/alerts?cursor=${all.nextCursor}`, a.key)).body.alerts.map((x: any) => x.id)).toEqual([low.id]);

  expect((await t.call('GET', `/credits/alerts/${low.id}`, { key: b.key })).status).toBe(404);
  expect((await t.call('PATCH', `/credits/alerts/${low.id}`, { key: b.key, body: { threshold: '1' } })).status).toBe(404);
  expect((await t.call('DELETE', `/credits/alerts/${low.id}`, { key: b.key })).status).toBe(404);
  expect((await t.ok('GET', '/credits/alerts', b.key)).body.alerts).toEqual([]);

  expect((await t.call('POST', '/credits/alerts', { key: a.key, body: { threshold: '-1' } })).status).toBe(400);
  expect((await t.call('POST', '/credits/alerts', { key: a.key, body: { threshold: 5 } })).status).toBe(400);
  expect((await t.call('PATCH', `/credits/alerts/${low.id}`, { key: a.key, body: {} })).status).toBe(400);
  expect((await t.call('GET', '/credits/alerts?status=done', { key: a.key })).status).toBe(400);
  expect((await t.ok('DELETE', `/credits/alerts/${low.id}`, a.key)).body).toEqual({ success: true });
  expect((await t.call('DELETE', `/credits/alerts/${low.id}`, { key: a.key })).status).toBe(404);
});
