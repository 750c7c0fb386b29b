import { routes } from '@svc/api';
import { loadSettings, PrincipalSigner } from '@svc/kit';
import { modelsSettingsSchema } from '@svc/models';
import { models } from '@svc/proto';
import { startStack } from '@svc/stack';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * The model catalogue through HTTP: the listing (what the caller can use), the whole catalogue, the
 * families, availability by settings, and no completion endpoint at all.
 */

let t: TestStack;
let person: { id: string; key: string };
let agentKey: string;
beforeAll(async () => {
  t = await startTestStack();
  const user = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Modeller' })).body;
  person = { id: user.account.id, key: user.key };
  const agentId = (await t.ok('POST', '/agents', person.key, { name: 'model reader' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, person.key, { name: 'k' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

const ids = (body: { models: Array<{ id: string }> }) => body.models.map((m) => m.id);
const USE_CASES = ['chat', 'code', 'vision', 'embedding', 'reasoning', 'development'];
const MODEL_FIELDS = [
  'available',
  'capabilities',
  'contextWindow',
  'deprecated',
  'description',
  'family',
  'id',
  'maxOutputTokens',
  'modalities',
  'name',
  'pricing',
  'provider',
  'useCases',
];

describe('GET /models', () => {
  test('the models the caller can use: first-party first, none deprecated, each with its availability', async () => {
    const { body } = await t.ok('GET', '/models', person.key);
    expect(Object.keys(body)).toEqual(['models']);
    expect(body.models[0].id).toBe('svc/first');
    expect(body.models.some((m: any) => m.deprecated)).toBe(false);
    expect(ids(body)).toEqual(expect.arrayContaining(['svc/dev', 'openai/gpt-4o', 'anthropic/claude-sonnet-4']));

    const [first] = body.models;
    // Without SVC_MODELS_FIRST_PARTY_URL the first-party model is listed, but unavailable.
    expect(first).toMatchObject({ provider: 'svc', available: false, unavailableReason: { code: 'not_configured' } });
    expect(first.unavailableReason.message).toMatch(/SVC_MODELS_FIRST_PARTY_URL/);

    const dev = body.models.find((m: any) => m.id === 'svc/dev');
    expect(Object.keys(dev).sort()).toEqual(MODEL_FIELDS);
    expect(dev).toMatchObject({ useCases: ['development'], available: true, pricing: { inputPerMillion: 0, outputPerMillion: 0, currency: 'USD' } });
    expect(dev.description).toMatch(/deterministic development model/i);

    const gpt = body.models.find((m: any) => m.id === 'openai/gpt-4o');
    expect(gpt).toMatchObject({
      provider: 'openai',
      family: 'gpt-4o',
      contextWindow: 128000,
      modalities: { input: ['text', 'image'], output: ['text'] },
      capabilities: { tools: true, vision: true, structuredOutput: true, streaming: true },
      pricing: { inputPerMillion: 2.5, outputPerMillion: 10, currency: 'USD' },
      deprecated: false,
      available: false,
      unavailableReason: { code: 'provider_key_missing', message: expect.stringMatching(/^Set a provider key for openai /) },
    });
    const claude = body.models.find((m: any) => m.id === 'anthropic/claude-sonnet-4');
    expect(claude.unavailableReason.code).toBe('provider_key_missing');
    expect(claude.unavailableReason.message).toMatch(/anthropic/);
  });

  test('an agent key lists the same models, also under /v1', async () => {
    const mine = (await t.ok('GET', '/models', person.key)).body;
    expect((await t.ok('GET', '/v1/models', agentKey)).body).toEqual(mine);
  });

  test('filters: use case, provider, family', async () => {
    expect(ids((await t.ok('GET', '/models?useCase=development', person.key)).body)).toEqual(['svc/dev']);
    const embedding = (await t.ok('GET', '/models?useCase=embedding', person.key)).body;
    expect(ids(embedding)).toEqual(['openai/text-embedding-3-small', 'openai/text-embedding-3-large']);
    const reasoning = (await t.ok('GET', '/models?useCase=reasoning', person.key)).body.models;
    expect(reasoning.length).toBeGreaterThan(0);
    expect(reasoning.every((m: any) => m.useCases.includes('reasoning'))).toBe(true);

    const anthropic = (await t.ok('GET', '/models?provider=anthropic', person.key)).body.models;
    expect(anthropic.length).toBeGreaterThan(0);
    expect(anthropic.every((m: any) => m.provider === 'anthropic' && !m.deprecated)).toBe(true);
    expect(ids((await t.ok('GET', '/models?provider=svc', person.key)).body)).toEqual(['svc/first', 'svc/dev']);
    expect(ids((await t.ok('GET', '/models?family=gpt-4o', person.key)).body)).toEqual(['openai/gpt-4o', 'openai/gpt-4o-mini']);
    expect(ids((await t.ok('GET', '/models?provider=openai&useCase=chat&family=claude-4', person.key)).body)).toEqual([]);
    expect(ids((await t.ok('GET', '/models?provider=nobody', person.key)).body)).toEqual([]);
  });

  test('an unknown use case answers 400 naming the valid ones', async () => {
    const res = await t.call('GET', '/models?useCase=poetry', { key: person.key });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR_BODY);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.message).toMatch(/^query\.useCase: /);
    for (const u of USE_CASES) expect(res.body.error.message).toContain(`"${u}"`);
  });

  test('needs a key', async () => {
    for (const p of ['/models', '/models/catalog', '/models/families']) {
      const res = await t.call('GET', p);
      expect([p, res.status, res.body.error.code]).toEqual([p, 401, 'missing_api_key']);
    }
  });
});

describe('GET /models/catalog and /models/families', () => {
  test('the catalogue holds every record, deprecated ones with their replacement', async () => {
    const all = (await t.ok('GET', '/models/catalog', person.key)).body;
    const listed = (await t.ok('GET', '/models', person.key)).body;
    expect(all.models[0].id).toBe('svc/first');
    const deprecated = all.models.filter((m: any) => m.deprecated);
    expect(deprecated.length).toBeGreaterThanOrEqual(2);
    for (const m of deprecated) expect(ids(all)).toContain(m.replacedBy);
    expect(deprecated.map((m: any) => m.id)).toEqual(expect.arrayContaining(['openai/gpt-4-turbo', 'anthropic/claude-3-5-sonnet']));
    expect(ids(all).filter((id) => !deprecated.some((m: any) => m.id === id))).toEqual(ids(listed));
    expect((await t.ok('GET', '/models/catalog', agentKey)).body).toEqual(all);
  });

  test('families name their members, and every model its family', async () => {
    const { families } = (await t.ok('GET', '/models/families', agentKey)).body;
    const all = (await t.ok('GET', '/models/catalog', person.key)).body.models;
    expect(families.find((f: any) => f.id === 'gpt-4o')).toEqual({
      id: 'gpt-4o',
      name: 'GPT-4o',
      provider: 'openai',
      description: expect.any(String),
      members: ['openai/gpt-4o', 'openai/gpt-4o-mini'],
    });
    for (const m of all) expect(families.find((f: any) => f.id === m.family).members).toContain(m.id);
    expect(families.flatMap((f: any) => f.members).sort()).toEqual(ids({ models: all }).sort());
  });
});

describe('no completion endpoint', () => {
  test('no route of the table, nor any path of /openapi.json, is a completion, chat or responses endpoint', async () => {
    const bad = /(^|\/)(chat\/completions|completions|responses|chat)(\/|$)/;
    expect(routes.filter((r) => bad.test(r.path)).map((r) => r.path)).toEqual([]);
    const doc = (await t.ok('GET', '/openapi.json', person.key)).body;
    expect(Object.keys(doc.paths).filter((p) => bad.test(p))).toEqual([]);
  });

  test.each([
    '/api/v1/chat/completions',
    '/openai/v1/chat/completions',
    '/v1/openai/chat/completions',
    '/models/chat/completions',
    '/v1/models/svc/dev/chat/completions',
    '/v1/engines/svc-dev/completions',
    '/v2/chat/completions',
    '/v1/v1/chat/completions',
    '/mcp/v1/chat/completions',
    '/v1/responses/resp_1',
  ])('%s answers 404 with the error body, with or without a key', async (p) => {
    for (const key of [undefined, person.key]) {
      const res = await t.call('POST', p, { key, body: { model: 'svc/dev', messages: [{ role: 'user', content: 'hi' }], stream: true } });
      expect([p, res.status]).toEqual([p, 404]);
      expect(res.body).toEqual(ERROR_BODY);
    }
  });

  test.each(['/v1/chat/completions', '/chat/completions', '/v1/completions', '/v1/responses'])('%s answers 404 to POST and GET', async (p) => {
    for (const method of ['POST', 'GET']) {
      for (const key of [undefined, person.key]) {
        const res = await t.call(method, p, { key, body: method === 'POST' ? { model: 'svc/dev', messages: [] } : undefined });
        expect([method, p, res.status]).toEqual([method, p, 404]);
        expect(res.body).toEqual(ERROR_BODY);
      }
    }
  });
});

describe('cached listings', () => {
  const openaiAvailable = async (key: string) => (await t.ok('GET', '/models?provider=openai', key)).body.models.every((m: any) => m.available);

  test("a provider key set or deleted through the gateway shows at once; one changed elsewhere, through the service's event", async () => {
    const user = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Cached' })).body;
    expect(await openaiAvailable(user.key)).toBe(false);
    await t.ok('PUT', '/models/provider-keys/openai', user.key, { key: 'sk-cache-0001' });
    expect(await openaiAvailable(user.key)).toBe(true);
    expect((await t.ok('GET', '/models/catalog', user.key)).body.models.find((m: any) => m.id === 'openai/gpt-4o').available).toBe(true);
    await t.ok('DELETE', '/models/provider-keys/openai', user.key);
    expect(await openaiAvailable(user.key)).toBe(false);

    // Set behind the gateway's back (straight to the service, as another replica would): the
    // service's models.provider_key.set event evicts the cached answer well before its 10 s.
    await t.ok('PUT', '/models/provider-keys/openai', user.key, { key: 'sk-cache-0002' });
    expect(await openaiAvailable(user.key)).toBe(true);
    const signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
    const token = (await signer.sign({ kind: 'human', userId: user.account.id, accountId: user.account.id, channel: 'api' })).token;
    const started = Date.now();
    await t.stack.registry
      .client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService')
      .deleteProviderKey({ provider: 'openai' }, { principalToken: token });
    while (await openaiAvailable(user.key)) {
      if (Date.now() - started > 5000) throw new Error('the cached listing was not evicted by the event');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});

describe('settings', () => {
  test('with SVC_MODELS_FIRST_PARTY_URL the first-party model is available', async () => {
    const configured = await startTestStack({
      SVC_MODELS_FIRST_PARTY_URL: 'http://vllm.example.internal:8000/v1',
      SVC_MODELS_FIRST_PARTY_MODEL: 'Qwen/Qwen2.5-7B-Instruct',
    });
    try {
      const [first] = (await configured.ok('GET', '/models', configured.bootstrapKey)).body.models;
      expect(first).toMatchObject({ id: 'svc/first', available: true });
      expect(first).not.toHaveProperty('unavailableReason');
      const gpt = (await configured.ok('GET', '/models?provider=openai', configured.bootstrapKey)).body.models[0];
      expect(gpt.unavailableReason.code).toBe('provider_key_missing');
    } finally {
      await configured.stop();
    }
  }, 60_000);

  test('a bad value stops the start with a message naming the variable', async () => {
    expect(loadSettings({ models: modelsSettingsSchema }, {}).models).toEqual({});
    await expect(startStack({ SVC_SERVICE: 'all', SVC_MODELS_FIRST_PARTY_URL: 'vllm:8000', LOG_LEVEL: 'silent' })).rejects.toThrow(
      /invalid configuration:\n {2}SVC_MODELS_FIRST_PARTY_URL: must be an http:\/\/ or https:\/\/ URL/,
    );
    await expect(startStack({ SVC_SERVICE: 'all', SVC_MODELS_FIRST_PARTY_URL: 'ftp://x.example', LOG_LEVEL: 'silent' })).rejects.toThrow(
      /SVC_MODELS_FIRST_PARTY_URL/,
    );
  });
});
