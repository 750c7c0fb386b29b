import { Ajv2020 } from 'ajv/dist/2020';
import { z } from 'zod';

import { effectOf, reply, type Route, route, routes } from '@svc/api';
import { contentAnswer, Dispatcher, type OperationHandler } from '@svc/dispatch';
import type { Principal, Registry } from '@svc/kit';
import { callTool, derivedName, InvalidCursorError, isToolOperation, SPEC_TOOL_NAMES, ToolCatalogue } from '@svc/tools';

const catalogue = ToolCatalogue.fromRoutes(routes);

describe('the catalogue from the route table', () => {
  it('has one tool per operation a key holder may use, authority-changing ones absent', () => {
    const operations = routes.filter(isToolOperation);
    expect(catalogue.list()).toHaveLength(operations.length + 2);
    expect(
      catalogue
        .list()
        .slice(0, 2)
        .map((t) => t.name),
    ).toEqual(['search_tools', 'call_tool']);
    for (const r of routes) {
      const tools = catalogue.list().filter((t) => t.routeId === r.id);
      // A person's own decision (approving an agent's tool call) is no tool either.
      if (r.authority || r.personOnly || r.auth === 'none') expect(tools).toHaveLength(0);
      else expect(tools).toHaveLength(1);
    }
    for (const name of ['grants_create', 'grants_delete', 'accounts_members_add', 'hosts_pair', 'provider_keys_set', 'trading_limits_set']) {
      expect(catalogue.get(name)).toBeUndefined();
    }
  });

  it("uses the spec's names for the operations it names, and snake_case ids for the rest", () => {
    for (const [id, name] of Object.entries(SPEC_TOOL_NAMES)) {
      const r = routes.find((x) => x.id === id);
      if (!r) continue; // the route has not landed yet: its tool appears when it does
      expect(catalogue.get(name)?.routeId).toBe(id);
    }
    expect(catalogue.get('whoami')?.routeId).toBe('me.get');
    expect(catalogue.get('drive_create_folder')?.routeId).toBe('drive.createFolder');
    expect(derivedName('apiKeys.revokeByQuery')).toBe('api_keys_revoke_by_query');
    const names = catalogue.list().map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z][a-z0-9_]{0,63}$/);
  });

  it('a new route becomes a tool with no code, and a spec-named one takes its name', () => {
    const extra = route({
      id: 'threads.list',
      method: 'get',
      path: '/threads',
      summary: 'List threads.',
      tag: 'threads',
      query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
      response: z.object({ threads: z.array(z.object({ id: z.string() })), nextCursor: z.string().nullable() }),
      auth: 'key',
      principals: ['human', 'agent'],
      authority: false,
      handler: { kind: 'rpc', service: 'agents', method: 'listThreads' },
    });
    const c = ToolCatalogue.fromRoutes([...routes.filter((r) => r.id !== 'threads.list'), extra]);
    expect(c.get('list_threads')).toMatchObject({ routeId: 'threads.list', area: 'threads', annotations: { readOnlyHint: true } });
  });

  it('derives annotations from the operation’s declared effect', () => {
    expect(catalogue.get('list_drive')!.annotations).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(catalogue.get('drive_delete')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    expect(catalogue.get('default_agents_set')!.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(catalogue.get('trade_order')!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false, openWorldHint: true });
    expect(catalogue.get('host_call')!.annotations.openWorldHint).toBe(true);
    expect(catalogue.get('run_code')!.annotations.openWorldHint).toBe(false);
  });

  it('takes every hint from a declared effect: each POST, PUT and PATCH declares one, and what deletes or overwrites is destructive', () => {
    for (const r of routes) {
      if (r.method !== 'get' && r.method !== 'delete')
        expect([r.id, r.effect]).toEqual([r.id, expect.stringMatching(/^(reads|creates|updates|deletes|overwrites)$/)]);
    }
    const tool = (id: string) => catalogue.list().find((t) => t.routeId === id);
    for (const t of catalogue.list().filter((x) => x.routeId)) {
      const r = routes.find((x) => x.id === t.routeId)!;
      // A name that says it removes, cancels, ends or resets something is destructive, whatever its method.
      if (
        /(^|\.)(delete\w*|remove\w*|revoke(ByQuery)?|cancel\w*|close\w*|clear\w*|reset|rotate|pop|unpair|rollback)$/.test(r.id) &&
        r.id !== 'sites.rollback'
      ) {
        expect([r.id, t.annotations.destructiveHint]).toEqual([r.id, true]);
      }
      expect([r.id, t.annotations.readOnlyHint]).toEqual([r.id, effectOf(r) === 'reads']);
    }
    // The operations the hints once had wrong (by the HTTP verb).
    for (const id of ['drive.batchDelete', 'meApiKeys.rotate', 'trading.cancel', 'trading.positions.closeAll', 'memory.deleteMany'])
      expect([id, tool(id)!.annotations.destructiveHint]).toEqual([id, true]);
    for (const id of [
      'trading.account',
      'models.countTokens',
      'models.estimateCost',
      'drive.readMany',
      'memory.getMany',
      'schedules.preview',
      'code.check',
      'trading.orders.preview',
    ])
      expect([id, tool(id)!.annotations.readOnlyHint]).toEqual([id, true]);
    for (const id of [
      'trading.watchlists.create',
      'trading.alerts.create',
      'trading.journal.create',
      'trading.orders.preview',
      'trading.watchlists.list',
    ])
      expect([id, tool(id)!.annotations.openWorldHint]).toEqual([id, false]);
    // A new version of a file keeps the old one (docs/drive.md, "Versions"): an update, not destructive.
    expect(tool('drive.writeText')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
  });

  it('gives every tool a valid JSON Schema of object arguments and of an object result', () => {
    const ajv = new Ajv2020({ strict: false });
    for (const t of catalogue.list()) {
      expect(t.inputSchema.type).toBe('object');
      expect(() => ajv.compile(t.inputSchema)).not.toThrow();
      if (t.outputSchema) {
        expect(t.outputSchema.type).toBe('object');
        expect(() => ajv.compile(t.outputSchema!)).not.toThrow();
      }
      expect(t.title.length).toBeGreaterThan(0);
      expect(t.description.length).toBeGreaterThan(10);
    }
  });

  it('describes every argument of every tool, and every tool in a sentence without its HTTP route', () => {
    const undescribed: string[] = [];
    const walk = (schema: Record<string, any>, at: string) => {
      for (const [key, prop] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, any>>)) {
        if (typeof prop.description !== 'string' || prop.description.trim().length < 8) undescribed.push(`${at}.${key}`);
        walk(prop, `${at}.${key}`);
        if (prop.items) walk(prop.items, `${at}.${key}[]`);
      }
    };
    for (const t of catalogue.list()) {
      walk(t.inputSchema as Record<string, any>, t.name);
      expect([t.name, t.description.length >= 40]).toEqual([t.name, true]);
      expect([t.name, t.description]).not.toEqual([t.name, expect.stringMatching(/\((GET|POST|PUT|PATCH|DELETE) \/v1\//)]);
    }
    expect(undescribed).toEqual([]);
  });

  it('merges path, query, headers and body into one object of arguments', () => {
    const write = catalogue.get('write_drive_file')!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(write.properties).sort()).toEqual([
      'content',
      'contentType',
      'encoding',
      'ifMatch',
      'ifNoneMatch',
      'name',
      'parentId',
      'projectId',
    ]);
    expect(write.required).toEqual(['content']);
    const update = catalogue.get('drive_update')!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(update.properties).sort()).toEqual(['id', 'ifMatch', 'name', 'parentId']);
    expect(update.required).toContain('id');
  });

  it('pages the list with opaque cursors, and refuses a cursor it did not hand out', () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = catalogue.page(cursor, 7);
      expect(page.tools.length).toBeLessThanOrEqual(7);
      seen.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(catalogue.list().map((t) => t.name));
    expect(() => catalogue.page('bogus', 7)).toThrow(InvalidCursorError);
    expect(() => catalogue.page(Buffer.from('t99999').toString('base64url'), 7)).toThrow(InvalidCursorError);
  });

  it('ranks search results by name, then title, then description, and filters by annotations and area', () => {
    expect(catalogue.search('read_drive_file')[0]!.name).toBe('read_drive_file');
    expect(catalogue.search('read file')[0]!.name).toBe('read_drive_file');
    const orders = catalogue.search('order', { readOnly: true });
    expect(orders.length).toBeGreaterThan(0);
    for (const t of orders) expect(t.annotations.readOnlyHint).toBe(true);
    expect(catalogue.search('', { area: 'drive' }).every((t) => t.area === 'drive')).toBe(true);
    expect(catalogue.search('zzzz qqqq')).toEqual([]);
    expect(catalogue.search('', {}).length).toBe(catalogue.list().length - 2);
  });
});

