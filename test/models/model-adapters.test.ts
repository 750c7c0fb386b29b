import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { models, type models_infer } from '@svc/proto';

import { fakeAnthropic, fakeOpenAI, type FakeProvider } from '../support/model-fakes';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * The inference adapters (the `openai` and `@anthropic-ai/sdk` SDKs) against local fakes that speak
 * each provider's wire protocol: what we send (the fakes record it), how we read JSON and SSE
 * streams and tool calls, and how provider failures map to the platform's codes. Calls go through
 * the models service's Infer over gRPC. Loopback is allowed for the fakes by SVC_MODELS_ALLOWED_HOSTS.
 */

let t: TestStack;
let openai: FakeProvider;
let anthropic: FakeProvider;
let compatible: FakeProvider;
let own: { id: string; key: string };
let other: { id: string; key: string };
let signer: PrincipalSigner;

beforeAll(async () => {
  [openai, anthropic, compatible] = await Promise.all([fakeOpenAI(), fakeAnthropic(), fakeOpenAI()]);
  t = await startTestStack({
    SVC_MODELS_ALLOWED_HOSTS: '127.0.0.1',
    // The platform's own keys, sent to the fakes too (another account pays with credits).
    SVC_MODELS_OPENAI_KEY: 'sk-platform-openai',
    SVC_MODELS_OPENAI_URL: openai.baseUrl,
    SVC_MODELS_ANTHROPIC_KEY: 'sk-ant-platform',
    SVC_MODELS_ANTHROPIC_URL: anthropic.baseUrl,
    SVC_MODELS_FIRST_PARTY_URL: compatible.baseUrl,
    SVC_MODELS_FIRST_PARTY_MODEL: 'Qwen/Qwen2.5-7B-Instruct',
  });
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
  const person = async (name: string) => {
    const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
    return { id: body.account.id as string, key: body.key as string };
  };
  own = await person('Own keys');
  other = await person('Platform keys');
  // The platform's keys are paid with credits.
  await t.ok('POST', '/credits/grants', t.bootstrapKey, { accountId: other.id, amount: '5' });
  await t.ok('PUT', '/models/provider-keys/openai', own.key, { key: 'sk-own-openai-1234', baseUrl: openai.baseUrl });
  await t.ok('PUT', '/models/provider-keys/anthropic', own.key, { key: 'sk-ant-own-5678', baseUrl: anthropic.baseUrl });
  await t.ok('PUT', '/models/provider-keys/openai-compatible', own.key, { key: 'local-key-9', baseUrl: compatible.baseUrl });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await Promise.all([openai?.close(), anthropic?.close(), compatible?.close()]);
});

const client = () => t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
const tokenOf = async (accountId: string) => {
  const p: Principal = { kind: 'agent', agentId: 'agt_runner', accountId, channel: 'internal' };
  return { principalToken: (await signer.sign(p)).token };
};
const msg = (role: string, content: string, extra: Partial<models_infer.ChatMessage> = {}): models_infer.ChatMessage => ({
  role,
  content,
  toolCalls: [],
  toolCallId: '',
  name: '',
  ...extra,
});
const TOOLS: models_infer.ToolDefinition[] = [
  {
    name: 'get_weather',
    description: 'The weather in a city',
    inputSchemaJson: '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}',
  },
];

async function infer(r: Partial<models_infer.InferRequest>, accountId = own.id): Promise<models_infer.InferEvent[]> {
  const out: models_infer.InferEvent[] = [];
  const req: models_infer.InferRequest = { model: 'openai/gpt-4o', messages: [msg('user', 'hi')], tools: [], chargeKey: '', ...r };
  for await (const e of client().infer(req, await tokenOf(accountId))) out.push(e);
  return out;
}
/** The DomainError a call ends with, and the events before it. */
async function failure(r: Partial<models_infer.InferRequest>, accountId = own.id) {
  const events: models_infer.InferEvent[] = [];
  const req: models_infer.InferRequest = { model: 'openai/gpt-4o', messages: [msg('user', 'hi')], tools: [], chargeKey: '', ...r };
  try {
    for await (const e of client().infer(req, await tokenOf(accountId))) events.push(e);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { kind: err.kind, code: err.code, message: err.message, details: err.details, events };
  }
  throw new Error('the call did not fail');
}
/** The key an Anthropic request carries: `x-api-key`, or (the SDK's newer API versions) a bearer token. */
const anthropicKey = (h: Record<string, unknown>) => (h['x-api-key'] as string | undefined) ?? String(h.authorization ?? '').replace(/^Bearer /, '');
const textOf = (events: models_infer.InferEvent[]) => events.map((e) => e.delta ?? '').join('');
const usageOf = (events: models_infer.InferEvent[]) => events[events.length - 1]!.usage!;

