import { routes } from '@svc/api';
import { isToolOperation, ToolCatalogue, toolName } from '@svc/tools';

import { legacyClient, listAll, type McpTestClient, modernClient, outcome, rawPost } from '../support/mcp';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * POST /mcp from outside, with real MCP clients: the v1 SDK as a 2025-11-25 client (initialize,
 * stateless) and the v2 SDK pinned to 2026-07-28 (server/discover, the per-request envelope and
 * headers). Keys, origins, methods, pagination, tools against the real services, tenancy, and the
 * authority that no tool has.
 */

const ALLOWED_ORIGIN = 'https://app.example.com';
const PAGE = 20;
const catalogue = ToolCatalogue.fromRoutes(routes);

let t: TestStack;
let person: string;
let other: string;
let agentKey: string;
let accountId: string;
beforeAll(async () => {
  t = await startTestStack({ S3_ENDPOINT: 'start', SVC_MCP_TOOLS_PAGE_SIZE: String(PAGE), SVC_MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN });
  const mia = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia' })).body;
  person = mia.key;
  accountId = mia.account?.id ?? (await t.ok('GET', '/me', person)).body.accountId;
  other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Olu' })).body.key;
  // Every tool (its key on /mcp is bound by the list, as its runs are: docs/mcp.md).
  const agentId = (await t.ok('POST', '/agents', person, { name: 'helper', tools: ['*'] })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, person, { name: 'k' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

// The v2 client's listTools() without a cursor gathers every page itself; the v1 client's is one page.
// The whole catalogue (X-MCP-Toolsets: all); the default set is test/mcp/mcp-surface.test.ts's.
const ALL = { 'x-mcp-toolsets': 'all' };
const clients: Array<[string, (key: string) => Promise<McpTestClient>, boolean]> = [
  ['2025-11-25 (v1 SDK)', (key) => legacyClient(t.url, key, ALL), true],
  ['2026-07-28 (v2 SDK)', (key) => modernClient(t.url, key, ALL), false],
];

describe.each(clients)('a %s client', (_name, connect, paged) => {
  let c: McpTestClient;
  beforeAll(async () => {
    c = await connect(person);
  });
  afterAll(() => c?.close());

  test('lists every tool of the catalogue, page by page, with search_tools and call_tool on the first page', async () => {
    const first = await c.listTools({});
    expect(first.tools.slice(0, 2).map((x) => x.name)).toEqual(['search_tools', 'call_tool']);
    const { tools, pages } = await listAll(c);
    if (paged) {
      expect(first.tools).toHaveLength(PAGE);
      expect(first.nextCursor).toEqual(expect.any(String));
      expect(pages).toBe(Math.ceil(catalogue.list().length / PAGE));
    }
    expect(tools.map((x) => x.name)).toEqual(catalogue.list().map((x) => x.name));
    const write = tools.find((x) => x.name === 'write_drive_file')!;
    expect(write.inputSchema.properties).toHaveProperty('ifMatch');
    expect(write.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(tools.find((x) => x.name === 'drive_batch_delete')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    // A read-only tool: the hints MCP says only matter for one that writes are left out.
    expect(tools.find((x) => x.name === 'list_drive')!.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
    // Output schemas only in the default view, for its tools (mcp-surface.test.ts): the whole
    // catalogue is an index without them, and every tool answers the same structuredContent.
    expect(tools.filter((x) => x.outputSchema).map((x) => x.name)).toEqual([]);
  });

  test('whoami answers the caller, on the mcp channel', async () => {
    const me = outcome(await c.callTool({ name: 'whoami', arguments: {} }));
    expect(me).toMatchObject({ isError: false, body: { kind: 'human', accountId } });
    const chain = outcome(await c.callTool({ name: 'accounts_chain', arguments: {} }));
    expect(chain.body.principal).toMatchObject({ kind: 'human', channel: 'mcp' });
    expect(chain.body.canChangeAuthority).toBe(false);
  });

  test('writes a drive file, reads it back, and a stale ifMatch is a tool error with the API’s code', async () => {
    const name = `notes-${Math.random().toString(36).slice(2)}.md`;
    const written = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name, content: '# hello\n', contentType: 'text/markdown' } }));
    expect(written).toMatchObject({ isError: false, body: { name, kind: 'file', size: 8, etag: expect.any(String) } });
    const id = written.body.id;
    const read = outcome(await c.callTool({ name: 'read_drive_file', arguments: { id } }));
    expect(read.body).toMatchObject({ id, content: '# hello\n', encoding: 'utf8', etag: written.body.etag, size: 8, range: null });
    const listed = outcome(await c.callTool({ name: 'list_drive', arguments: {} }));
    expect(listed.body.items.map((i: { id: string }) => i.id)).toContain(id);

    // Over the version read: replaced. Over a version that is gone: 412's code, as a tool error.
    const v2 = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name, content: 'v2', ifMatch: written.body.etag } }));
    expect(v2).toMatchObject({ isError: false, body: { id, size: 2 } });
    const stale = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name, content: 'v3', ifMatch: written.body.etag } }));
    const rest = await t.call('POST', `/drive/upload?name=${name}`, {
      key: person,
      body: 'v3',
      headers: { 'content-type': 'text/plain', 'if-match': written.body.etag },
    });
    expect(rest.status).toBe(412);
    expect(stale).toEqual({
      isError: true,
      body: { error: { code: rest.body.error.code, message: expect.any(String), requestId: expect.any(String), details: expect.any(Object) } },
    });
    const taken = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name, content: 'again' } }));
    expect(taken.body.error.code).toBe('name_taken');

    const bytes = Buffer.from([0, 159, 146, 150, 255]);
    const bin = outcome(
      await c.callTool({ name: 'write_drive_file', arguments: { name: `${name}.bin`, content: bytes.toString('base64'), encoding: 'base64' } }),
    );
    const back = outcome(await c.callTool({ name: 'read_drive_file', arguments: { id: bin.body.id } }));
    expect(back.body).toMatchObject({ encoding: 'base64', content: bytes.toString('base64') });
    const range = outcome(await c.callTool({ name: 'read_drive_file', arguments: { id: bin.body.id, range: 'bytes=1-2', encoding: 'base64' } }));
    expect(range.body).toMatchObject({ content: bytes.subarray(1, 3).toString('base64'), range: { start: 1, end: 2 } });
  });

  test('run_code runs a script, and an infinite loop ends at its time limit as a result, not a failure', async () => {
    const ok = outcome(await c.callTool({ name: 'run_code', arguments: { code: 'console.log("hi"); 6 * 7' } }));
    expect(ok.body).toMatchObject({ result: 42, error: null, logs: [{ level: 'log', message: 'hi' }] });
    const loop = outcome(await c.callTool({ name: 'run_code', arguments: { code: 'while (true) {}', timeoutMs: 300 } }));
    expect(loop).toMatchObject({ isError: false, body: { result: null, error: { code: 'timeout' } } });
    const bad = outcome(await c.callTool({ name: 'run_code', arguments: { code: '' } }));
    expect(bad.body.error.code).toBe('invalid_request');
  });

  test("another account's resources are not found, as a tool error", async () => {
    const name = `secret-${Math.random().toString(36).slice(2)}.txt`;
    const theirs = (await t.ok('POST', `/drive/upload?name=${name}`, other, 'theirs', { 'content-type': 'text/plain' })).body;
    const rest = await t.call('GET', `/drive/${theirs.id}/content`, { key: person });
    expect(rest.status).toBe(404);
    for (const name of ['read_drive_file', 'drive_get', 'drive_delete']) {
      const r = outcome(await c.callTool({ name, arguments: { id: theirs.id } }));
      expect(r).toMatchObject({ isError: true, body: { error: { code: rest.body.error.code } } });
    }
    expect((await t.call('GET', `/drive/${theirs.id}/content`, { key: other })).body).toBe('theirs');
  });

  test('search_tools finds a tool that is not on the first page, and call_tool calls it', async () => {
    const found = outcome(await c.callTool({ name: 'search_tools', arguments: { query: 'trading order book', readOnly: true } }));
    expect(found.body.tools[0].name).toBe('trading_book');
    expect(found.body.tools[0].inputSchema.properties).toHaveProperty('symbol');
    expect(catalogue.list().findIndex((x) => x.name === 'trade_venues')).toBeGreaterThanOrEqual(PAGE);
    const venues = outcome(await c.callTool({ name: 'call_tool', arguments: { name: 'trade_venues', arguments: {} } }));
    expect(venues.body.venues.map((v: { id: string }) => v.id)).toContain('paper');
  });
});