// callTool against a dispatcher of test operations (local handlers: no service behind them).
const human: Principal = { kind: 'human', userId: 'acct_a', accountId: 'acct_a', keyId: 'key_a', channel: 'mcp' };
const agent: Principal = { kind: 'agent', agentId: 'agt_a', accountId: 'acct_a', keyId: 'key_b', channel: 'mcp' };
const ctx = (p: Principal = human) => ({ auth: { principal: p, token: 't' }, requestId: 'req_1' });

const testRoutes: Route[] = [
  route({
    id: 'notes.put',
    method: 'put',
    path: '/notes/:id',
    summary: 'Put a note.',
    tag: 'notes',
    params: z.object({ id: z.string().regex(/^n\d+$/) }),
    query: z.object({ dryRun: z.enum(['true', 'false']).optional() }),
    headers: z.object({ 'if-match': z.string().optional() }),
    body: z.object({ text: z.string().max(10), id: z.string().optional() }),
    response: z.object({ id: z.string(), text: z.string(), ifMatch: z.string().nullable(), dryRun: z.boolean() }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'notes.put' },
  }),
  route({
    id: 'notes.grant',
    method: 'post',
    path: '/notes/grants',
    summary: 'Grant something.',
    tag: 'notes',
    body: z.object({ to: z.string() }),
    response: z.object({ ok: z.boolean() }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: { kind: 'local', name: 'notes.grant' },
  }),
  route({
    id: 'notes.humans',
    method: 'get',
    path: '/notes/humans',
    summary: 'Only people may.',
    tag: 'notes',
    response: z.array(z.string()),
    auth: 'key',
    principals: ['human'],
    authority: false,
    handler: { kind: 'local', name: 'notes.humans' },
  }),
  route({
    id: 'notes.read',
    method: 'get',
    path: '/notes/:id/content',
    summary: 'Read a note’s bytes.',
    tag: 'notes',
    params: z.object({ id: z.string() }),
    response: z.unknown(),
    answer: 'bytes',
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'notes.read' },
  }),
  route({
    id: 'notes.upload',
    method: 'post',
    path: '/notes/upload',
    summary: 'Upload a note’s bytes.',
    tag: 'notes',
    query: z.object({ name: z.string() }),
    content: { kinds: ['bytes'], description: 'bytes' },
    response: z.object({ name: z.string(), size: z.number(), type: z.string().nullable(), hex: z.string() }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'notes.upload' },
  }),
];

