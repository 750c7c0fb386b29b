import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { models, type models_infer } from '@svc/proto';

import { fakeOpenAI, type FakeProvider } from '../support/model-fakes';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Credits: the ledger in PostgreSQL, GET /credits, the operator's grants, and Infer's charges: at
 * the catalogue's prices, exact, once per charge key; refused with insufficient_credits at 0; none
 * for the development model or a call on the account's own provider key.
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
  const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `payer ${++seq}` })).body;
  return { id: body.account.id as string, key: body.key as string };
}
const grant = (accountId: string, amount: string, memo?: string) => t.ok('POST', '/credits/grants', t.bootstrapKey, { accountId, amount, memo });
const credits = async (key: string, q = '') => (await t.ok('GET', `/credits${q}`, key)).body;

const client = () => t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
const msg = (content: string): models_infer.ChatMessage => ({ role: 'user', content, toolCalls: [], toolCallId: '', name: '' });
async function infer(accountId: string, model: string, chargeKey: string): Promise<models_infer.Usage> {
  const p: Principal = { kind: 'agent', agentId: 'agt_runner', accountId, channel: 'internal' };
  const opts = { principalToken: (await signer.sign(p)).token };
  let usage: models_infer.Usage | undefined;
  for await (const e of client().infer({ model, messages: [msg('hi')], tools: [], chargeKey }, opts)) usage = e.usage ?? usage;
  return usage!;
}
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? `${e.kind}/${e.code}` : String(e)),
  );

describe('GET /credits and grants', () => {
  test('a new account has 0 and no entries', async () => {
    const a = await person();
    expect(await credits(a.key)).toEqual({ balance: '0', currency: 'USD', entries: [], nextCursor: null });
  });

  test('the operator grants; the ledger shows it; others may not grant', async () => {
    const a = await person();
    const res = await grant(a.id, '2.5', 'welcome');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      balance: '2.5',
      entry: {
        id: expect.stringMatching(/^crd_[0-9a-z]{26}$/),
        kind: 'grant',
        amount: '2.5',
        currency: 'USD',
        memo: 'welcome',
        actor: { kind: 'human', id: expect.stringMatching(/^acct_/) },
        createdAt: expect.any(String),
      },
    });
    expect((await grant(a.id, '0.000000000001')).body.balance).toBe('2.500000000001');
    const view = await credits(a.key);
    expect(view.balance).toBe('2.500000000001');
    expect(view.entries.map((e: any) => e.amount)).toEqual(['0.000000000001', '2.5']);

    // Not the operator: a person, even granting to themself.
    const other = await t.call('POST', '/credits/grants', { key: a.key, body: { accountId: a.id, amount: '100' } });
    expect([other.status, other.body.error.code]).toEqual([403, 'operator_required']);
    expect(other.body).toEqual(ERROR_BODY);
    // An agent key never (an authority change).
    const agentId = (await t.ok('POST', '/agents', t.bootstrapKey, { name: 'granter' })).body.id;
    const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, t.bootstrapKey, { name: 'k' })).body.key;
    const agent = await t.call('POST', '/credits/grants', { key: agentKey, body: { accountId: a.id, amount: '1' } });
    expect([agent.status, agent.body.error.code]).toEqual([403, 'human_principal_required']);
    // An agent reads its account's credits.
    expect((await t.ok('GET', '/credits', agentKey)).body.currency).toBe('USD');
    expect((await credits(a.key)).balance).toBe('2.500000000001');
  });

  test('amounts are positive exact decimals as strings', async () => {
    const a = await person();
    for (const amount of ['0', '-1', '1e3', '1.0000000000001', 'ten', '99999999']) {
      const res = await t.call('POST', '/credits/grants', { key: t.bootstrapKey, body: { accountId: a.id, amount } });
      expect([amount, res.status]).toEqual([amount, 400]);
    }
    const num = await t.call('POST', '/credits/grants', { key: t.bootstrapKey, body: { accountId: a.id, amount: 5 } });
    expect(num.status).toBe(400);
    const bad = await t.call('POST', '/credits/grants', { key: t.bootstrapKey, body: { accountId: 'acct_nope', amount: '1' } });
    expect(bad.status).toBe(400);
  });

  test('entries page with a cursor, newest first', async () => {
    const a = await person();
    for (const amount of ['1', '2', '3', '4', '5']) await grant(a.id, amount);
    const first = await credits(a.key, '?limit=2');
    expect(first.entries.map((e: any) => e.amount)).toEqual(['5', '4']);
    expect(first.balance).toBe('15');
    const second = await credits(a.key, `?limit=2&cursor=${first.nextCursor}`);
    expect(second.entries.map((e: any) => e.amount)).toEqual(['3', '2']);
    const third = await credits(a.key, `?limit=2&cursor=${second.nextCursor}`);
    expect(third.entries.map((e: any) => e.amount)).toEqual(['1']);
    expect(third.nextCursor).toBeNull();
    const junk = await t.call('GET', '/credits?cursor=zzz', { key: a.key });
    expect([junk.status, junk.body.error.code]).toEqual([400, 'invalid_cursor']);
  });
});