describe('an agent key through MCP', () => {
  let c: McpTestClient;
  beforeAll(async () => {
    c = await legacyClient(t.url, agentKey, ALL);
  });
  afterAll(() => c?.close());

  test('finds no tool that creates or widens a grant, and call_tool refuses every authority-changing operation', async () => {
    const { tools } = await listAll(c);
    const names = new Set(tools.map((x) => x.name));
    const authority = routes.filter((r) => r.authority);
    expect(authority.length).toBeGreaterThan(5);
    for (const r of authority) {
      expect(names.has(toolName(r))).toBe(false);
      const viaCall = outcome(await c.callTool({ name: 'call_tool', arguments: { name: toolName(r), arguments: { id: accountId } } }));
      expect(viaCall.body.error.code).toBe('unknown_tool');
    }
    const found = outcome(await c.callTool({ name: 'search_tools', arguments: { query: 'grant create standing widen' } }));
    expect(found.body.tools.length).toBeGreaterThan(0);
    for (const x of found.body.tools) expect(authority.map(toolName)).not.toContain(x.name);
    // Every operation that is a tool, and nothing else.
    expect(tools.length).toBe(routes.filter(isToolOperation).length + 2);
  });

  test('acts as the agent, with the API’s rules', async () => {
    expect(outcome(await c.callTool({ name: 'whoami', arguments: {} })).body).toMatchObject({ kind: 'agent', accountId });
    const owner = outcome(await c.callTool({ name: 'accounts_members_list', arguments: { id: accountId } }));
    const rest = await t.call('GET', `/accounts/${accountId}/members`, { key: agentKey });
    if (rest.status >= 400) expect(owner.body.error.code).toBe(rest.body.error.code);
    else expect(owner.isError).toBe(false);
  });
});

