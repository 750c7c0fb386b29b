import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { checkOutboundUrl, DomainError, type Principal } from '@svc/kit';
import { costOf, fromUnits, Inference, loadCatalogue, modelsSettings, pinnedFetch, type ProviderKeys, retryAfter, toUnits } from '@svc/models';

/** The pieces of inference that need no stack: exact costs, waits, the pinned fetch, the baseUrl check at call time. */

describe('costs are exact decimals', () => {
  test('prices per million tokens, no binary float on the way', () => {
    expect(costOf({ inputPerMillion: 2.5, outputPerMillion: 10 }, 40, 8)).toBe('0.00018');
    expect(costOf({ inputPerMillion: 0.15, outputPerMillion: 0.6 }, 11, 7)).toBe('0.00000585');
    // 0.1 + 0.2 is not 0.3 in floats; here it is.
    expect(costOf({ inputPerMillion: 0.1, outputPerMillion: 0.2 }, 1_000_000, 1_000_000)).toBe('0.3');
    expect(costOf({ inputPerMillion: 0, outputPerMillion: 0 }, 123, 456)).toBe('0');
    expect(costOf({ inputPerMillion: 15, outputPerMillion: 75 }, 3, 0)).toBe('0.000045');
  });

  test('units round-trip', () => {
    for (const d of ['0', '1', '-1.5', '0.000000000001', '12345.678']) expect(fromUnits(toUnits(d))).toBe(d);
    expect(fromUnits(toUnits('2.50'))).toBe('2.5');
    expect(() => toUnits('1e3')).toThrow();
  });
});

test('retryAfter reads retry-after-ms, retry-after seconds or date, at least 1', () => {
  expect(retryAfter(new Headers({ 'retry-after': '7' }))).toBe(7);
  expect(retryAfter(new Headers({ 'retry-after-ms': '2500', 'retry-after': '9' }))).toBe(3);
  expect(retryAfter(new Headers({ 'retry-after': new Date(Date.now() + 20_000).toUTCString() }))).toBeGreaterThanOrEqual(19);
  expect(retryAfter(new Headers({}))).toBe(1);
  expect(retryAfter(undefined)).toBe(1);
});

describe('pinnedFetch', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-seen-host': req.headers.host ?? '' });
      res.end(`${req.method} ${req.url}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test('connects to the checked addresses, whatever the name resolves to now; other origins are refused', async () => {
    // model.internal resolves nowhere on this machine: only the pinned answer gets the request there.
    const checked = await checkOutboundUrl(`http://model.internal:${port}/v1`, {
      allow: ['127.0.0.1'],
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    const f = pinnedFetch(checked);
    const res = await f(`http://model.internal:${port}/v1/chat/completions`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-seen-host')).toBe(`model.internal:${port}`);
    expect(await res.text()).toBe('POST /v1/chat/completions');
    await expect(f(`http://elsewhere.internal:${port}/v1/x`)).rejects.toThrow(/refused/);
  });
});

describe("an account's baseUrl is checked again when a call is made", () => {
  test('a name that now resolves to the metadata address is refused (address_not_allowed)', async () => {
    const catalogue = loadCatalogue();
    const row = { account_id: 'acct_1', provider: 'openai', base_url: 'http://models.example.com/v1' };
    const keys = { store: { get: async () => row }, open: () => 'sk-x' } as unknown as ProviderKeys;
    let answer = '93.184.216.34';
    const inference = new Inference({
      catalogue,
      settings: modelsSettings({}),
      keys,
      dev: () => ({ url: 'http://127.0.0.1:1/v1', apiKey: 'x' }),
      lookup: async () => [{ address: answer, family: 4 }],
      adapters: {
        openai: async function* () {
          yield { end: { inputTokens: 1, outputTokens: 1, finishReason: 'stop' as const } };
        },
      },
    });
    const p: Principal = { kind: 'agent', agentId: 'agt_1', accountId: 'acct_1', channel: 'internal' };
    const req = {
      model: 'openai/gpt-4o',
      messages: [{ role: 'user', content: 'hi', toolCalls: [], toolCallId: '', name: '' }],
      tools: [],
      chargeKey: '',
    };
    const run = async () => {
      const out = [];
      for await (const e of inference.infer(p, req, new AbortController().signal)) out.push(e);
      return out;
    };
    expect((await run())[0]!.usage).toMatchObject({ ownKey: true, cost: '0.0000125' });
    answer = '169.254.169.254';
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('address_not_allowed');
  });
});

describe('the development model server', () => {
  test('answers JSON without stream, and refuses a wrong key, an unknown model and other paths as OpenAI does', async () => {
    const OpenAI = (await import('openai')).default;
    const { startDevModelServer } = await import('@svc/models');
    const dev = await startDevModelServer();
    try {
      const client = new OpenAI({ apiKey: dev.apiKey, baseURL: dev.url, maxRetries: 0 });
      const res = await client.chat.completions.create({ model: 'svc/dev', messages: [{ role: 'user', content: '/tool whoami {"a":1}' }] });
      expect(res.choices[0]!.finish_reason).toBe('tool_calls');
      expect(res.choices[0]!.message.tool_calls).toEqual([
        { id: 'call_dev_1', type: 'function', function: { name: 'whoami', arguments: '{"a":1}' } },
      ]);
      const text = await client.chat.completions.create({ model: 'svc/dev', messages: [{ role: 'user', content: 'ping' }] });
      expect(text.choices[0]!.message.content).toBe('dev: ping');
      expect(text.usage).toEqual({ prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });

      const wrong = new OpenAI({ apiKey: 'nope', baseURL: dev.url, maxRetries: 0 });
      await expect(wrong.chat.completions.create({ model: 'svc/dev', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
        status: 401,
      });
      await expect(client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
        status: 404,
      });
      expect((await fetch(`${dev.url}/models`)).status).toBe(404);
      expect(dev.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    } finally {
      await dev.close();
    }
  });
});
