import { type Route, routes } from '@svc/api';
import { agentsDefinition } from '@svc/clients';
import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';
import { accounts, models } from '@svc/proto';

import { sampleBody, sampleQuery, type Tenant } from '../support/authority';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * The authority matrix (DESIGN §3–4), generated from the gateway's route table so that a new route
 * cannot escape it:
 * - every route with `authority: true` answers 403 human_principal_required to an agent key, also
 *   when the agent acts for an organization of its owner (x-svc-account);
 * - the services refuse the same operations to an agent or MCP principal on their own;
 * - every route that names a resource answers 404 when the resource is another tenant's
 *   (501 while the route is still planned).
 */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
  await setUp();
}, 60_000);
afterAll(() => t?.stop());

let A: Tenant;
let B: Tenant;

async function ok(method: string, path: string, key: string, body?: unknown, headers?: Record<string, string>) {
  const res = await t.call(method, path, { key, body, headers });
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const FILE_CONTENT = (name: string) => `${name}'s file`;

async function tenant(name: string): Promise<Tenant> {
  const user = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
  const key = user.key as string;
  const userId = user.account.id as string;
  const orgId = (await ok('POST', '/accounts', key, { kind: 'organization', name: `${name} Org` })).id;
  const agentId = (await ok('POST', '/agents', key, { name: `${name} agent` })).id;
  const agentKey = await ok('POST', `/agents/${agentId}/keys`, key, { name: 'agent key' });
  const keyId = (await ok('POST', '/me/api-keys', key, { name: 'spare' })).id;
  const grantId = (await ok('POST', `/accounts/${userId}/standing-grants`, key, { granteeId: agentId, verbs: ['drive.read'] })).id;
  const hostId = (await ok('POST', `/accounts/${userId}/hosts`, key, { name: `${name} laptop` })).host.id;
  // Every resource a route names exists, so that only the ownership check can answer 404 to
  // another tenant: a fixture that cannot be made fails the suite here.
  const folderId = (await ok('POST', '/drive/folders', key, { name: `${name} folder` })).id;
  const fileId = (await ok('POST', `/drive/upload?name=${name}.txt`, key, FILE_CONTENT(name), { 'content-type': 'application/octet-stream' })).id;
  const notes = (await ok('PUT', '/drive/text', key, { path: `${name}-notes.txt`, content: 'one' })).id;
  await ok('PUT', '/drive/text', key, { path: `${name}-notes.txt`, content: 'two' });
  const fileVersionId = (await ok('GET', `/drive/${notes}/versions`, key)).versions[0].id;
  const profileId = (await ok('POST', '/profiles', key, { name: `${name} profile` })).id;
  const working = { constraints: [{ id: 'a', question: 'Warm?', answer: 'yes' }], exemplars: [], comparisons: [] };
  await ok('PATCH', `/profiles/${profileId}`, key, { profileData: { workingChanges: working } });
  const versionId = (await ok('POST', `/profiles/${profileId}/commits`, key, { message: 'first' })).id;
  const branchId = (await ok('POST', `/profiles/${profileId}/branches`, key, { name: 'side' })).id;
  const clientOrderId = `${name.toLowerCase()}-order`;
  const orderId = (await ok('POST', '/trading/order', key, { symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: '100.00', clientOrderId }))
    .id;
  await ok('POST', '/trading/order', key, { symbol: 'SPY', side: 'buy', type: 'market', qty: '1' });
  await ok('POST', '/trading/order', key, { symbol: 'SPY', side: 'sell', type: 'market', qty: '1' });
  const fillId = (await ok('GET', '/trading/fills?limit=1', key)).fills[0].id;
  const watchlistId = (await ok('POST', '/trading/watchlists', key, { name: 'mine', symbols: ['SPY'] })).id;
  const alertId = (await ok('POST', '/trading/alerts', key, { symbol: 'SPY', condition: 'above', price: '100000' })).id;
  const journalId = (await ok('POST', '/trading/journal', key, { title: `${name}'s note` })).id;
  const creditEntryId = (await ok('POST', '/credits/grants', t.bootstrapKey, { accountId: userId, amount: '1' })).entry.id;
  const creditAlertId = (await ok('POST', '/credits/alerts', key, { threshold: '0.5' })).id;
  const usageId = await usageRecord(userId, key);
  const threadId = (await ok('POST', '/threads', key, { agentId, title: `${name} thread` })).id;
  const sent = await ok('POST', `/threads/${threadId}/inject`, key, { content: 'hello' });
  const auditEventId = (await ok('GET', `/accounts/${userId}/audit`, key)).events[0].id;
  const siteId = (await ok('POST', '/sites', key, { slug: `${name.toLowerCase()}-site` })).id;
  const deploymentId = (await ok('POST', `/sites/${siteId}/deployments`, key, { files: [{ path: 'index.html', content: name }] })).id;
  const taskListId = (await ok('POST', '/task-lists', key, { name: `${name} tasks` })).id;
  const taskId = (await ok('POST', '/tasks', key, { listId: taskListId, title: 'one' })).id;
  const taskId2 = (await ok('POST', '/tasks', key, { listId: taskListId, title: 'two' })).id;
  const commentId = (await ok('POST', `/tasks/${taskId}/comments`, key, { body: 'hi' })).id;
  const scheduleId = (await ok('POST', '/schedules', key, { name: 'daily', message: 'hi', threadId, cron: '0 9 * * *' })).id;
  return {
    userId,
    key,
    orgId,
    agentId,
    agentKey: agentKey.key,
    agentKeyId: agentKey.id,
    keyId,
    grantId,
    hostId,
    folderId,
    fileId,
    profileId,
    versionId,
    branchId,
    orderId,
    clientOrderId,
    fillId,
    watchlistId,
    alertId,
    journalId,
    creditEntryId,
    creditAlertId,
    usageId,
    threadId,
    messageId: sent.messageId,
    runId: sent.runId,
    auditEventId,
    siteId,
    deploymentId,
    fileVersionId,
    taskListId,
    taskId,
    taskId2,
    commentId,
    scheduleId,
  };
}

/** A model call (the development model, through Infer as an agent of the account) and its usage record's id. */
async function usageRecord(accountId: string, key: string): Promise<string> {
  const p: Principal = { kind: 'agent', agentId: 'agt_authority', accountId, channel: 'internal' };
  const principalToken = (await new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!).sign(p)).token;
  const c = t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
  const msg = { role: 'user', content: 'hi', toolCalls: [], toolCallId: '', name: '' };
  for await (const e of c.infer({ model: 'svc/dev', messages: [msg], tools: [], chargeKey: '' }, { principalToken })) void e;
  return (await ok('GET', '/models/usage?limit=1', key)).records[0].id;
}

