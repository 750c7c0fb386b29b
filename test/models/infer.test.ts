import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { devAnswer } from '@svc/models';
import { models, type models_infer } from '@svc/proto';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * Inference through a real gRPC call to the models service (ModelsService.Infer, server-streaming),
 * on the development model `svc/dev`: its OpenAI-compatible server on loopback in the models
 * service, reached through the `openai` SDK adapter.
 */

let t: TestStack;
let person: { id: string; key: string };
let signer: PrincipalSigner;
beforeAll(async () => {
  t = await startTestStack();
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
  const user = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Runner' })).body;
  person = { id: user.account.id, key: user.key };
}, 60_000);
afterAll(() => t?.stop());

const client = () => t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
const asAgent = async (accountId = person.id) => {
  const p: Principal = { kind: 'agent', agentId: 'agt_runner', accountId, channel: 'internal' };
  return { principalToken: (await signer.sign(p)).token };
};

type Req = Partial<models_infer.InferRequest>;
const msg = (role: string, content: string, extra: Partial<models_infer.ChatMessage> = {}): models_infer.ChatMessage => ({
  role,
  content,
  toolCalls: [],
  toolCallId: '',
  name: '',
  ...extra,
});
const request = (r: Req): models_infer.InferRequest => ({ model: 'svc/dev', messages: [], tools: [], chargeKey: '', ...r });

/** All events of one call. */
async function infer(r: Req, opts?: { principalToken: string }): Promise<models_infer.InferEvent[]> {
  const out: models_infer.InferEvent[] = [];
  for await (const e of client().infer(request(r), opts ?? (await asAgent()))) out.push(e);
  return out;
}
const textOf = (events: models_infer.InferEvent[]) => events.map((e) => e.delta ?? '').join('');
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? `${e.kind}/${e.code}` : String(e)),
  );

describe('Infer on the development model', () => {
  test('echoes the last user message as streamed deltas, then a usage record (free, not the own key)', async () => {
    const events = await infer({ messages: [msg('system', 'be brief'), msg('user', 'hello there, model')] });
    const deltas = events.filter((e) => e.delta !== undefined);
    expect(deltas.length).toBeGreaterThan(1); // streamed in pieces, not one blob
    expect(textOf(events)).toBe('dev: hello there, model');
    const last = events[events.length - 1]!;
    expect(last.usage).toEqual({
      model: 'svc/dev',
      inputTokens: Math.ceil('be briefhello there, model'.length / 4),
      outputTokens: Math.ceil('dev: hello there, model'.length / 4),
      cost: '0',
      currency: 'USD',
      ownKey: false,
      finishReason: 'stop',
    });
    expect(events.filter((e) => e.usage)).toHaveLength(1);
    // Deterministic: the same conversation, the same answer.
    expect(await infer({ messages: [msg('system', 'be brief'), msg('user', 'hello there, model')] })).toEqual(events);
  });

  test('`/tool <name> <json>` lines request tool calls; after the results it summarises them', async () => {
    const tools = [
      { name: 'list_drive', description: 'List files', inputSchemaJson: '{"type":"object","properties":{"path":{"type":"string"}}}' },
      { name: 'whoami', description: 'Who am I', inputSchemaJson: '{"type":"object"}' },
    ];
    const ask = msg('user', 'please look\n/tool list_drive {"path": "/docs"}\n/tool whoami\n');
    const events = await infer({ messages: [ask], tools });
    expect(textOf(events)).toBe('');
    const calls = events.filter((e) => e.toolCall).map((e) => e.toolCall);
    expect(calls).toEqual([
      { id: 'call_dev_1', name: 'list_drive', argumentsJson: '{"path":"/docs"}' },
      { id: 'call_dev_2', name: 'whoami', argumentsJson: '{}' },
    ]);
    expect(events[events.length - 1]!.usage!.finishReason).toBe('tool_calls');

    const after = await infer({
      tools,
      messages: [
        ask,
        msg('assistant', '', { toolCalls: calls as models_infer.ToolCall[] }),
        msg('tool', '{"files":["a.md"]}', { toolCallId: 'call_dev_1' }),
        msg('tool', '{"id":"acct_1"}', { toolCallId: 'call_dev_2' }),
      ],
    });
    expect(textOf(after)).toBe('dev: 2 tool results:\n- list_drive: {"files":["a.md"]}\n- whoami: {"id":"acct_1"}');
    expect(after.some((e) => e.toolCall)).toBe(false);
    expect(after[after.length - 1]!.usage!.finishReason).toBe('stop');
  });

  test('arguments that are not a JSON object get an explanation, not a call', async () => {
    expect(textOf(await infer({ messages: [msg('user', '/tool whoami {nope')] }))).toMatch(/^dev: the arguments of \/tool whoami are not JSON/);
    expect(textOf(await infer({ messages: [msg('user', '/tool whoami [1]')] }))).toBe('dev: the arguments of /tool whoami must be a JSON object');
  });

  test('max_output_tokens cuts the answer with finish reason length', async () => {
    const events = await infer({ messages: [msg('user', 'x'.repeat(200))], maxOutputTokens: 5 });
    expect(textOf(events)).toBe(`dev: ${'x'.repeat(200)}`.slice(0, 20));
    expect(events[events.length - 1]!.usage).toMatchObject({ outputTokens: 5, finishReason: 'length' });
  });

  test('the pure rule matches what the server streams', () => {
    expect(devAnswer([{ role: 'user', content: 'hi' }])).toEqual({ text: 'dev: hi', toolCalls: [] });
    expect(devAnswer([{ role: 'system', content: 'x' }]).text).toBe('dev: (no user message)');
  });
});

describe('Infer refusals', () => {
  test('an unknown model is model_not_found; a model without a key is model_unavailable', async () => {
    const messages = [msg('user', 'hi')];
    expect(await codeOf(infer({ model: 'nobody/model', messages }))).toBe('not_found/model_not_found');
    expect(await codeOf(infer({ model: 'openai/gpt-4o', messages }))).toBe('unprocessable/model_unavailable');
    // The first-party model is not configured in the embedded default.
    expect(await codeOf(infer({ model: 'svc/first', messages }))).toBe('unprocessable/model_unavailable');
  });

  test('a malformed conversation is invalid_argument', async () => {
    expect(await codeOf(infer({ messages: [] }))).toBe('invalid_argument/invalid_request');
    expect(await codeOf(infer({ messages: [msg('robot', 'hi')] }))).toBe('invalid_argument/invalid_request');
    expect(await codeOf(infer({ messages: [msg('tool', 'x')] }))).toBe('invalid_argument/invalid_request');
    expect(await codeOf(infer({ messages: [msg('user', 'hi')], tools: [{ name: 'x', description: '', inputSchemaJson: '[]' }] }))).toBe(
      'invalid_argument/invalid_request',
    );
  });

  test('a call without a valid principal is refused', async () => {
    expect(await codeOf(infer({ messages: [msg('user', 'hi')] }, { principalToken: 'nope' }))).toBe('unauthenticated/invalid_principal');
  });
});
