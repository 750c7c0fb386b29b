import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { mcp } from '@svc/proto';

import { startTestStack, type TestStack } from './support/stack';

/**
 * The mcp service's ServeHttp RPC: the MCP endpoint over gRPC, as a gateway of the previous release
 * reaches it during an upgrade (this release's gateway serves POST /mcp itself). Called here as
 * such a gateway calls it: the caller's principal on channel mcp, the HTTP exchange as it came.
 */

let t: TestStack;
let signer: PrincipalSigner;

beforeAll(async () => {
  t = await startTestStack();
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

const client = () => t.stack.registry.client('mcp', mcp.McpServiceService, 'svc.mcp.v1.McpService');

/** A new person, and their principal as the gateway signs it for channel `channel`. */
async function person(name: string, channel: Principal['channel'] = 'mcp') {
  const created = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
  const me = (await t.ok('GET', '/me', created.key)).body;
  const principal: Principal = { kind: 'human', userId: me.userId, accountId: me.accountId, keyId: me.keyId ?? undefined, channel };
  return { accountId: me.accountId as string, token: (await signer.sign(principal)).token };
}

const HEADERS = [
  { name: 'content-type', value: 'application/json' },
  { name: 'accept', value: 'application/json, text/event-stream' },
  { name: 'mcp-protocol-version', value: '2025-11-25' },
];

let id = 0;
/** One JSON-RPC exchange through ServeHttp: the HTTP status and the parsed body. */
async function exchange(token: string, method: string, params: unknown, httpMethod = 'POST') {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }));
  const res = await client().serveHttp({ method: httpMethod, url: 'http://gateway.example/mcp', headers: HEADERS, body }, { principalToken: token });
  const text = Buffer.from(res.body).toString('utf8');
  return { status: res.status, headers: Object.fromEntries(res.headers.map((h) => [h.name, h.value])), body: text ? JSON.parse(text) : null };
}

test('initialize, tools/list and tools/call answer as POST /mcp does, as the caller', async () => {
  const ada = await person('ada (serve http)');

  const init = await exchange(ada.token, 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'previous-gateway-test', version: '1' },
  });
  expect(init.status).toBe(200);
  expect(init.headers['content-type']).toMatch(/^application\/json/);
  expect(init.body.result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'svc' }, capabilities: { tools: {} } });

  const list = await exchange(ada.token, 'tools/list', {});
  expect(list.status).toBe(200);
  const names = list.body.result.tools.map((tool: { name: string }) => tool.name);
  expect(names.length).toBeGreaterThan(10);
  expect(typeof list.body.result.nextCursor).toBe('string');

  const who = await exchange(ada.token, 'tools/call', { name: 'whoami', arguments: {} });
  expect(who.body.result.isError).toBeUndefined();
  expect(who.body.result.structuredContent).toMatchObject({ kind: 'human', accountId: ada.accountId });

  // The channel is the caller's: authority changes are refused on it.
  const chain = await exchange(ada.token, 'tools/call', { name: 'accounts_chain', arguments: {} });
  expect(chain.body.result.structuredContent.principal).toMatchObject({ kind: 'human', channel: 'mcp' });
  expect(chain.body.result.structuredContent.canChangeAuthority).toBe(false);

  // A write and a read in the caller's drive: the tools run as the caller, in their account.
  const written = await exchange(ada.token, 'tools/call', { name: 'write_drive_file', arguments: { name: 'serve-http.txt', content: 'hello' } });
  expect(written.body.result.structuredContent).toMatchObject({ name: 'serve-http.txt', kind: 'file', size: 5 });
  const fileId = written.body.result.structuredContent.id;
  const read = await exchange(ada.token, 'tools/call', { name: 'read_drive_file', arguments: { id: fileId } });
  expect(read.body.result.structuredContent).toMatchObject({ id: fileId, content: 'hello' });

  // Another person does not see it.
  const bob = await person('bob (serve http)');
  const notBobs = await exchange(bob.token, 'tools/call', { name: 'read_drive_file', arguments: { id: fileId } });
  expect(notBobs.body.result.isError).toBe(true);
  expect(JSON.parse(notBobs.body.result.content[0].text).error.code).toMatch(/not_found/);
});

test('an unknown tool is a JSON-RPC error; GET is refused with 405', async () => {
  const ada = await person('ada (serve http errors)');
  const unknown = await exchange(ada.token, 'tools/call', { name: 'no_such_tool', arguments: {} });
  expect(unknown.status).toBe(200);
  expect(unknown.body.error ?? unknown.body.result?.isError).toBeTruthy();

  const get = await exchange(ada.token, 'tools/list', {}, 'GET');
  expect(get.status).toBe(405);
  expect(get.headers.allow).toBe('POST');
});

test('only a principal on channel mcp may use it', async () => {
  const api = await person('ada (serve http, api channel)', 'api');
  const refused = await exchange(api.token, 'tools/list', {}).then(
    () => 'answered',
    (err: unknown) => (err instanceof DomainError ? `${err.kind}/${err.code}` : String(err)),
  );
  expect(refused).toBe('forbidden/mcp_channel_required');
});
