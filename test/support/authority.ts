import type { Route } from '@svc/api';

/** The two tenants of the authority matrix (test/platform/authority.test.ts): what each owns. */
export interface Tenant {
  userId: string;
  key: string;
  orgId: string;
  agentId: string;
  agentKey: string;
  agentKeyId: string;
  keyId: string;
  grantId: string;
  hostId: string;
  folderId: string;
  fileId: string;
  profileId: string;
  /** A committed version of the profile, and a branch beside main (not current, so deletable). */
  versionId: string;
  branchId: string;
  /** A resting paper order, and its client order id. */
  orderId: string;
  clientOrderId: string;
  /** A fill (of a round trip in SPY: no position left), a watchlist, a price alert, a journal entry. */
  fillId: string;
  watchlistId: string;
  alertId: string;
  journalId: string;
  /** A credit grant, a low-balance alert, a usage record of a model call. */
  creditEntryId: string;
  creditAlertId: string;
  usageId: string;
  threadId: string;
  /** The thread's first message and the run it started; an audit event of the person's account. */
  messageId: string;
  runId: string;
  auditEventId: string;
  /** A hosted site and its one deployment. */
  siteId: string;
  deploymentId: string;
  /** An earlier version of a file (drive versions). */
  fileVersionId: string;
  /** A task list with two tasks, a comment on the first; a schedule (docs/memory.md). */
  taskListId: string;
  taskId: string;
  taskId2: string;
  commentId: string;
  scheduleId: string;
}

/**
 * A valid body for each route that takes one, so that only authority or ownership can refuse it:
 * sent by `who` about `owner`'s resource (a profile's branch or version is `owner`'s).
 */
