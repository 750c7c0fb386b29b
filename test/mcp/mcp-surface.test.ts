import { routes } from '@svc/api';
import { DEFAULT_TOOLS, DEFAULT_TOOLSET, ToolCatalogue } from '@svc/tools';

import { legacyClient, type McpTestClient, modernClient, outcome, rawPost } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * What a client sees of /mcp (docs/mcp.md, "The surface"): the default set in one page under 40 KB,
 * toolsets chosen on the URL or in a header, all of them under 250 KB, read-only mode, and the
 * protocol's details (an unknown tool and a made-up cursor are JSON-RPC errors; a result's content
 * is not sent twice).
 */

const catalogue = ToolCatalogue.fromRoutes(routes);
const V25 = { 'mcp-protocol-version': '2025-11-25' };
const list = (cursor?: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: cursor ? { cursor } : {} });

let t: TestStack;
let person: string;
beforeAll(async () => {
  t = await startTestStack({ S3_ENDPOINT: 'start' });
  person = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Sam' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

/** Every page of tools/list over raw HTTP: the tools and the bytes of the answers. */
async function rawListAll(opts: { query?: string; headers?: Record<string, string> }): Promise<{ names: string[]; bytes: number; tools: any[] }> {
  const tools: any[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  do {
    const page = await rawPost(t.url, list(cursor), { key: person, query: opts.query, headers: { ...V25, ...opts.headers } });
    expect(page.status).toBe(200);
    bytes += JSON.stringify(page.body.result).length;
    tools.push(...page.body.result.tools);
    cursor = page.body.result.nextCursor;
  } while (cursor);
  return { names: tools.map((x) => x.name), bytes, tools };
}

describe.each([
  ['2025-11-25 (v1 SDK)', legacyClient],
  ['2026-07-28 (v2 SDK)', modernClient],
] as const)('a %s client', (_era, connect) => {
  let c: McpTestClient;
  beforeAll(async () => {
    c = await connect(t.url, person);
  });
  afterAll(() => c?.close());

  test('with no options lists the default set, in one page', async () => {
    const page = await c.listTools({});
    expect(page.nextCursor).toBeUndefined();
    expect(page.tools.map((x) => x.name).sort()).toEqual([...DEFAULT_TOOLSET].sort());
    for (const name of [
      'list_threads',
      'create_thread',
      'send_message',
      'get_thread',
      'list_drive',
      'read_drive_file',
      'write_drive_file',
      'whoami',
    ]) {
      expect(page.tools.find((x) => x.name === name)?.description).not.toMatch(/\((GET|POST|PUT|PATCH|DELETE) \/v1/);
    }
  });

  test('an unknown tool is a JSON-RPC error (-32602), not a tool result', async () => {
    await expect(c.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    // Through call_tool it is call_tool's result: a tool error naming the missing tool.
    const viaCall = outcome(await c.callTool({ name: 'call_tool', arguments: { name: 'no_such_tool' } }));
    expect(viaCall.body.error.code).toBe('unknown_tool');
  });

  test('every tool stays reachable: search_tools finds one outside the default set, call_tool and a direct call run it', async () => {
    const found = outcome(await c.callTool({ name: 'search_tools', arguments: { query: 'is the market open', limit: 3 } }));
    expect(found.body.tools.map((x: { name: string }) => x.name)).toContain('trading_clock');
    expect(outcome(await c.callTool({ name: 'call_tool', arguments: { name: 'trading_clock', arguments: {} } })).isError).toBe(false);
    expect(outcome(await c.callTool({ name: 'trading_clock', arguments: {} })).isError).toBe(false);
  });
});

describe('the surface over HTTP', () => {
  test('the default set is at most 40 KB; all the toolsets at most 250 KB, every tool of the catalogue', async () => {
    const def = await rawListAll({});
    expect(def.bytes).toBeLessThanOrEqual(40 * 1024);
    expect(def.names).toEqual(
      catalogue
        .list()
        .filter((x) => DEFAULT_TOOLSET.includes(x.name))
        .map((x) => x.name),
    );
    const all = await rawListAll({ query: 'toolsets=all' });
    expect(all.bytes).toBeLessThanOrEqual(250 * 1024);
    expect(all.names).toEqual(catalogue.list().map((x) => x.name));
    // Descriptions kept; output schemas only in the default view, for its tools.
    expect(all.tools.every((x) => x.description.length >= 40)).toBe(true);
    expect(all.tools.filter((x) => x.outputSchema)).toEqual([]);
    expect(def.tools.find((x) => x.name === 'read_drive_file')!.outputSchema.properties).toHaveProperty('content');
    expect(def.tools.filter((x) => x.outputSchema).every((x) => DEFAULT_TOOLSET.includes(x.name))).toBe(true);
  });

  test('toolsets by area, on the URL or in X-MCP-Toolsets; an unknown one is 400', async () => {
    const byUrl = await rawListAll({ query: 'toolsets=drive,threads' });
    const byHeader = await rawListAll({ headers: { 'x-mcp-toolsets': 'threads, drive' } });
    expect(byHeader.names).toEqual(byUrl.names);
    const want = catalogue.list().filter((x) => ['drive', 'threads', 'tools'].includes(x.area));
    expect(byUrl.names).toEqual(want.map((x) => x.name));
    const mixed = await rawListAll({ query: 'toolsets=default,trading' });
    expect(mixed.names).toContain('trading_clock');
    expect(mixed.names).toContain('whoami');
    expect(mixed.names).not.toContain('drive_tree');
    const bad = await rawPost(t.url, list(), { key: person, query: 'toolsets=drive,nowhere', headers: V25 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_toolsets');
  });

  test('read-only mode lists, finds and calls only tools without effects', async () => {
    const ro = await rawListAll({ query: 'toolsets=all&readonly=true' });
    const byName = new Map(catalogue.list().map((x) => [x.name, x]));
    expect(ro.names.length).toBeGreaterThan(50);
    for (const n of ro.names) if (n !== 'search_tools' && n !== 'call_tool') expect(byName.get(n)!.annotations.readOnlyHint).toBe(true);
    expect(ro.names).not.toContain('drive_delete');
    const c = await legacyClient(t.url, person, { 'x-mcp-readonly': 'true' });
    try {
      expect((await c.listTools({})).tools.map((x) => x.name)).not.toContain('write_drive_file');
      const write = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name: 'ro.txt', content: 'x' } }));
      expect(write.body.error.code).toBe('read_only_mode');
      const viaCall = outcome(await c.callTool({ name: 'call_tool', arguments: { name: 'drive_delete', arguments: { id: 'file_x' } } }));
      expect(viaCall.body.error.code).toBe('read_only_mode');
      const found = outcome(await c.callTool({ name: 'search_tools', arguments: { query: 'delete a file' } }));
      expect(found.body.tools.every((x: { annotations: { readOnlyHint: boolean } }) => x.annotations.readOnlyHint)).toBe(true);
      expect(outcome(await c.callTool({ name: 'list_drive', arguments: {} })).isError).toBe(false);
    } finally {
      await c.close();
    }
    const bad = await rawPost(t.url, list(), { key: person, query: 'readonly=maybe', headers: V25 });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_toolsets']);
  });

  test('a cursor the server did not hand out is a JSON-RPC error (-32602), a page offset or another view’s included', async () => {
    const first = await rawPost(t.url, list(), { key: person, query: 'toolsets=all', headers: V25 });
    const next = first.body.result.nextCursor as string;
    expect((await rawPost(t.url, list(next), { key: person, query: 'toolsets=all', headers: V25 })).body.result.tools.length).toBeGreaterThan(0);
    const madeUp = [
      'nope',
      Buffer.from('all|7').toString('base64url'),
      Buffer.from('t50').toString('base64url'),
      Buffer.from('default|50').toString('base64url'),
    ];
    for (const cursor of [...madeUp, next]) {
      // `next` belongs to the `all` view, not to the default one.
      const r = await rawPost(t.url, list(cursor), { key: person, headers: V25 });
      expect([cursor, r.body.error?.code]).toEqual([cursor, -32602]);
    }
  });

  test('a result is sent once: structuredContent, and a short text beside it', async () => {
    const big = 'a'.repeat(4 * 1024 * 1024 - 10) + '\n';
    const file = (await t.ok('POST', '/drive/upload?name=big.txt', person, big, { 'content-type': 'text/plain' })).body;
    const call = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'read_drive_file', arguments: { id: file.id } } };
    const r = await rawPost(t.url, call, { key: person, headers: V25 });
    expect(r.body.result.structuredContent.content).toBe(big);
    expect(r.body.result.content[0].text.length).toBeLessThan(20_000);
    expect(r.bytes).toBeLessThan(big.length + 20_000);
    // A short result is its own text.
    const me = await rawPost(t.url, { ...call, params: { name: 'whoami', arguments: {} } }, { key: person, headers: V25 });
    expect(JSON.parse(me.body.result.content[0].text)).toEqual(me.body.result.structuredContent);
  });
});

describe('an agent’s key on /mcp is bound by its agent’s tool list (docs/mcp.md, "Agents")', () => {
  test('limited to whoami: lists and calls only it, call_tool and search_tools included; the person’s key is unaffected', async () => {
    const agent = (await t.ok('POST', '/agents', person, { name: 'whoami only', tools: ['whoami'] })).body;
    const key = (await t.ok('POST', `/agents/${agent.id}/keys`, person, { name: 'mcp' })).body.key;
    const c = await modernClient(t.url, key);
    try {
      const names = (await c.listTools({})).tools.map((x) => x.name).sort();
      expect(names).toEqual(['call_tool', 'search_tools', 'whoami']);
      // Every toolset: still only what the list names.
      const all = await rawPost(t.url, list(), { key, query: 'toolsets=all', headers: V25 });
      expect(all.body.result.tools.map((x: { name: string }) => x.name).sort()).toEqual(['call_tool', 'search_tools', 'whoami']);
      expect(outcome(await c.callTool({ name: 'whoami', arguments: {} })).isError).toBe(false);
      const write = outcome(await c.callTool({ name: 'write_drive_file', arguments: { name: 'a.txt', content: 'x' } }));
      expect([write.isError, write.body.error.code]).toEqual([true, 'tool_not_allowed']);
      const site = outcome(await c.callTool({ name: 'call_tool', arguments: { name: 'create_site', arguments: { name: 'mine' } } }));
      expect([site.isError, site.body.error.code]).toEqual([true, 'tool_not_allowed']);
      const found = outcome(await c.callTool({ name: 'search_tools', arguments: { query: 'deploy a site' } }));
      expect(found.body.tools.map((x: { name: string }) => x.name)).not.toContain('deploy_site');
    } finally {
      await c.close();
    }
    // Nothing was written with the agent's key; the person's own key still calls what it may.
    const p = await modernClient(t.url, person);
    try {
      expect(outcome(await p.callTool({ name: 'write_drive_file', arguments: { name: 'mine.txt', content: 'x' } })).isError).toBe(false);
    } finally {
      await p.close();
    }
    expect((await t.ok('GET', '/drive', person)).body.items.map((i: { name: string }) => i.name)).not.toContain('a.txt');
  });

  test('a change to the list holds from the next request; an agent naming no tools gets the agent default set', async () => {
    const agent = (await t.ok('POST', '/agents', person, { name: 'changing', tools: ['whoami'] })).body;
    const key = (await t.ok('POST', `/agents/${agent.id}/keys`, person, { name: 'mcp' })).body.key;
    const names = async () =>
      (await rawPost(t.url, list(), { key, query: 'toolsets=all', headers: V25 })).body.result.tools.map((x: { name: string }) => x.name).sort();
    expect(await names()).toEqual(['call_tool', 'search_tools', 'whoami']);
    await t.ok('PATCH', `/agents/${agent.id}`, person, { tools: ['whoami', 'list_*'] });
    const widened = await names();
    expect(widened).toContain('list_drive');
    expect(widened).not.toContain('write_drive_file');
    await t.ok('PATCH', `/agents/${agent.id}`, person, { tools: null });
    expect(await names()).toEqual([...new Set([...DEFAULT_TOOLS, 'call_tool'])].filter((n) => n === 'call_tool' || catalogue.get(n)).sort());
  });
});
