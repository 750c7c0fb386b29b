import { allOperations, buildOpenApi, internalRoutes, type Route, routes } from '@svc/api';
import { createDispatcher, type Dispatcher } from '@svc/dispatch';
import { createHashPool, DomainError, type Principal, PrincipalSigner, SYSTEM_PRINCIPAL } from '@svc/kit';
import { isToolOperation } from '@svc/tools';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * The authority matrix of the internal operations (Route.internal): the drive and profile calls of
 * WebDAV, Git and public sites, invoked through the dispatcher. Generated from the route table as
 * test/platform/authority.test.ts is for the API, so a new internal operation cannot escape it:
 * - none is served over HTTP, listed in OpenAPI or offered as a tool;
 * - only the declared principals call one (a host key never; public sites' only as the platform),
 *   and a read-only token only those that read;
 * - every one that names a resource answers 404 to another tenant's person and agent.
 */

let t: TestStack;
let d: Dispatcher;
let signer: PrincipalSigner;
const hashes = createHashPool({ name: 'test-sha256' });

interface Tenant {
  userId: string;
  key: string;
  agentId: string;
  folderName: string;
  folderId: string;
  fileId: string;
  siteId: string;
  deploymentId: string;
  profileId: string;
}

async function ok(method: string, path: string, key: string, body?: unknown, headers?: Record<string, string>) {
  const res = await t.call(method, path, { key, body, headers });
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function tenant(name: string): Promise<Tenant> {
  const user = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
  const key = user.key as string;
  const folderName = `${name} folder`;
  const folderId = (await ok('POST', '/drive/folders', key, { name: folderName })).id;
  const fileId = (await ok('POST', `/drive/upload?name=${name}.txt`, key, `${name}'s file`, { 'content-type': 'application/octet-stream' })).id;
  const siteId = (await ok('POST', '/sites', key, { slug: `${name.toLowerCase()}-internal` })).id;
  const deploymentId = (await ok('POST', `/sites/${siteId}/deployments`, key, { files: [{ path: 'index.html', content: name }] })).id;
  const profileId = (await ok('POST', '/profiles', key, { name: `${name} profile` })).id;
  const agentId = (await ok('POST', '/agents', key, { name: `${name} agent` })).id;
  return { userId: user.account.id, key, agentId, folderName, folderId, fileId, siteId, deploymentId, profileId };
}

let A: Tenant;
let B: Tenant;
beforeAll(async () => {
  t = await startTestStack();
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
  d = createDispatcher({
    log: t.stack.log,
    registry: t.stack.registry,
    backends: t.stack.backends,
    hashes,
    notServed: ['health', 'ready', 'openapi'],
  });
  A = await tenant('Ann');
  B = await tenant('Ben');
}, 60_000);
afterAll(async () => {
  await hashes.close();
  await t?.stop();
});

const as = async (principal: Principal) => ({ principal, token: (await signer.sign(principal)).token });
const person = (who: Tenant, extra: Partial<Principal> = {}) =>
  as({ kind: 'human', userId: who.userId, accountId: who.userId, channel: 'api', ...extra });
const agent = (who: Tenant) => as({ kind: 'agent', agentId: who.agentId, accountId: who.userId, channel: 'api' });
const host = (who: Tenant) => as({ kind: 'host', hostId: 'hst_01aaaaaaaaaaaaaaaaaaaaaaaa', accountId: who.userId, channel: 'api' });

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'answered',
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );
/** The HTTP status of a refusal, as the front would answer it ('answered': none). */
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 'answered',
    (e: unknown) => (e instanceof DomainError ? e.httpStatus : String(e)),
  );
const invoke = async (r: Route, body: unknown, auth: { principal: Principal; token: string }) =>
  d.invoke(r, { body }, { requestId: 'internal-authority', auth });

