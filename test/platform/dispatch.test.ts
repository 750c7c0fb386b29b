import { route, routes } from '@svc/api';
import { Dispatcher } from '@svc/dispatch';
import { DomainError, type Principal, PrincipalSigner } from '@svc/kit';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * The dispatcher without HTTP: what MCP tools and the other fronts call. The same operation gives
 * the same answer and the same refusals as through the HTTP API, from the same route table.
 */

let t: TestStack;
let dispatcher: Dispatcher;
let signer: PrincipalSigner;
let human: { principal: Principal; token: string };
let agent: { principal: Principal; token: string };
const revoked: string[] = [];

const as = async (principal: Principal) => ({ principal, token: (await signer.sign(principal)).token });

beforeAll(async () => {
  t = await startTestStack();
  dispatcher = new Dispatcher({ registry: t.stack.registry, onKeyRevoked: (id) => revoked.push(id) });
  signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
  const user = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Dee' })).body;
  const me = (await t.ok('GET', '/me', user.key)).body;
  human = await as({ kind: 'human', userId: me.userId, accountId: me.accountId, keyId: me.keyId, channel: 'mcp' });
  const agentId = (await t.ok('POST', '/agents', user.key, { name: 'helper' })).body.id;
  agent = await as({ kind: 'agent', agentId, accountId: me.accountId, keyId: me.keyId, channel: 'mcp' });
}, 60_000);
afterAll(() => t?.stop());

test('an operation answers as it does over HTTP: status, headers, body', async () => {
  const created = await dispatcher.invoke('meApiKeys.create', { body: { name: 'from a tool' } }, { requestId: 'r1', auth: human });
  expect(created).toMatchObject({ kind: 'json', status: 201, headers: { 'Cache-Control': 'no-store' } });
  const key = (created as { body: { key: string; id: string } }).body;
  expect(key.key).toMatch(/^svc_[0-9a-f]{64}$/);
  // The key works over HTTP, and the listing through the dispatcher equals the HTTP one.
  const http = (await t.ok('GET', '/me/api-keys', key.key)).body;
  const listed = await dispatcher.invoke('meApiKeys.list', { query: {} }, { requestId: 'r2', auth: human });
  expect(listed).toMatchObject({ kind: 'json', status: 200, body: http });
  // Revocation tells the front which key to forget.
  await dispatcher.invoke('meApiKeys.revoke', { params: { keyId: key.id } }, { requestId: 'r3', auth: human });
  expect(revoked).toEqual([key.id]);
  // The gateway (another front, with its own cache) hears the revocation event.
  let status = 0;
  for (let i = 0; i < 50 && status !== 401; i++) {
    status = (await t.call('GET', '/me', { key: key.key })).status;
    if (status !== 401) await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toBe(401);
});

test('the principal rules: an agent cannot change authority, whatever the front', async () => {
  const authority = routes.filter((r) => r.authority);
  expect(authority.length).toBeGreaterThan(5);
  for (const r of authority) {
    await expect(dispatcher.invoke(r, {}, { requestId: 'r4', auth: agent })).rejects.toMatchObject({ code: 'human_principal_required' });
  }
  const humansOnly = routes.find((r) => r.auth === 'key' && !r.authority && !r.principals.includes('host'))!;
  const host = await as({ kind: 'host', hostId: 'host_x', accountId: human.principal.accountId, channel: 'api' });
  await expect(dispatcher.invoke(humansOnly, {}, { requestId: 'r5', auth: host })).rejects.toMatchObject({ code: 'principal_not_allowed' });
  await expect(dispatcher.invoke('meApiKeys.list', {}, { requestId: 'r6' })).rejects.toMatchObject({ code: 'missing_api_key' });
});

test('input is validated once, with the same messages as over HTTP', async () => {
  const err = await dispatcher
    .invoke('meApiKeys.create', { body: { name: 'x', extra: 1 } }, { requestId: 'r7', auth: human })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DomainError);
  const http = await t.call('POST', '/me/api-keys', { key: t.bootstrapKey, body: { name: 'x', extra: 1 } });
  expect(http.status).toBe(400);
  expect({ code: (err as DomainError).code, message: (err as DomainError).message }).toEqual({
    code: http.body.error.code,
    message: http.body.error.message,
  });
  await expect(dispatcher.invoke('meApiKeys.create', { body: { name: 'a\u0000b' } }, { requestId: 'r8', auth: human })).rejects.toMatchObject({
    code: 'invalid_request',
  });
});

test('unknown and unimplemented operations', async () => {
  await expect(dispatcher.invoke('no.such', {}, { requestId: 'r9', auth: human })).rejects.toMatchObject({ code: 'unknown_operation' });
  // A planned operation (declared `unimplemented` until its service lands) answers 501, after the principal checks.
  const planned = route({ ...routes.find((r) => r.id === 'models.list')!, id: 'planned.op', handler: { kind: 'unimplemented', service: 'models' } });
  await expect(dispatcher.invoke(planned, {}, { requestId: 'r10', auth: human })).rejects.toMatchObject({ code: 'not_implemented' });
  await expect(dispatcher.invoke(planned, {}, { requestId: 'r11' })).rejects.toMatchObject({ code: 'missing_api_key' });
});
