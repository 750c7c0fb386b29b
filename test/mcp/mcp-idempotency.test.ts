import { legacyClient, type McpTestClient, modernClient, outcome } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Idempotency keys on MCP tool calls (docs/mcp.md, "Idempotency keys"; docs/reliability.md): a
 * tools/call of a POST operation with `_meta["io.svc/idempotency-key"]` is recorded by the
 * dispatcher at the keys service and replayed to a retry with the same key (no second effect); the
 * same key with other arguments is refused with 422 `idempotency_key_reused`; a refusal is recorded
 * as an answer is. Through both SDK generations' real clients.
 */

const META = 'io.svc/idempotency-key';
let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ida' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

type Call = (name: string, args: Record<string, unknown>, idempotencyKey?: string) => Promise<{ isError: boolean; body: any }>;

const caller =
  (client: McpTestClient): Call =>
  async (name, args, idempotencyKey) => {
    const params = { name, arguments: args, ...(idempotencyKey ? { _meta: { [META]: idempotencyKey } } : {}) };
    return outcome(await client.callTool(params));
  };

const folders = async (name: string) =>
  ((await t.ok('GET', '/drive?limit=200', key)).body.items as Array<{ name: string; id: string }>).filter((i) => i.name === name);

describe.each([
  ['2025-11-25 (v1 SDK)', legacyClient],
  ['2026-07-28 (v2 SDK)', modernClient],
])('%s', (generation, connect) => {
  let client: McpTestClient;
  let call: Call;
  const tag = generation.slice(0, 4);
  beforeAll(async () => {
    client = await connect(t.url, key, { 'x-mcp-toolsets': 'all' });
    call = caller(client);
  });
  afterAll(() => client?.close());

  test('the same key and arguments: the recorded answer, and no second effect', async () => {
    const name = `idem-${tag}`;
    const first = await call('drive_create_folder', { name }, `k-${tag}-1`);
    expect(first.isError).toBe(false);
    const again = await call('drive_create_folder', { name }, `k-${tag}-1`);
    expect(again).toEqual(first);
    // Through call_tool it is the same call.
    expect(await call('call_tool', { name: 'drive_create_folder', arguments: { name } }, `k-${tag}-1`)).toEqual(first);
    expect((await folders(name)).map((f) => f.id)).toEqual([first.body.id]);
  });

  test('the same key with other arguments: 422 idempotency_key_reused, and nothing made', async () => {
    const first = await call('drive_create_folder', { name: `reuse-${tag}` }, `k-${tag}-2`);
    expect(first.isError).toBe(false);
    const other = await call('drive_create_folder', { name: `other-${tag}` }, `k-${tag}-2`);
    expect(other).toMatchObject({ isError: true, body: { error: { code: 'idempotency_key_reused' } } });
    expect(await folders(`other-${tag}`)).toEqual([]);
  });

  test('without a key, or on an operation that is not a POST, every call runs', async () => {
    const name = `nokey-${tag}`;
    const a = await call('drive_create_folder', { name });
    const b = await call('drive_create_folder', { name: `${name}-2` });
    expect([a.isError, b.isError]).toEqual([false, false]);
    expect(a.body.id).not.toBe(b.body.id);
    // A read takes no key (it changes nothing): it answers as without one, twice.
    const read = await call('whoami', {}, `k-${tag}-3`);
    expect(read.isError).toBe(false);
    expect((await call('whoami', {}, `k-${tag}-3`)).body).toEqual(read.body);
  });

  test('a refusal is recorded too, as the API records it: the same call answers it again', async () => {
    const refused = await call('drive_create_folder', { name: '' }, `k-${tag}-4`);
    expect(refused).toMatchObject({ isError: true, body: { error: { code: 'invalid_request' } } });
    // The same refusal, naming the request that first answered it.
    expect((await call('drive_create_folder', { name: '' }, `k-${tag}-4`)).body.error).toEqual(refused.body.error);
    const other = await call('drive_create_folder', { name: `after-${tag}` }, `k-${tag}-4`);
    expect(other).toMatchObject({ isError: true, body: { error: { code: 'idempotency_key_reused' } } });
    expect(await folders(`after-${tag}`)).toEqual([]);
  });

  test('one key names one request on every front: the API and MCP share the record', async () => {
    // Over the API first (its body's keys in another order), then the same call through MCP.
    const name = `both-${tag}`;
    const idem = `k-${tag}-5`;
    const api = await fetch(`${t.url}/drive/folders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem },
      body: JSON.stringify({ parentId: null, name }),
    });
    expect(api.status).toBe(201);
    const made = await api.json();
    const viaMcp = await call('drive_create_folder', { name, parentId: null }, idem);
    expect(viaMcp.isError).toBe(false);
    expect(viaMcp.body.id).toBe(made.id);
    // MCP first, then the API: the API's answer is the replay.
    const second = `both2-${tag}`;
    const first = await call('drive_create_folder', { name: second }, `k-${tag}-6`);
    const replayed = await fetch(`${t.url}/v1/drive/folders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `k-${tag}-6` },
      body: ` { "name" : ${JSON.stringify(second)} } `,
    });
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect((await replayed.json()).id).toBe(first.body.id);
    expect((await folders(name)).map((f) => f.id)).toEqual([made.id]);
    expect((await folders(second)).map((f) => f.id)).toEqual([first.body.id]);
    // Another operation's call with the key is another request.
    const other = await call('agents_create', { name }, idem);
    expect(other).toMatchObject({ isError: true, body: { error: { code: 'idempotency_key_reused' } } });
  });
});
