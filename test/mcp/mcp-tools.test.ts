import { routes } from '@svc/api';
import { ToolCatalogue } from '@svc/tools';

import { legacyClient, type McpTestClient, modernClient, outcome } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';
import { AREA_STEPS } from '../support/tool-steps';
import type { State, Step } from '../support/tool-steps/types';

/**
 * Every tool of the catalogue through a real MCP client: a valid call answers a structured result
 * (which the client checks against the tool's output schema), an invalid one a tool error with
 * the API's code; neither is ever a protocol failure or a 500. Fixtures are made by the calls
 * themselves, in order (what a later call needs, an earlier one created). Each area's steps are in
 * test/support/tool-steps/; a tool without a step fails the first test (and is still called, and
 * must answer a result or a tool error).
 */

const catalogue = ToolCatalogue.fromRoutes(routes);
const Z26 = 'z'.repeat(26);

const working = (id: string, question: string) => ({
  workingChanges: { constraints: [{ id, question, answer: 'yes' }], exemplars: [], comparisons: [] },
});

const STEPS: Step[] = [
  { tool: 'search_tools', valid: () => ({ query: 'drive file', limit: 5 }), invalid: () => ({ limit: 0 }) },
  { tool: 'call_tool', valid: () => ({ name: 'whoami', arguments: {} }), invalid: () => ({ name: 'grants_create', arguments: {} }) },
  { tool: 'whoami', valid: () => ({}) },
  { tool: 'accounts_list', valid: () => ({ limit: 5 }), invalid: () => ({ limit: 0 }) },
  { tool: 'accounts_chain', valid: () => ({}) },
  { tool: 'accounts_get', valid: (s) => ({ id: s.accountId }), invalid: (s) => ({ id: s.otherAccountId }) },
  { tool: 'accounts_members_list', valid: (s) => ({ id: s.orgId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'accounts_settings_get', valid: (s) => ({ id: s.accountId }), invalid: (s) => ({ id: s.otherAccountId }) },
  { tool: 'grants_list', valid: (s) => ({ id: s.accountId }), invalid: () => ({ id: `acct_${Z26}` }) },
  { tool: 'grants_held', valid: () => ({}), invalid: () => ({ limit: 1000 }) },
  { tool: 'signing_key_get', valid: (s) => ({ id: s.accountId }), invalid: (s) => ({ id: s.otherAccountId }) },
  {
    tool: 'signatures_sign',
    valid: (s) => ({ id: s.accountId, payload: { hello: 'world' } }),
    invalid: (s) => ({ id: s.accountId }),
    keep: (s, b) => (s.signature = b.signature),
  },
  { tool: 'signatures_verify', valid: (s) => ({ id: s.accountId, signature: s.signature }), invalid: (s) => ({ id: s.accountId }) },
  { tool: 'list_hosts', valid: (s) => ({ id: s.accountId }), invalid: () => ({ id: 'nope' }) },
  {
    tool: 'host_call',
    valid: (s) => ({ hostId: s.hostId, tool: 'echo', arguments: { said: 'hi' } }),
    invalid: (s) => ({ hostId: s.hostId, tool: 'not a tool name!' }),
  },
  { tool: 'accounts_audit', valid: (s) => ({ id: s.accountId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'agents_create', valid: () => ({ name: 'tool agent' }), invalid: () => ({ name: '' }), keep: (s, b) => (s.agentId = b.id) },
  { tool: 'agents_list', valid: () => ({}), invalid: () => ({ limit: -1 }) },
  { tool: 'agents_get', valid: (s) => ({ id: s.agentId }), invalid: () => ({ id: `agt_${Z26}` }) },
  { tool: 'agents_update', valid: (s) => ({ id: s.agentId, description: 'updated by a tool' }), invalid: (s) => ({ id: s.agentId, name: '' }) },
  { tool: 'default_agents_get', valid: () => ({}) },
  { tool: 'default_agents_set', valid: (s) => ({ agentIds: [s.agentId] }), invalid: () => ({ agentIds: 'nope' }) },
  {
    tool: 'agent_keys_create',
    valid: (s) => ({ id: s.agentId, name: 'k1' }),
    invalid: (s) => ({ id: s.agentId, name: '' }),
    keep: (s, b) => (s.agentKeyId = b.id),
  },
  { tool: 'agent_keys_list', valid: (s) => ({ id: s.agentId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'api_keys_create', valid: () => ({ name: 'tool key' }), invalid: () => ({ name: '' }), keep: (s, b) => (s.apiKeyId = b.id) },
  { tool: 'api_keys_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  { tool: 'me_api_keys_create', valid: () => ({ name: 'my key' }), invalid: () => ({}), keep: (s, b) => (s.meKeyId = b.id) },
  { tool: 'me_api_keys_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  { tool: 'list_drive', valid: () => ({}), invalid: () => ({ parentId: 'nope' }) },
  { tool: 'drive_create_folder', valid: (s) => ({ name: `folder-${s.run}` }), invalid: () => ({ name: '' }), keep: (s, b) => (s.folderId = b.id) },
  {
    tool: 'write_drive_file',
    valid: (s) => ({ name: 'notes.txt', parentId: s.folderId, content: 'hello' }),
    invalid: (s) => ({ name: 'other.txt', parentId: s.folderId, content: 'x', encoding: 'hex' }),
    keep: (s, b) => {
      s.fileId = b.id;
      s.etag = b.etag;
    },
  },
  { tool: 'drive_get', valid: (s) => ({ id: s.fileId }), invalid: () => ({ id: `file_${Z26}` }) },
  { tool: 'read_drive_file', valid: (s) => ({ id: s.fileId }), invalid: (s) => ({ id: s.fileId, range: 'bytes=100-200' }) },
  {
    tool: 'drive_replace',
    valid: (s) => ({ id: s.fileId, content: 'hello again', ifMatch: s.etag }),
    invalid: (s) => ({ id: s.fileId, content: 'no precondition' }),
  },
  { tool: 'drive_update', valid: (s) => ({ id: s.fileId, name: 'renamed.txt' }), invalid: (s) => ({ id: s.fileId, name: '' }) },
  { tool: 'profiles_create', valid: () => ({ name: 'taste' }), invalid: () => ({ name: 7 }), keep: (s, b) => (s.profileId = b.id) },
  { tool: 'profiles_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  {
    tool: 'profiles_update',
    valid: (s) => ({ id: s.profileId, profileData: working('a', 'Warm?') }),
    invalid: (s) => ({ id: s.profileId, profileData: { versions: [{ id: '' }] } }),
  },
  {
    tool: 'profiles_commit',
    valid: (s) => ({ id: s.profileId, message: 'first' }),
    invalid: (s) => ({ id: s.profileId }),
    keep: (s, b) => (s.v1 = b.id),
  },
  { tool: 'profiles_get', valid: (s) => ({ id: s.profileId }), invalid: () => ({ id: 'not-an-id' }) },
  {
    tool: 'profiles_create_branch',
    valid: (s) => ({ id: s.profileId, name: 'feature/x' }),
    invalid: (s) => ({ id: s.profileId, name: '' }),
    keep: (s, b) => (s.branchId = b.id),
  },
  {
    tool: 'profiles_checkout',
    valid: (s) => ({ id: s.profileId, branchId: s.branchId }),
    invalid: (s) => ({ id: s.profileId, branchId: `br_${Z26}` }),
  },
  { tool: 'profiles_log', valid: (s) => ({ id: s.profileId }), invalid: () => ({ id: 'x' }) },
  {
    tool: 'profiles_get_version',
    valid: (s) => ({ id: s.profileId, versionId: s.v1 }),
    invalid: (s) => ({ id: s.profileId, versionId: `ver_${Z26}` }),
  },
  { tool: 'profiles_diff', valid: (s) => ({ id: s.profileId, from: s.v1, to: s.branchId }), invalid: (s) => ({ id: s.profileId, from: 'nope!' }) },
  { tool: 'profiles_rollback', valid: (s) => ({ id: s.profileId, versionId: s.v1 }), invalid: (s) => ({ id: s.profileId }) },
  {
    tool: 'profiles_merge',
    valid: (s) => ({ id: s.profileId, sourceBranchId: s.branchId, targetBranchId: 'main', dryRun: true }),
    invalid: (s) => ({ id: s.profileId }),
  },
  {
    tool: 'profiles_delete_branch',
    before: async (s, t, key) => void (await t.ok('POST', `/profiles/${s.profileId}/checkout`, key, { branchId: 'main' })),
    valid: (s) => ({ id: s.profileId, branchId: s.branchId }),
    invalid: (s) => ({ id: s.profileId, branchId: 'main' }),
  },
  { tool: 'profiles_delete', valid: (s) => ({ id: s.profileId }), invalid: () => ({ id: 'x' }) },
  { tool: 'list_models', valid: () => ({}), invalid: () => ({ useCase: 7 }) },
  { tool: 'models_catalog', valid: () => ({}) },
  { tool: 'models_families', valid: () => ({}) },
  { tool: 'provider_keys_list', valid: () => ({}) },
  { tool: 'trade_venues', valid: () => ({}) },
  { tool: 'trade_account', valid: () => ({ venue: 'paper' }), invalid: () => ({ venue: 'nowhere' }) },
  {
    tool: 'trade_order',
    valid: () => ({ venue: 'paper', symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '0.01', price: '1' }),
    invalid: () => ({ venue: 'paper', symbol: 'ETH/USD', side: 'sideways', qty: '1' }),
    keep: (s, b) => (s.orderId = b.id),
  },
  { tool: 'trading_orders_list', valid: () => ({}), invalid: () => ({ side: 'sideways' }) },
  { tool: 'trading_orders_get', valid: (s) => ({ id: s.orderId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'trading_fills', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  { tool: 'trading_book', valid: () => ({ symbol: 'ETH/USD' }), invalid: () => ({ symbol: 'NOPE/NOPE' }) },
  { tool: 'trade_cancel', valid: (s) => ({ venue: 'paper', orderId: s.orderId }), invalid: () => ({ venue: 'paper' }) },
  { tool: 'trading_events', valid: () => ({ after: 0, limit: 5 }), invalid: () => ({ limit: 0 }) },
  { tool: 'trading_limits_list', valid: () => ({}) },
  { tool: 'trading_credentials_list', valid: () => ({}) },
  { tool: 'run_code', valid: () => ({ code: '[1, 2, 3].map((x) => x * 2)' }), invalid: () => ({ code: '' }) },
  // Last: what removes the fixtures.
  {
    tool: 'agent_keys_revoke_by_query',
    before: async (s, t, key) => void (s.agentKey2 = (await t.ok('POST', `/agents/${s.agentId}/keys`, key, { name: 'k2' })).body.id),
    valid: (s) => ({ id: s.agentId, queryId: s.agentKey2 }),
    invalid: (s) => ({ id: s.agentId }),
  },
  { tool: 'agent_keys_revoke', valid: (s) => ({ id: s.agentId, keyId: s.agentKeyId }), invalid: (s) => ({ id: s.agentId, keyId: 'nope' }) },
  { tool: 'api_keys_revoke', valid: (s) => ({ id: s.apiKeyId }), invalid: () => ({ id: 'nope' }) },
  {
    tool: 'me_api_keys_revoke_by_query',
    before: async (s, t, key) => void (s.meKey2 = (await t.ok('POST', '/me/api-keys', key, { name: 'k2' })).body.id),
    valid: (s) => ({ id: s.meKey2 }),
    invalid: () => ({ id: 'nope' }),
  },
  { tool: 'me_api_keys_revoke', valid: (s) => ({ keyId: s.meKeyId }), invalid: () => ({ keyId: 'nope' }) },
  { tool: 'get_credits', valid: () => ({}) },
  // Threads: one with the core agent (its runs answered by the development model).
  {
    tool: 'create_thread',
    valid: (s) => ({ agentId: s.agentId, title: `core ${s.run}` }),
    invalid: () => ({ agentId: `agt_${Z26}` }),
    keep: (s, b) => (s.threadId = b.id),
  },
  { tool: 'list_threads', valid: () => ({ limit: 5 }), invalid: () => ({ limit: 0 }) },
  { tool: 'get_thread', valid: (s) => ({ id: s.threadId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_update', valid: (s) => ({ id: s.threadId, title: 'renamed' }), invalid: (s) => ({ id: s.threadId, title: 'x'.repeat(300) }) },
  { tool: 'send_message', valid: (s) => ({ id: s.threadId, content: 'hello' }), invalid: (s) => ({ id: s.threadId, content: '' }) },
  { tool: 'threads_events', valid: (s) => ({ id: s.threadId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_cancel', valid: (s) => ({ id: s.threadId }), invalid: () => ({ id: `thr_${Z26}` }) },
  // Sites: one deployed from files sent inline, then again, then rolled back to the first.
  {
    tool: 'create_site',
    valid: (s) => ({ slug: `core-site-${s.run}`, title: 'core' }),
    invalid: () => ({ slug: 'Not A Slug!' }),
    keep: (s, b) => (s.siteId = b.id),
  },
  { tool: 'sites_list', valid: () => ({ limit: 5 }), invalid: () => ({ limit: 0 }) },
  { tool: 'sites_get', valid: (s) => ({ id: s.siteId }), invalid: () => ({ id: `site_${Z26}` }) },
  {
    tool: 'deploy_site',
    valid: (s) => ({ id: s.siteId, files: [{ path: 'index.html', content: '<h1>core</h1>' }] }),
    invalid: (s) => ({ id: s.siteId, files: [{ path: '../escape.html', content: 'x' }] }),
    keep: (s, b) => (s.deploymentId = b.id),
  },
  { tool: 'sites_deployments_list', valid: (s) => ({ id: s.siteId }), invalid: () => ({ id: `site_${Z26}` }) },
  {
    tool: 'sites_deployments_get',
    valid: (s) => ({ id: s.siteId, deploymentId: s.deploymentId }),
    invalid: (s) => ({ id: s.siteId, deploymentId: `dep_${Z26}` }),
  },
  {
    tool: 'sites_rollback',
    before: async (s, t, key) =>
      void (await t.ok('POST', `/sites/${s.siteId}/deployments`, key, { files: [{ path: 'index.html', content: '<h1>2</h1>' }] })),
    valid: (s) => ({ id: s.siteId, deploymentId: s.deploymentId }),
    invalid: (s) => ({ id: s.siteId, deploymentId: `dep_${Z26}` }),
  },
];

/** Last: the deletions of the fixtures the steps above (and the areas' steps) share. */
const CLEANUP: Step[] = [
  { tool: 'threads_delete', valid: (s) => ({ id: s.threadId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'sites_delete', valid: (s) => ({ id: s.siteId }), invalid: () => ({ id: `site_${Z26}` }) },
  { tool: 'drive_delete', valid: (s) => ({ id: s.fileId }), invalid: (s) => ({ id: s.fileId }) }, // gone by then: 404
  { tool: 'agents_delete', valid: (s) => ({ id: s.agentId }), invalid: () => ({ id: `agt_${Z26}` }) },
];

const ALL_STEPS: Step[] = [...STEPS, ...AREA_STEPS, ...CLEANUP];

/** The default invalid call: without the required arguments, or with one the tool does not take. */
function defaultInvalid(tool: string): Record<string, unknown> {
  const schema = catalogue.get(tool)!.inputSchema as { required?: string[] };
  return schema.required?.length ? {} : { notAnArgument: true };
}

const SERVER_FAULTS = new Set(['internal_error', 'upstream_error', 'content_missing']);

let t: TestStack;
let key: string;
const base = {} as State;
beforeAll(async () => {
  t = await startTestStack({ S3_ENDPOINT: 'start' });
  const mia = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia' })).body;
  key = mia.key;
  base.accountId = (await t.ok('GET', '/me', key)).body.accountId;
  base.orgId = (await t.ok('POST', '/accounts', key, { kind: 'organization', name: 'Mia & co' })).body.id;
  const olu = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Olu' })).body;
  base.otherAccountId = (await t.ok('GET', '/me', olu.key)).body.accountId;
  // A paired host (pairing changes authority: the API's, never a tool's) that answers on the bus.
  base.hostId = (await t.ok('POST', `/accounts/${base.accountId}/hosts`, key, { name: 'laptop' })).body.host.id;
  const bus = await t.stack.backends.bus();
  await bus.respond(`hosts.${base.hostId}.call`, async (req: any) => ({ content: [{ type: 'text', text: `ran ${req.tool}` }] }));
}, 60_000);
afterAll(() => t?.stop());

test('every tool of the catalogue has a step (a valid and an invalid call), and each step names a tool', () => {
  const stepped = new Set(ALL_STEPS.map((s) => s.tool));
  for (const s of ALL_STEPS) expect(catalogue.get(s.tool)).toBeDefined();
  expect(stepped.size).toBe(ALL_STEPS.length);
  expect(
    catalogue
      .list()
      .map((x) => x.name)
      .filter((name) => !stepped.has(name)),
  ).toEqual([]);
});

describe.each([
  ['2025-11-25 (v1 SDK)', legacyClient],
  ['2026-07-28 (v2 SDK)', modernClient],
] as const)('through a %s client', (era, connect) => {
  let c: McpTestClient;
  const s = { ...base } as State;
  beforeAll(async () => {
    Object.assign(s, base, { run: era.slice(0, 4) });
    c = await connect(t.url, key, { 'x-mcp-toolsets': 'all' });
    // The client learns the output schemas it checks results against from the list.
    await c.listTools({});
  });
  afterAll(() => c?.close());

  test('each tool: a valid call gives a structured result, an invalid one a tool error', async () => {
    const problems: string[] = [];
    const call = async (tool: string, args: Record<string, unknown>) => {
      try {
        return outcome(await c.callTool({ name: tool, arguments: args }));
      } catch (err) {
        problems.push(`${tool}: protocol failure ${(err as Error).message}`);
        return null;
      }
    };
    const steps = [
      ...ALL_STEPS,
      ...catalogue
        .list()
        .filter((x) => !ALL_STEPS.some((st) => st.tool === x.name))
        .map((x) => ({ tool: x.name }) as Step),
    ];
    for (const step of steps) {
      await step.before?.(s, t, key);
      if (step.valid) {
        const ok = await call(step.tool, step.valid(s));
        if (ok?.isError) problems.push(`${step.tool}: the valid call failed: ${JSON.stringify(ok.body)}`);
        else if (ok) {
          expect(ok.body).toEqual(expect.any(Object));
          step.keep?.(s, ok.body);
        }
      } else {
        // A tool newer than this file: a result or a tool error, never a protocol failure or a fault.
        const any = await call(step.tool, {});
        if (any?.isError && SERVER_FAULTS.has(any.body.error.code)) problems.push(`${step.tool}: ${JSON.stringify(any.body)}`);
      }
      const bad = await call(step.tool, (step.invalid ?? (() => defaultInvalid(step.tool)))(s));
      if (bad && !bad.isError) problems.push(`${step.tool}: the invalid call succeeded: ${JSON.stringify(bad.body).slice(0, 300)}`);
      else if (bad) {
        expect(bad.body.error).toEqual({
          code: expect.any(String),
          message: expect.any(String),
          requestId: expect.any(String),
          ...(bad.body.error.details ? { details: expect.anything() } : {}),
        });
        if (SERVER_FAULTS.has(bad.body.error.code) || bad.body.error.code === 'not_implemented')
          problems.push(`${step.tool}: ${JSON.stringify(bad.body)}`);
      }
    }
    expect(problems).toEqual([]);
  }, 300_000); // ~700 calls in sequence: seconds on a quiet machine, minutes on a loaded one
});