/** Each internal operation's request naming `who`'s resources (null: it names none of a tenant's). */
function sample(r: Route, who: Tenant): unknown {
  const samples: Record<string, unknown> = {
    'internal.drive.resolvePath': { segments: [who.folderName], includeDetails: true },
    'internal.drive.listItems': { parentId: who.folderId, limit: 10, includeDetails: true },
    'internal.drive.setProperties': { id: who.fileId, patches: [], lockTokens: [] },
    'internal.drive.createFolder': { parentId: who.folderId, name: 'inside', lockTokens: [] },
    'internal.drive.deleteItem': { id: who.fileId, recursive: true, lockTokens: [] },
    'internal.drive.updateItem': { id: who.fileId, name: 'renamed.txt', overwrite: false, lockTokens: [] },
    'internal.drive.copyItem': { id: who.fileId, name: 'copy.txt', overwrite: false, recursive: false, lockTokens: [] },
    'internal.drive.lockItem': { id: who.fileId, scope: 'exclusive', deep: false, owner: '', timeoutSeconds: 60, lockTokens: [] },
    'internal.drive.unlockItem': { id: who.fileId, token: 'opaquelocktoken:00000000-0000-0000-0000-000000000000' },
    'internal.drive.getSite': { id: who.siteId },
    'internal.drive.getDeployment': { siteId: who.siteId, deploymentId: who.deploymentId },
    'internal.drive.deploySite': { siteId: who.siteId, files: [{ path: 'index.html', content: Buffer.from('taken over') }] },
    'internal.profiles.exportHistory': { id: who.profileId, snapshotVersionIds: [], maxBytes: 0 },
    // Public sites: the platform's own calls (a site's file by slug, a host name), no tenant's.
    'internal.drive.openSiteFile': null,
    'internal.drive.resolveSiteDomain': null,
  };
  if (!(r.id in samples)) throw new Error(`test/platform/authority-internal.test.ts has no sample request for ${r.id}: add one`);
  return samples[r.id];
}

test('internal operations are no part of the HTTP API, its OpenAPI document, the SDKs or the tools', async () => {
  expect(internalRoutes.length).toBeGreaterThan(10);
  expect(routes.filter((r) => r.internal)).toEqual([]);
  const ids = new Set<string>();
  const doc = buildOpenApi(allOperations, { version: 'test' }) as { paths: Record<string, Record<string, { operationId: string }>> };
  for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) ids.add(op.operationId);
  for (const r of internalRoutes) {
    expect([r.id, r.internal, ids.has(r.id), isToolOperation(r)]).toEqual([r.id, true, false, false]);
    const res = await t.call(r.method.toUpperCase(), r.path, { key: A.key, body: r.method === 'get' ? undefined : {} });
    expect([r.id, res.status]).toEqual([r.id, 404]);
  }
});

test.each(internalRoutes.map((r) => [r.id, r] as const))('%s: only its principals, and a read-only token only if it reads', async (_id, r) => {
  const body = sample(r, A) ?? {};
  // A host key never uses WebDAV, Git or a site's files through these.
  expect([r.id, await refusal(invoke(r, body, await host(A)))]).toEqual([r.id, 'principal_not_allowed']);
  if (!r.principals.length) {
    // Public sites' calls: the platform itself only, no person's or agent's key.
    expect([r.id, await refusal(invoke(r, body, await person(A)))]).toEqual([r.id, 'principal_not_allowed']);
    const platform = r.id === 'internal.drive.openSiteFile' ? { slug: 'ann-internal', path: '' } : { domain: 'none.example.com' };
    expect([r.id, await refusal(invoke(r, platform, await as({ ...SYSTEM_PRINCIPAL })))]).toEqual([r.id, 'answered']);
    return;
  }
  const readOnly = await person(A, { grantId: 'grt_01aaaaaaaaaaaaaaaaaaaaaaaa', readOnly: true });
  const refused = await refusal(invoke(r, body, readOnly));
  if (r.effect === 'reads') expect([r.id, refused]).not.toEqual([r.id, 'read_only_token']);
  else expect([r.id, refused]).toEqual([r.id, 'read_only_token']);
});

test.each(internalRoutes.map((r) => [r.id, r] as const))(
  "%s with another tenant's resources answers 404 to a person and an agent",
  async (_id, r) => {
    const request = sample(r, B);
    if (request === null) return;
    for (const caller of [await person(A), await agent(A)]) {
      if (r.id === 'internal.drive.resolvePath') {
        // A path is resolved in the caller's own drive: B's folder is not there.
        const answer = await invoke(r, request, caller);
        expect(answer.kind === 'json' && (answer.body as { item?: unknown }).item).toBeFalsy();
        continue;
      }
      expect([r.id, caller.principal.kind, await statusOf(invoke(r, request, caller))]).toEqual([r.id, caller.principal.kind, 404]);
    }
  },
);

test("…and B's resources are all still there, unchanged", async () => {
  expect((await ok('GET', `/drive/${B.fileId}`, B.key)).name).toBe('Ben.txt');
  expect((await ok('GET', `/sites/${B.siteId}`, B.key)).id).toBe(B.siteId);
  expect((await ok('GET', `/sites/${B.siteId}/deployments`, B.key)).deployments).toHaveLength(1);
});