async function setUp() {
  A = await tenant('Alice');
  B = await tenant('Bob');
}

/** The route's path with the ids of `who`'s resources; null if a parameter has no known source (a test gap). */
function pathFor(r: Route, who: Tenant, accountId: string): string {
  return r.path.replace(/:(\w+)/g, (_, name: string) => {
    const id = idFor(r.path, name, who, accountId, r);
    if (!id) throw new Error(`test/platform/authority.test.ts has no id for :${name} of ${r.method} ${r.path}: add one`);
    return id;
  });
}

function idFor(path: string, name: string, who: Tenant, accountId: string, r?: Route): string | undefined {
  const base = path.split('/')[1];
  // Trading's and credits' own resources, by the path's collection.
  const collection = path.split('/')[2];
  if (name === 'id' && base === 'trading') {
    const ids: Record<string, string> = { fills: who.fillId, watchlists: who.watchlistId, alerts: who.alertId, journal: who.journalId };
    if (collection && collection in ids) return ids[collection];
  }
  if (name === 'id' && base === 'credits') return collection === 'alerts' ? who.creditAlertId : who.creditEntryId;
  if (name === 'id' && path.startsWith('/models/usage/')) return who.usageId;
  switch (`${base}:${name}`) {
    case 'accounts:id':
      return accountId;
    case 'accounts:memberId':
      return who.userId;
    case 'accounts:eventId':
      return who.auditEventId;
    case 'default-agents:agentId':
      return who.agentId;
    case 'standing-grants:id':
      return who.grantId;
    case 'hosts:hostId':
      return who.hostId;
    case 'agents:id':
      return who.agentId;
    case 'agents:keyId':
      return who.agentKeyId;
    case 'me:keyId':
      return who.keyId;
    case 'drive:id':
      // A route for files only (its id must be file_…) gets the file.
      return path.endsWith('/content') || (r?.params?.shape.id && !r.params.shape.id.safeParse(who.folderId).success) ? who.fileId : who.folderId;
    case 'drive:versionId':
      return who.fileVersionId;
    case 'drive:tag':
      return 'x';
    case 'profiles:id':
      return who.profileId;
    case 'profiles:branchId':
      return who.branchId;
    case 'profiles:versionId':
      return who.versionId;
    case 'models:provider':
      return 'openai';
    case 'trading:id':
      return who.orderId;
    case 'trading:agentId':
      return who.agentId;
    case 'trading:venue':
      return 'alpaca';
    case 'trading:clientOrderId':
      return who.clientOrderId;
    // The tenants' fills leave them no position (a round trip in SPY): the caller's own is not found.
    case 'trading:symbol':
      return 'SPY';
    case 'threads:id':
      return who.threadId;
    case 'threads:messageId':
      return who.messageId;
    case 'threads:runId':
      return who.runId;
    // No request waits in the tenants' threads: an approval id of the right shape (the thread decides the answer).
    case 'threads:approvalId':
      return 'apr_01aaaaaaaaaaaaaaaaaaaaaaaa';
    case 'threads:seq':
      return '1';
    case 'threads:tag':
      return 'shared-tag';
    case 'sites:id':
      return who.siteId;
    case 'sites:deploymentId':
      return who.deploymentId;
    case 'sites:domain':
      return 'authority.example.com';
    case 'profiles:kind':
      return 'constraints';
    case 'profiles:itemId':
      return 'a';
    case 'profiles:name':
      return 'v1';
    case 'task-lists:id':
      return who.taskListId;
    case 'tasks:id':
      return who.taskId;
    case 'tasks:blockerId':
      return who.taskId2;
    case 'tasks:commentId':
      return who.commentId;
    case 'schedules:id':
      return who.scheduleId;
  }
  return undefined;
}