const stored = new Map<string, Buffer>([
  ['n1', Buffer.from('hello\n')],
  ['n2', Buffer.from([0xff, 0x00, 0x01])],
]);

const handlers: Record<string, OperationHandler> = {
  'notes.put': async (input) =>
    reply(
      { id: input.params.id, text: input.body.text, ifMatch: input.headers['if-match'] ?? null, dryRun: input.query.dryRun === 'true' },
      { headers: { ETag: '"x"' } },
    ),
  'notes.grant': async () => ({ ok: true }),
  'notes.humans': async () => ['a', 'b'],
  'notes.read': async (input) => {
    const bytes = stored.get(input.params.id)!;
    return contentAnswer({
      header: {
        item: {
          id: input.params.id,
          name: `${input.params.id}.bin`,
          etag: '"e"',
          size: bytes.length,
          contentType: 'application/octet-stream',
        } as never,
        notModified: false,
        partial: false,
        rangeNotSatisfiable: false,
        start: 0,
        end: bytes.length - 1,
      },
      body: (async function* () {
        yield bytes;
      })(),
      cancel: () => {},
    });
  },
  'notes.upload': async (input) => {
    const chunks: Buffer[] = [];
    for await (const c of input.content!.stream) chunks.push(c);
    const b = Buffer.concat(chunks);
    return { name: input.query.name, size: b.length, type: input.content!.type ?? null, hex: b.toString('hex') };
  },
};