const conversation = [
  msg('system', 'You are terse.'),
  msg('user', 'Weather in Paris?'),
  msg('assistant', 'Let me look.', { toolCalls: [{ id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Paris"}' }] }),
  msg('tool', '{"temp":21}', { toolCallId: 'call_1' }),
];

describe('the openai adapter', () => {
  test('our request: the model name at the provider, the messages, tools and limits, streamed with usage, with the account key', async () => {
    openai.requests.length = 0;
    openai.next({ text: 'It is 21 degrees in Paris.', usage: { input: 40, output: 8 } });
    const events = await infer({ messages: conversation, tools: TOOLS, temperature: 0.2, maxOutputTokens: 300 });
    expect(openai.requests).toHaveLength(1);
    const sent = openai.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-own-openai-1234');
    expect(sent.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather in a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        },
      ],
      temperature: 0.2,
      max_completion_tokens: 300,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(events.filter((e) => e.delta !== undefined).length).toBeGreaterThan(3);
    expect(textOf(events)).toBe('It is 21 degrees in Paris.');
    // GPT-4o: $2.5 in, $10 out per million tokens: 40 × 2.5 + 8 × 10 = 180 millionths.
    expect(usageOf(events)).toEqual({
      model: 'openai/gpt-4o',
      inputTokens: 40,
      outputTokens: 8,
      cost: '0.00018',
      currency: 'USD',
      ownKey: true,
      finishReason: 'stop',
    });
  });

  test('tool calls streamed in fragments arrive whole', async () => {
    openai.next({
      toolCalls: [
        { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_b', name: 'get_weather', arguments: '{"city":"Lyon, France"}' },
      ],
    });
    const events = await infer({ messages: [msg('user', 'Paris and Lyon?')], tools: TOOLS });
    expect(events.filter((e) => e.toolCall).map((e) => e.toolCall)).toEqual([
      { id: 'call_a', name: 'get_weather', argumentsJson: '{"city":"Paris"}' },
      { id: 'call_b', name: 'get_weather', argumentsJson: '{"city":"Lyon, France"}' },
    ]);
    expect(usageOf(events).finishReason).toBe('tool_calls');
  });

  test('the platform key serves an account without its own (not own_key)', async () => {
    // With the platform's keys set, the providers' models are listed available to every account.
    const listed = (await t.ok('GET', '/models', other.key)).body.models;
    expect(listed.filter((m: any) => m.provider !== 'svc').every((m: any) => m.available)).toBe(true);
    openai.requests.length = 0;
    const events = await infer({ model: 'openai/gpt-4o-mini' }, other.id);
    expect(openai.requests[0]!.headers.authorization).toBe('Bearer sk-platform-openai');
    expect(openai.requests[0]!.body.model).toBe('gpt-4o-mini');
    expect(usageOf(events)).toMatchObject({ ownKey: false, inputTokens: 11, outputTokens: 7, cost: '0.00000585' });
  });

  test('the first-party model goes to its server under its name there; openai-compatible/<name> to the account’s server', async () => {
    compatible.requests.length = 0;
    const first = await infer({ model: 'svc/first' });
    expect(compatible.requests[0]!.body.model).toBe('Qwen/Qwen2.5-7B-Instruct');
    expect(compatible.requests[0]!.body.max_tokens).toBeUndefined();
    expect(usageOf(first)).toMatchObject({ model: 'svc/first', ownKey: false, cost: '0' });

    const mine = await infer({ model: 'openai-compatible/llama3.1:8b', maxOutputTokens: 50 });
    expect(compatible.requests[1]!.body).toMatchObject({ model: 'llama3.1:8b', max_tokens: 50 });
    expect(compatible.requests[1]!.headers.authorization).toBe('Bearer local-key-9');
    expect(usageOf(mine)).toMatchObject({ model: 'openai-compatible/llama3.1:8b', ownKey: true, cost: '0' });
    const none = await failure({ model: 'openai-compatible/llama3.1:8b' }, other.id);
    expect([none.kind, none.code]).toEqual(['unprocessable', 'model_unavailable']);
  });

  test('provider failures map to clear codes, never a bare 500', async () => {
    const err = (status: number, type: string, headers?: Record<string, string>) => ({
      status,
      headers,
      body: { error: { message: `fake ${type}`, type, param: null, code: null } },
    });
    openai.next(err(401, 'invalid_request_error'));
    const invalidKey = await failure({});
    expect([invalidKey.kind, invalidKey.code]).toEqual(['unprocessable', 'provider_key_invalid']);
    expect(invalidKey.message).not.toContain('sk-own');

    openai.next(err(429, 'rate_limit_error', { 'retry-after': '7' }));
    const limited = await failure({});
    expect([limited.kind, limited.code, limited.details]).toEqual(['rate_limited', 'provider_rate_limited', { retryAfterSeconds: 7 }]);

    openai.next(err(429, 'rate_limit_error', { 'retry-after-ms': '2500' }));
    expect((await failure({})).details).toEqual({ retryAfterSeconds: 3 });

    openai.next(err(503, 'server_error'));
    const down = await failure({});
    expect([down.kind, down.code]).toEqual(['unavailable', 'provider_unavailable']);

    openai.next(err(500, 'server_error'));
    expect((await failure({})).code).toBe('provider_unavailable');

    openai.next({
      status: 404,
      body: { error: { message: 'The model `gpt-4o` does not exist', type: 'invalid_request_error', code: 'model_not_found' } },
    });
    const gone = await failure({});
    expect([gone.kind, gone.code]).toEqual(['unprocessable', 'model_unavailable']);

    openai.next(err(400, 'invalid_request_error'));
    const rejected = await failure({});
    expect([rejected.kind, rejected.code]).toEqual(['unprocessable', 'provider_rejected']);
    expect(rejected.message).toContain('fake invalid_request_error');

    // The platform's key refused: not the account's problem.
    openai.next(err(401, 'invalid_request_error'));
    expect((await failure({}, other.id)).code).toBe('provider_unavailable');

    // A failure inside the stream, after some text.
    openai.next({ text: 'partial answer here', failMidStream: true });
    const mid = await failure({});
    expect(mid.code).toBe('provider_unavailable');
    expect(textOf(mid.events)).toBe('partial answer here');
    expect(mid.events.some((e) => e.usage)).toBe(false);
  });

  test('stopping the stream cancels the call to the provider', async () => {
    const before = openai.aborted;
    openai.next({ text: 'one two three four five six seven eight nine ten', delayMs: 200 });
    const req: models_infer.InferRequest = { model: 'openai/gpt-4o', messages: [msg('user', 'slow')], tools: [], chargeKey: '' };
    const got: string[] = [];
    for await (const e of client().infer(req, await tokenOf(own.id))) {
      if (e.delta) got.push(e.delta);
      if (got.length === 2) break;
    }
    expect(got).toEqual(['one ', 'two ']);
    const end = Date.now() + 3000;
    while (openai.aborted === before && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(openai.aborted).toBe(before + 1);
  });

  test('a provider that cannot be reached is provider_unavailable', async () => {
    const gone = await fakeOpenAI();
    await gone.close();
    const solo = await (async () => {
      const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Unreachable' })).body;
      await t.ok('PUT', '/models/provider-keys/openai', body.key, { key: 'sk-x-0000', baseUrl: gone.baseUrl });
      return body.account.id as string;
    })();
    const f = await failure({}, solo);
    expect([f.kind, f.code]).toEqual(['unavailable', 'provider_unavailable']);
  });
});

describe('the anthropic adapter', () => {
  test('our request: system apart, tool_use and tool_result blocks, tools with input_schema, max_tokens, streamed', async () => {
    anthropic.requests.length = 0;
    anthropic.next({ text: 'Sunny, 21 °C.', usage: { input: 100, output: 20 } });
    const events = await infer({ model: 'anthropic/claude-sonnet-4', messages: conversation, tools: TOOLS, temperature: 0.5 });
    const sent = anthropic.requests[0]!;
    expect(sent.path).toBe('/v1/messages');
    expect(anthropicKey(sent.headers)).toBe('sk-ant-own-5678');
    expect(sent.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(sent.body).toEqual({
      model: 'claude-sonnet-4-0',
      max_tokens: 4096,
      system: 'You are terse.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"temp":21}' }] },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'The weather in a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
      temperature: 0.5,
      stream: true,
    });
    expect(textOf(events)).toBe('Sunny, 21 °C.');
    // Claude Sonnet 4: $3 in, $15 out: 100 × 3 + 20 × 15 = 600 millionths.
    expect(usageOf(events)).toEqual({
      model: 'anthropic/claude-sonnet-4',
      inputTokens: 100,
      outputTokens: 20,
      cost: '0.0006',
      currency: 'USD',
      ownKey: true,
      finishReason: 'stop',
    });
  });

  test('tool_use blocks with streamed input JSON arrive as whole tool calls', async () => {
    anthropic.next({ text: 'Checking.', toolCalls: [{ id: 'toolu_01', name: 'get_weather', arguments: '{"city": "Paris"}' }] });
    const events = await infer({ model: 'anthropic/claude-sonnet-4', messages: [msg('user', 'Paris?')], tools: TOOLS, maxOutputTokens: 99 });
    expect(anthropic.requests[anthropic.requests.length - 1]!.body.max_tokens).toBe(99);
    expect(textOf(events)).toBe('Checking.');
    expect(events.filter((e) => e.toolCall).map((e) => e.toolCall)).toEqual([
      { id: 'toolu_01', name: 'get_weather', argumentsJson: '{"city":"Paris"}' },
    ]);
    expect(usageOf(events)).toMatchObject({ finishReason: 'tool_calls', inputTokens: 13, outputTokens: 9 });
  });

  test('the platform key serves an account without its own', async () => {
    await infer({ model: 'anthropic/claude-3-5-haiku' }, other.id);
    const sent = anthropic.requests[anthropic.requests.length - 1]!;
    expect(anthropicKey(sent.headers)).toBe('sk-ant-platform');
    expect(sent.body.model).toBe('claude-3-5-haiku-latest');
  });

  test('provider failures map to clear codes, never a bare 500', async () => {
    const m = { model: 'anthropic/claude-sonnet-4' };
    const err = (status: number, type: string, headers?: Record<string, string>) => ({
      status,
      headers,
      body: { type: 'error', error: { type, message: `fake ${type}` } },
    });
    anthropic.next(err(401, 'authentication_error'));
    expect(Object.values(await failure(m)).slice(0, 2)).toEqual(['unprocessable', 'provider_key_invalid']);
    anthropic.next(err(429, 'rate_limit_error', { 'retry-after': '12' }));
    const limited = await failure(m);
    expect([limited.kind, limited.code, limited.details]).toEqual(['rate_limited', 'provider_rate_limited', { retryAfterSeconds: 12 }]);
    anthropic.next(err(529, 'overloaded_error'));
    expect((await failure(m)).code).toBe('provider_unavailable');
    anthropic.next(err(500, 'api_error'));
    expect((await failure(m)).code).toBe('provider_unavailable');
    anthropic.next(err(404, 'not_found_error'));
    expect((await failure(m)).code).toBe('model_unavailable');
    anthropic.next(err(400, 'invalid_request_error'));
    expect((await failure(m)).code).toBe('provider_rejected');

    anthropic.next({ text: 'half of it', failMidStream: true });
    const mid = await failure(m);
    expect(mid.code).toBe('provider_unavailable');
    expect(textOf(mid.events)).toBe('half of it');
  });
});