export function sampleBody(r: Route, who: Tenant, owner: Tenant = who): unknown {
  const samples: Record<string, unknown> = {
    'post /accounts': { kind: 'organization', name: 'x' },
    'post /accounts/:id/members': { accountId: who.userId, role: 'member' },
    'put /accounts/:id/settings': {},
    'patch /accounts/:id/settings': { locale: 'de-DE' },
    'post /accounts/:id/standing-grants': { granteeId: who.agentId, verbs: ['drive.write'] },
    'post /accounts/:id/signatures': { payload: { a: 1 } },
    'post /accounts/:id/signatures/verify': { signature: 'a.b.c' },
    'post /accounts/:id/hosts': { name: 'h' },
    'post /hosts/:hostId/call': { tool: 'echo' },
    'post /agents': { name: 'x' },
    'put /default-agents': { agentIds: [] },
    'post /credits/grants': { accountId: who.userId, amount: '1' },
    'patch /agents/:id': { name: 'renamed' },
    'post /agents/:id/keys': { name: 'x' },
    'post /api/api-keys': { name: 'x' },
    'post /me/api-keys': { name: 'x' },
    'post /drive/folders': { name: 'x' },
    'patch /drive/:id': { name: 'renamed' },
    'post /profiles': { name: 'x' },
    'patch /profiles/:id': { name: 'renamed' },
    'post /profiles/:id/commits': { message: 'm' },
    'post /profiles/:id/branches': { name: 'b' },
    'post /profiles/:id/checkout': { branchId: owner.branchId },
    'post /profiles/:id/rollback': { versionId: owner.versionId },
    'post /profiles/:id/merge': { sourceBranchId: owner.branchId },
    'put /models/provider-keys/:provider': { key: 'sk-authority-test' },
    'put /trading/credentials/:venue': { keyId: 'PKAUTHORITY', secretKey: 'authority-test' },
    'patch /trading/watchlists/:id': { name: 'renamed' },
    'post /trading/watchlists/:id/symbols': { symbol: 'AAPL' },
    'patch /trading/alerts/:id': { price: '1' },
    'patch /trading/journal/:id': { title: 'renamed' },
    'patch /credits/alerts/:id': { threshold: '1' },
    'patch /threads/:id': { title: 'renamed' },
    'post /threads/:id/inject': { content: 'hello' },
    'post /threads/:id/ask': { content: 'hello', timeoutMs: 100 },
    'post /threads/:id/wait-events': { after: 0, timeoutMs: 0 },
    'put /threads/:id/agent': { agentId: who.agentId },
    'patch /threads/:id/messages/:messageId': { content: 'edited' },
    'post /threads/:id/messages/:messageId/edit': { content: 'edited' },
    'patch /hosts/:hostId': { name: 'renamed' },
    'post /agents/:id/ask': { message: 'hello', timeoutMs: 100 },
    'patch /me/api-keys/:keyId': { name: 'renamed' },
    'patch /agents/:id/keys/:keyId': { name: 'renamed' },
    'post /sites': { slug: 'authority-site' },
    'post /sites/:id/deployments': { files: [{ path: 'index.html', content: 'overwritten' }] },
    'post /sites/:id/rollback': { deploymentId: owner.deploymentId },
    'post /sites/:id/domains': { domain: 'authority.example.com' },
    'post /drive/:id/append': { text: 'x' },
    'post /drive/:id/edit': { find: 'file', replace: 'x' },
    'patch /drive/:id/lines': { start: 1, end: 1, text: 'x' },
    'post /drive/:id/lines': { after: 0, text: 'x' },
    'put /drive/:id/json': { pointer: '/a', value: 1 },
    'patch /drive/:id/json': { patch: { a: 1 } },
    'post /drive/:id/csv': { rows: [['a']] },
    'put /drive/:id/tags': { tags: ['x'] },
    'post /drive/:id/tags': { tags: ['x'] },
    'put /drive/:id/properties': { name: 'x', value: 'y' },
    'patch /sites/:id': { title: 'x' },
    'put /sites/:id/redirects': { redirects: [] },
    'post /sites/:id/redirects': { from: '/a', to: '/b' },
    'patch /profiles/:id/branches/:branchId': { description: 'd' },
    'post /profiles/:id/branches/:branchId/reset': { versionId: owner.versionId },
    'post /profiles/:id/working-changes/:kind': { item: { id: 'x' } },
    'post /profiles/:id/revert': { versionId: owner.versionId },
    'post /profiles/:id/cherry-pick': { versionId: owner.versionId },
    'post /profiles/:id/tags': { name: 'v1' },
    'patch /task-lists/:id': { name: 'renamed' },
    'put /task-lists/:id/order': { taskIds: [owner.taskId, owner.taskId2] },
    'patch /tasks/:id': { title: 'renamed' },
    'put /tasks/:id/assignee': { agentId: null },
    'post /tasks/:id/move': { listId: owner.taskListId },
    'post /tasks/:id/comments': { body: 'x' },
    'patch /tasks/:id/comments/:commentId': { body: 'x' },
    'patch /schedules/:id': { name: 'renamed' },
    'put /agents/:id/approval-policy': { tools: [] },
    'put /threads/:id/approval-policy': { tools: null },
  };
  const k = `${r.method} ${r.path}`;
  if (!r.body) return undefined;
  const body = k in samples ? samples[k] : {};
  const parsed = r.body.safeParse(body);
  if (!parsed.success) throw new Error(`test/platform/authority.test.ts needs a valid sample body for ${k}: ${parsed.error.issues[0]?.message}`);
  return body;
}

/** Query strings a route needs to be valid. */
export function sampleQuery(r: Route, who: Tenant): string {
  const samples: Record<string, string> = {
    'delete /api/api-keys': `id=${who.keyId}`,
    'delete /me/api-keys': `id=${who.keyId}`,
    'delete /agents/:id/keys': `id=${who.agentKeyId}`,
    'get /profiles/:id/diff': `from=${who.versionId}&to=${who.branchId}`,
    'delete /drive/:id/json': 'pointer=/a',
    'delete /drive/:id/locks': 'token=urn:uuid:00000000-0000-0000-0000-000000000000',
    'delete /drive/:id/properties': 'name=x',
    'get /sites/:id/diff': `from=${who.deploymentId}`,
    'get /sites/:id/files': 'path=index.html',
    'delete /sites/:id/redirects': 'from=/a',
    'get /threads/:id/search': 'q=hello',
    'get /profiles/:id/search': 'q=a',
  };
  const k = `${r.method} ${r.path}`;
  const q = samples[k] ?? '';
  if (r.query) {
    const parsed = r.query.safeParse(Object.fromEntries(new URLSearchParams(q)));
    if (!parsed.success) throw new Error(`test/platform/authority.test.ts needs a valid sample query for ${k}: ${parsed.error.issues[0]?.message}`);
  }
  return q ? `?${q}` : '';
}