describe('the endpoint over HTTP', () => {
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

  test('no key, a bad key: 401 with the contract body before any MCP processing', async () => {
    const none = await rawPost(t.url, list);
    expect(none.status).toBe(401);
    expect(none.body).toEqual(ERROR_BODY);
    expect(none.body.error.code).toBe('missing_api_key');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const bad = await rawPost(t.url, 'not even json', { key: 'svc_' + '0'.repeat(64) });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('invalid_api_key');
  });

  test('an Origin that is not allowed is 403 before authentication; an allowed one gets CORS', async () => {
    const evil = await rawPost(t.url, list, { headers: { origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    expect(evil.body.error.code).toBe('origin_not_allowed');
    const evilWithKey = await rawPost(t.url, list, { key: person, headers: { origin: 'http://localhost:3000' } });
    expect(evilWithKey.status).toBe(403);
    const good = await rawPost(t.url, { ...list, method: 'tools/list' }, { key: person, headers: { origin: ALLOWED_ORIGIN } });
    expect(good.status).toBe(200);
    expect(good.body.result.tools).toHaveLength(PAGE);
    expect(good.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
    const preflight = await fetch(`${t.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const noCors = await fetch(`${t.url}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(noCors.status).toBe(403);
    expect(noCors.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('GET and DELETE are 405 (no sessions, no server-initiated stream)', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const res = await t.call(method, '/mcp', { key: person });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body.error.code).toBe('method_not_allowed');
    }
    expect((await t.call('GET', '/v1/mcp', { key: person })).status).toBe(405);
  });

  test('malformed messages get well-formed JSON-RPC errors; batches are refused', async () => {
    const h = { 'mcp-protocol-version': '2025-11-25' };
    const parse = await rawPost(t.url, '{"jsonrpc": "2.0", "id": 1,', { key: person, headers: h });
    expect(parse.status).toBe(400);
    expect(parse.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    const batch = await rawPost(t.url, [list, { ...list, id: 2 }], { key: person, headers: h });
    expect(batch.status).toBe(400);
    expect(batch.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
    const notRpc = await rawPost(t.url, '"hello"', { key: person, headers: h });
    expect(notRpc.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
    const unknown = await rawPost(t.url, { jsonrpc: '2.0', id: 3, method: 'no/such/method' }, { key: person, headers: h });
    expect(unknown.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32601 } });
    const text = await rawPost(t.url, JSON.stringify(list), { key: person, headers: { ...h, 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });

  test('2025: a stateless initialize, then requests on their own, with no session id', async () => {
    const init = await rawPost(
      t.url,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      { key: person },
    );
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toMatch(/^application\/json/);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.body.result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'svc' }, capabilities: { tools: {} } });
    const page = await rawPost(t.url, list, { key: person, headers: { 'mcp-protocol-version': '2025-11-25' } });
    expect(page.body.result.tools).toHaveLength(PAGE);
    const badCursor = await rawPost(
      t.url,
      { ...list, params: { cursor: 'nope' } },
      { key: person, headers: { 'mcp-protocol-version': '2025-11-25' } },
    );
    expect(badCursor.body.error.code).toBe(-32602);
  });

  test('2025: the checks of an exchange: Accept, the protocol version header, a JSON-RPC message; a notification is accepted', async () => {
    const h = { 'mcp-protocol-version': '2025-11-25' };
    const accept = await rawPost(t.url, list, { key: person, headers: { ...h, accept: 'application/json' } });
    expect([accept.status, accept.body.error.code]).toEqual([406, -32000]);
    const version = await rawPost(t.url, list, { key: person, headers: { 'mcp-protocol-version': '1999-01-01' } });
    expect([version.status, version.body.error.code]).toEqual([400, -32000]);
    expect(version.body.error.message).toContain('Unsupported protocol version: 1999-01-01');
    const notRpc = await rawPost(t.url, { hello: 'world' }, { key: person, headers: h });
    expect([notRpc.status, notRpc.body.id, notRpc.body.error.code]).toEqual([400, null, -32600]);
    const note = await rawPost(t.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { key: person, headers: h });
    expect([note.status, note.body]).toEqual([202, null]);
    // With no header, a request is of the SDK's default revision.
    expect((await rawPost(t.url, list, { key: person })).body.result.tools).toHaveLength(PAGE);
  });

  test('2026-07-28: server/discover, and the Mcp-Method header checked against the body', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const headers = { 'mcp-protocol-version': '2026-07-28' };
    const discover = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } },
      { key: person, headers: { ...headers, 'mcp-method': 'server/discover' } },
    );
    expect([discover.status, discover.body]).toEqual([200, expect.anything()]);
    expect(discover.body.result.supportedVersions).toContain('2026-07-28');
    const mismatch = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta } },
      { key: person, headers: { ...headers, 'mcp-method': 'tools/call' } },
    );
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
    const call = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: meta } },
      { key: person, headers: { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'whoami' } },
    );
    expect(call.status).toBe(200);
    expect(call.body.result.structuredContent).toMatchObject({ accountId });
  });

  test("2026-07-28: a request the endpoint serves itself answers as the SDK handler answers it; the others get the revision's refusals", async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const post = (id: number, method: string, params: Record<string, unknown>, headers: Record<string, string>) =>
      rawPost(
        t.url,
        { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } },
        { key: person, headers: { 'mcp-protocol-version': '2026-07-28', ...headers } },
      );
    const whoami = { name: 'whoami', arguments: {} };
    // The name as sent (served here) and as a Base64 sentinel (served by the SDK's handler): the same answer.
    const plain = await post(1, 'tools/call', whoami, { 'mcp-method': 'tools/call', 'mcp-name': 'whoami' });
    const encoded = await post(1, 'tools/call', whoami, {
      'mcp-method': 'tools/call',
      'mcp-name': `=?base64?${Buffer.from('whoami').toString('base64')}?=`,
    });
    expect([plain.status, encoded.status]).toEqual([200, 200]);
    expect(plain.body).toEqual(encoded.body);
    expect(plain.headers.get('content-type')).toBe(encoded.headers.get('content-type'));
    expect(plain.body.result.structuredContent).toMatchObject({ accountId });
    // A tool error is a result; an unknown tool an error in the answer (200), as the SDK answers them.
    const bad = await post(
      2,
      'tools/call',
      { name: 'read_drive_file', arguments: { path: 42 } },
      { 'mcp-method': 'tools/call', 'mcp-name': 'read_drive_file' },
    );
    expect([bad.status, bad.body.result.isError]).toEqual([200, true]);
    const unknown = await post(3, 'tools/call', { name: 'no_such_tool', arguments: {} }, { 'mcp-method': 'tools/call', 'mcp-name': 'no_such_tool' });
    expect(unknown.status).toBe(200);
    expect(unknown.body.id).toBe(3);
    expect(unknown.body.error.code).toBe(-32602);
    // Standard headers missing or disagreeing: 400 with the header-mismatch error (-32020).
    for (const headers of [{ 'mcp-method': 'tools/call' }, { 'mcp-method': 'tools/call', 'mcp-name': 'get_credits' }, { 'mcp-name': 'whoami' }]) {
      const r = await post(4, 'tools/call', whoami, headers);
      expect([r.status, r.body.error?.code]).toEqual([400, -32020]);
    }
    const noVersion = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: meta } },
      { key: person, headers: { 'mcp-method': 'tools/list' } },
    );
    expect([noVersion.status, noVersion.body.error?.code]).toEqual([400, -32020]);
    // A method the server does not have (ping is not in this revision): 404 with -32601, from the revision's dispatch ladder.
    for (const method of ['prompts/list', 'ping']) {
      const missing = await post(6, method, {}, { 'mcp-method': method });
      expect([missing.status, missing.body.id, missing.body.error?.code]).toEqual([404, 6, -32601]);
    }
    // tools/list, served here, with the id given; a bad cursor is the SDK's invalid-params error.
    const list = await post(7, 'tools/list', {}, { 'mcp-method': 'tools/list' });
    expect([list.status, list.body.id, list.body.result.tools.length]).toEqual([200, 7, PAGE]);
    const cursor = await post(8, 'tools/list', { cursor: 'nope' }, { 'mcp-method': 'tools/list' });
    expect([cursor.status, cursor.body.id, cursor.body.error?.code]).toEqual([200, 8, -32602]);
  });
});