describe('callTool', () => {
  const dispatcher = new Dispatcher({ registry: {} as Registry, routes: testRoutes, handlers });
  const c = ToolCatalogue.fromRoutes(testRoutes);

  it('splits the arguments into path, query, header and body, and answers with the operation’s result', async () => {
    const r = await callTool(dispatcher, c, 'notes_put', { id: 'n1', text: 'hi', ifMatch: '"v1"', dryRun: 'true' }, ctx());
    expect(r).toEqual({ isError: false, structuredContent: { id: 'n1', text: 'hi', ifMatch: '"v1"', dryRun: true } });
  });

  it('answers a bad call with a tool error carrying the contract’s code and message, never a throw', async () => {
    const bad = [
      ['notes_put', { id: 'n1', text: 'far too long a note' }, 'invalid_request'],
      ['notes_put', { id: 'x', text: 'hi' }, 'invalid_request'],
      ['notes_put', { id: 'n1', text: 'hi', colour: 'red' }, 'invalid_request'],
      ['notes_put', { id: 7, text: 'hi' }, 'invalid_request'],
      ['notes_put', { text: 'hi' }, 'invalid_request'],
      ['notes_put', [1, 2], 'invalid_request'],
      ['notes_put', 'text', 'invalid_request'],
      ['nope', {}, 'unknown_tool'],
      ['notes_grant', { to: 'someone' }, 'unknown_tool'],
      ['call_tool', { name: 'notes_grant', arguments: { to: 'x' } }, 'unknown_tool'],
      ['call_tool', { name: 'call_tool', arguments: {} }, 'invalid_request'],
      ['call_tool', {}, 'invalid_request'],
      ['search_tools', { limit: 0 }, 'invalid_request'],
      ['search_tools', { area: 'nowhere' }, 'invalid_request'],
    ] as const;
    for (const [name, args, code] of bad) {
      const r = await callTool(dispatcher, c, name, args, ctx());
      expect(r.isError).toBe(true);
      expect(r.structuredContent.error).toMatchObject({ code, requestId: 'req_1' });
      expect(typeof (r.structuredContent.error as { message: string }).message).toBe('string');
    }
  });

  it('applies the same principal rules as the API', async () => {
    const r = await callTool(dispatcher, c, 'notes_humans', {}, ctx(agent));
    expect(r.structuredContent.error).toMatchObject({ code: 'principal_not_allowed' });
    const ok = await callTool(dispatcher, c, 'notes_humans', {}, ctx());
    expect(ok).toEqual({ isError: false, structuredContent: { result: ['a', 'b'] } });
    const anon = await callTool(dispatcher, c, 'notes_humans', {}, { requestId: 'r' });
    expect(anon.structuredContent.error).toMatchObject({ code: 'missing_api_key' });
  });

  it('call_tool calls a tool by name; search_tools finds it with its schema', async () => {
    const viaCall = await callTool(dispatcher, c, 'call_tool', { name: 'notes_put', arguments: { id: 'n2', text: 'x' } }, ctx());
    expect(viaCall.structuredContent).toMatchObject({ id: 'n2', text: 'x' });
    const found = await callTool(dispatcher, c, 'search_tools', { query: 'upload' }, ctx());
    const tools = found.structuredContent.tools as Array<{ name: string; inputSchema: unknown }>;
    expect(tools[0]!.name).toBe('notes_upload');
    expect(tools[0]!.inputSchema).toEqual(c.get('notes_upload')!.inputSchema);
  });

  it('writes content given as text or base64, and reads bytes back as text or base64', async () => {
    const text = await callTool(dispatcher, c, 'notes_upload', { name: 'a.txt', content: 'héllo', contentType: 'text/plain' }, ctx());
    expect(text.structuredContent).toEqual({ name: 'a.txt', size: 6, type: 'text/plain', hex: Buffer.from('héllo').toString('hex') });
    const bin = await callTool(
      dispatcher,
      c,
      'notes_upload',
      { name: 'b', content: Buffer.from([0, 1, 255]).toString('base64'), encoding: 'base64' },
      ctx(),
    );
    expect(bin.structuredContent).toMatchObject({ size: 3, type: null, hex: '0001ff' });
    const broken = await callTool(dispatcher, c, 'notes_upload', { name: 'b', content: '!!notbase64', encoding: 'base64' }, ctx());
    expect(broken.structuredContent.error).toMatchObject({ code: 'invalid_request' });
    const missing = await callTool(dispatcher, c, 'notes_upload', { name: 'b' }, ctx());
    expect(missing.structuredContent.error).toMatchObject({ code: 'invalid_request' });

    const read = await callTool(dispatcher, c, 'notes_read', { id: 'n1' }, ctx());
    expect(read.structuredContent).toMatchObject({ encoding: 'utf8', content: 'hello\n', etag: '"e"', size: 6, range: null, notModified: false });
    const raw = await callTool(dispatcher, c, 'notes_read', { id: 'n2' }, ctx());
    expect(raw.structuredContent).toMatchObject({ encoding: 'base64', content: Buffer.from([0xff, 0, 1]).toString('base64') });
    const asText = await callTool(dispatcher, c, 'notes_read', { id: 'n2', encoding: 'utf8' }, ctx());
    expect(asText.structuredContent.error).toMatchObject({ code: 'invalid_request' });
  });
});