describe('charges', () => {
  test('a priced model with no credits is insufficient_credits, before the provider is called', async () => {
    const a = await person();
    const before = openai.requests.length;
    expect(await failure(infer(a.id, 'openai/gpt-4o', 'run_1:1'))).toBe('forbidden/insufficient_credits');
    expect(openai.requests.length).toBe(before);
    // The development model is free: no credits needed, nothing charged.
    expect(await infer(a.id, 'svc/dev', 'run_1:2')).toMatchObject({ cost: '0', ownKey: false });
    expect((await credits(a.key)).entries).toEqual([]);
  });

  test('a call is charged its cost once per charge key; a retried step is not charged again', async () => {
    const a = await person();
    await grant(a.id, '1');
    // gpt-4o-mini: $0.15 in, $0.60 out per million; the fake reports 11 in, 7 out.
    const usage = await infer(a.id, 'openai/gpt-4o-mini', 'run_2:1');
    expect(usage).toMatchObject({ cost: '0.00000585', ownKey: false, inputTokens: 11, outputTokens: 7 });
    expect(openai.requests[openai.requests.length - 1]!.headers.authorization).toBe('Bearer sk-platform');
    let view = await credits(a.key);
    expect(view.balance).toBe('0.99999415');
    expect(view.entries[0]).toEqual({
      id: expect.any(String),
      kind: 'charge',
      amount: '-0.00000585',
      currency: 'USD',
      model: 'openai/gpt-4o-mini',
      inputTokens: 11,
      outputTokens: 7,
      chargeKey: 'run_2:1',
      actor: { kind: 'agent', id: 'agt_runner' },
      createdAt: expect.any(String),
    });

    // The same step again (a retry), also several at once: still one charge.
    await infer(a.id, 'openai/gpt-4o-mini', 'run_2:1');
    await Promise.all([1, 2, 3].map(() => infer(a.id, 'openai/gpt-4o-mini', 'run_2:1')));
    view = await credits(a.key);
    expect(view.balance).toBe('0.99999415');
    expect(view.entries.filter((e: any) => e.kind === 'charge')).toHaveLength(1);

    // Ten more steps: exact sums, no float drift.
    for (let i = 2; i <= 11; i++) await infer(a.id, 'openai/gpt-4o-mini', `run_2:${i}`);
    expect((await credits(a.key)).balance).toBe('0.99993565');
  });

  test('the call that crosses 0 is charged in full; the next is refused; a retry of a charged step still runs', async () => {
    const a = await person();
    await grant(a.id, '0.00001');
    // gpt-4o: 11 × 2.5 + 7 × 10 = 97.5 millionths.
    await infer(a.id, 'openai/gpt-4o', 'run_3:1');
    expect((await credits(a.key)).balance).toBe('-0.0000875');
    expect(await failure(infer(a.id, 'openai/gpt-4o', 'run_3:2'))).toBe('forbidden/insufficient_credits');
    expect((await infer(a.id, 'openai/gpt-4o', 'run_3:1')).cost).toBe('0.0000975');
    expect((await credits(a.key)).balance).toBe('-0.0000875');
  });

  test("the account's own provider key costs no credits", async () => {
    const a = await person();
    await t.ok('PUT', '/models/provider-keys/openai', a.key, { key: 'sk-mine-0001', baseUrl: openai.baseUrl });
    const usage = await infer(a.id, 'openai/gpt-4o', 'run_4:1');
    expect(usage).toMatchObject({ ownKey: true, cost: '0.0000975' });
    expect(openai.requests[openai.requests.length - 1]!.headers.authorization).toBe('Bearer sk-mine-0001');
    expect(await credits(a.key)).toEqual({ balance: '0', currency: 'USD', entries: [], nextCursor: null });
  });
});