function call(r: Route, path: string, key: string, body: unknown, extra: Record<string, string> = {}) {
  // A route that takes a precondition gets one that any existing resource meets: the answer must
  // then depend on ownership alone (a missing If-Match may rightly answer 428 first).
  const headers = r.headers?.shape && 'if-match' in r.headers.shape ? { 'if-match': '*', ...extra } : extra;
  // Raw-body routes (drive content) take bytes, not JSON.
  const raw = r.handler.kind === 'local' && r.method === 'put';
  return t.call(r.method.toUpperCase(), path, {
    key,
    body: raw ? 'bytes' : body,
    headers: raw ? { ...headers, 'content-type': 'application/octet-stream' } : headers,
  });
}

const keyed = routes.filter((r) => r.auth === 'key');
const authority = keyed.filter((r) => r.authority);
/** A person's own decisions (approving an agent's tool call): no agent key makes them either. */
const personal = keyed.filter((r) => r.authority || r.personOnly);

describe('authority: agent keys never change authority', () => {
  test('the route table marks every authority-changing operation of the spec', () => {
    const marked = new Set(authority.map((r) => `${r.method} ${r.path}`));
    for (const op of [
      'post /accounts',
      'put /accounts/:id/settings',
      'patch /accounts/:id/settings',
      'post /accounts/:id/standing-grants',
      'delete /standing-grants/:id',
      'post /accounts/:id/signing-key/rotate',
      'post /accounts/:id/hosts',
      'delete /hosts/:hostId',
      'post /accounts/:id/members',
      'delete /accounts/:id/members/:memberId',
    ]) {
      expect([op, marked.has(op)]).toEqual([op, true]);
    }
  });

  test.each(personal.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s answers 403 human_principal_required to an agent key, in its own account and acting for an organization',
    async (_name, r) => {
      const cases: Array<[string, Record<string, string>]> = [
        [A.userId, {}],
        [A.orgId, { 'x-svc-account': A.orgId }],
      ];
      for (const [accountId, headers] of cases) {
        const res = await call(r, pathFor(r, A, accountId) + sampleQuery(r, A), A.agentKey, sampleBody(r, A), headers);
        expect([headers, res.status, res.body?.error?.code]).toEqual([headers, 403, 'human_principal_required']);
      }
    },
  );

  test('…and nothing changed: the audit trails show no change made by an agent', async () => {
    for (const [account, key] of [
      [A.userId, A.key],
      [A.orgId, A.key],
    ]) {
      const events = (await ok('GET', `/accounts/${account}/audit?limit=200`, key)).events as Array<{ actor: { kind: string } }>;
      expect(events.length).toBeGreaterThan(0);
      expect(events.filter((e) => e.actor.kind === 'agent')).toEqual([]);
    }
  });

  test('moving an agent to another owner (PATCH ownerAccountId) answers 403 to an agent key', async () => {
    for (const headers of [{}, { 'x-svc-account': A.orgId }]) {
      const res = await t.call('PATCH', `/agents/${A.agentId}`, { key: A.agentKey, body: { ownerAccountId: A.orgId }, headers });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('human_principal_required');
    }
  });

  test('the services refuse authority changes to an agent principal and to the MCP channel on their own', async () => {
    const signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
    const acc = t.stack.registry.client('accounts', accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService');
    const agt = t.stack.registry.client('agents', agentsDefinition, 'svc.agents.v1.AgentsService');
    const principals: Principal[] = [
      { kind: 'agent', agentId: A.agentId, accountId: A.userId, keyId: A.agentKeyId, channel: 'api' },
      { kind: 'agent', agentId: A.agentId, accountId: A.orgId, keyId: A.agentKeyId, channel: 'api', role: 'owner' },
      { kind: 'human', userId: A.userId, accountId: A.userId, keyId: 'key_01m7zzzzzzzzzzzzzzzzzzzzzz', channel: 'mcp' },
    ];
    const ops: Array<[string, (o: { principalToken: string }) => Promise<unknown>]> = [
      ['CreateGrant', (o) => acc.createGrant({ accountId: A.userId, granteeId: A.agentId, verbs: ['drive.admin'] }, o)],
      ['DeleteGrant', (o) => acc.deleteGrant({ id: A.grantId }, o)],
      ['ReplaceSettings', (o) => acc.replaceSettings({ accountId: A.userId, documentJson: '{"locale":"fr-FR"}' }, o)],
      ['PatchSettings', (o) => acc.patchSettings({ accountId: A.userId, patchJson: '{"locale":"fr-FR"}' }, o)],
      ['RotateSigningKey', (o) => acc.rotateSigningKey({ accountId: A.userId }, o)],
      ['PairHost', (o) => acc.pairHost({ accountId: A.userId, name: 'sneaky' }, o)],
      ['UnpairHost', (o) => acc.unpairHost({ hostId: A.hostId }, o)],
      ['AddMember', (o) => acc.addMember({ accountId: A.orgId, memberId: B.userId, role: 'owner' }, o)],
      ['RemoveMember', (o) => acc.removeMember({ accountId: A.orgId, memberId: A.userId }, o)],
      ['CreateAccount', (o) => acc.createAccount({ kind: 'organization', name: 'x' }, o)],
      ['UpdateAgent(owner)', (o) => agt.updateAgent({ id: A.agentId, ownerAccountId: A.orgId, clearFields: [], tools: [], hasTools: false }, o)],
      ['UpdateAgent(tools)', (o) => agt.updateAgent({ id: A.agentId, clearFields: [], tools: ['*'], hasTools: true }, o)],
      ['SetAgentApprovalPolicy', (o) => agt.setAgentApprovalPolicy({ agentId: A.agentId, tools: [] }, o)],
      ['SetThreadApprovalPolicy', (o) => agt.setThreadApprovalPolicy({ threadId: A.threadId, tools: [], clear: true }, o)],
      ['ApproveToolCall', (o) => agt.approveToolCall({ threadId: A.threadId, approvalId: 'apr_01aaaaaaaaaaaaaaaaaaaaaaaa' }, o)],
      ['RejectToolCall', (o) => agt.rejectToolCall({ threadId: A.threadId, approvalId: 'apr_01aaaaaaaaaaaaaaaaaaaaaaaa' }, o)],
      ['EditEarlierMessage', (o) => agt.editEarlierMessage({ threadId: A.threadId, messageId: A.messageId, content: 'x' }, o)],
      ['UpdateAgent(maxSteps)', (o) => agt.updateAgent({ id: A.agentId, clearFields: [], tools: [], hasTools: false, maxSteps: 1000 }, o)],
    ];
    for (const p of principals) {
      const { token } = await signer.sign(p);
      for (const [name, op] of ops) {
        const err = await op({ principalToken: token }).then(
          () => null,
          (e: unknown) => e,
        );
        expect([p.kind, p.channel, name, err instanceof DomainError ? err.code : String(err)]).toEqual([
          p.kind,
          p.channel,
          name,
          'human_principal_required',
        ]);
      }
    }
    // Still there, unchanged.
    expect((await ok('GET', `/accounts/${A.userId}/standing-grants`, A.key)).grants.map((g: any) => [g.id, g.verbs])).toEqual([
      [A.grantId, ['drive.read']],
    ]);
    expect((await ok('GET', `/agents/${A.agentId}`, A.key)).ownerAccountId).toBe(A.userId);
  });
});

describe('authority: another tenant’s resources answer 404', () => {
  // A provider key's route names a provider, not a resource: it acts on the caller's acting account
  // (test/models/provider-keys.test.ts shows another account's keys invisible).
  // So do venue credentials (a venue, the caller's acting account), and memory namespaces and keys
  // (names in the caller's acting account's memory: test/agents/memory.test.ts shows another's invisible).
  // A model, a family and a symbol's rules are the catalogue's, the same for everyone.
  const named = keyed.filter(
    (r) =>
      (r.path.includes(':') || r.query?.shape?.id) &&
      !r.path.startsWith('/models/provider-keys/') &&
      !r.path.startsWith('/trading/credentials/') &&
      // A tag names no resource: the caller's own items carrying it (test/drive/drive-organize.test.ts).
      r.path !== '/drive/tags/:tag/items' &&
      // Catalogue entries, the same for every account: a model, a family, a symbol's rules.
      r.path !== '/models/:id' &&
      !r.path.startsWith('/models/families/') &&
      !r.path.startsWith('/trading/symbols/') &&
      !r.path.startsWith('/memory/'),
  );

  test('the matrix covers every route that names a resource', () => {
    expect(named.length).toBeGreaterThan(30);
    for (const r of named) expect(() => pathFor(r, B, B.userId)).not.toThrow();
  });

  test.each(named.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))("%s with another tenant's ids answers 404", async (_name, r) => {
    const expected = r.handler.kind === 'unimplemented' ? 501 : 404;
    const accounts = r.path.startsWith('/accounts/:id') ? [B.userId, B.orgId] : [B.userId];
    // A person of tenant A, then A's agent (authority routes already stop agents with 403).
    const callers = r.authority || r.personOnly ? [A.key] : [A.key, A.agentKey];
    for (const accountId of accounts) {
      for (const key of callers) {
        const res = await call(r, pathFor(r, B, accountId) + sampleQuery(r, B), key, sampleBody(r, A, B));
        expect([accountId, key === A.key ? 'person' : 'agent', res.status]).toEqual([accountId, key === A.key ? 'person' : 'agent', expected]);
        expect(res.body?.error?.code).toEqual(expect.any(String));
      }
    }
  });

  // A made-up id (B's id with its last character changed, so of the same shape) must answer as B's
  // real one does: a difference would tell A that B's resource exists (an existence oracle).
  const madeUp = (id: string) => id.slice(0, -1) + (id.endsWith('0') ? '1' : '0');
  const ownIds = () => new Set(Object.values(B).filter((v) => /^[a-z]+_[0-9a-z]{10,}$/.test(v)));
  const fake = (s: string) => s.replace(/[a-z]+_[0-9a-z]{10,}/g, (m) => (ownIds().has(m) ? madeUp(m) : m));

  test.each(named.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s answers a made-up id as it answers a foreign one',
    async (_name, r) => {
      const accountId = B.userId;
      for (const key of r.authority || r.personOnly ? [A.key] : [A.key, A.agentKey]) {
        const real = pathFor(r, B, accountId) + sampleQuery(r, B);
        const foreign = await call(r, real, key, sampleBody(r, A, B));
        const invented = await call(r, fake(real), key, sampleBody(r, A, B));
        expect([fake(real), invented.status, invented.body?.error?.code]).toEqual([fake(real), foreign.status, foreign.body?.error?.code]);
      }
    },
  );

  test("…and B's resources are all still there", async () => {
    expect((await ok('GET', `/agents/${B.agentId}`, B.key)).id).toBe(B.agentId);
    expect((await ok('GET', `/accounts/${B.userId}/standing-grants`, B.key)).grants.map((g: any) => g.id)).toEqual([B.grantId]);
    expect((await ok('GET', `/accounts/${B.userId}/hosts`, B.key)).hosts.map((h: any) => h.id)).toEqual([B.hostId]);
    expect((await ok('GET', '/me/api-keys', B.key)).keys.map((k: any) => k.id)).toContain(B.keyId);
    expect((await t.call('GET', '/me', { key: B.agentKey })).status).toBe(200);
    const members = (await ok('GET', `/accounts/${B.orgId}/members`, B.key)).members;
    expect(members.map((m: any) => m.accountId)).toEqual([B.userId]);
    expect((await ok('GET', `/drive/${B.folderId}`, B.key)).name).toBe('Bob folder');
    expect((await t.call('GET', `/drive/${B.fileId}/content`, { key: B.key })).body).toBe(FILE_CONTENT('Bob'));
    const profile = await ok('GET', `/profiles/${B.profileId}`, B.key);
    expect(profile.name).toBe('Bob profile');
    expect(profile.profileData.currentBranchId).toBe('main');
    expect(profile.profileData.branches.map((b: any) => b.id)).toEqual(['main', B.branchId]);
    expect(profile.profileData.versions.map((v: any) => v.id)).toEqual([B.versionId]);
    expect((await ok('GET', `/sites/${B.siteId}`, B.key)).currentDeploymentId).toBe(B.deploymentId);
    expect((await t.call('GET', '/sites/bob-site/')).body).toBe('Bob');
  });
});
