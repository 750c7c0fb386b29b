import { compactVerify, importJWK } from 'jose';

import type { EventEnvelope } from '@svc/kit';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Accounts, organizations, members, settings, standing grants, signing keys, hosts and the audit
 * trail, end to end through the gateway (issue 4, docs/accounts.md).
 */

let t: TestStack;
const events: EventEnvelope[] = [];
beforeAll(async () => {
  t = await startTestStack();
  const bus = await t.stack.backends.bus();
  await bus.subscribe('accounts.>', async (e) => void events.push(e));
}, 60_000);
afterAll(() => t?.stop());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let seq = 0;

/** Success with an answer that matches its documented schema (see TestStack.ok). */
const ok: TestStack['ok'] = (...args) => t.ok(...args);

/** A new person (operator-created user account) and their first key. */
async function person(name = `person ${++seq}`) {
  const res = await ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
  return { id: res.body.account.id as string, key: res.body.key as string };
}

async function org(ownerKey: string, name = `org ${++seq}`) {
  return (await ok('POST', '/accounts', ownerKey, { kind: 'organization', name })).body.id as string;
}

async function agentKey(ownerKey: string, headers?: Record<string, string>) {
  const agent = (await ok('POST', '/agents', ownerKey, { name: `agent ${++seq}` }, headers)).body;
  const key = (await ok('POST', `/agents/${agent.id}/keys`, ownerKey, { name: 'k' }, headers)).body.key as string;
  return { id: agent.id as string, key };
}

async function audit(accountId: string, key: string, action?: string) {
  const res = await ok('GET', `/accounts/${accountId}/audit?limit=200${action ? `&action=${action}` : ''}`, key);
  return res.body.events as Array<{ action: string; actor: { kind: string; id: string; keyId: string | null }; data: any; target: any }>;
}

describe('accounts', () => {
  test('the operator creates a user account with a first key shown once; others may not', async () => {
    const res = await t.call('POST', '/accounts', { key: t.bootstrapKey, body: { kind: 'user', name: 'Ada', email: 'ada@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body.account).toMatchObject({ kind: 'user', name: 'Ada', email: 'ada@example.com' });
    expect(res.body.account.id).toMatch(/^acct_[0-9a-z]{26}$/);
    expect(res.body.account.createdAt).toMatch(ISO);
    expect(res.body.key).toMatch(/^svc_[0-9a-f]{64}$/);
    const me = await ok('GET', '/me', res.body.key);
    expect(me.body).toMatchObject({ kind: 'human', userId: res.body.account.id, accountId: res.body.account.id });
    expect(me.body.account).toMatchObject({ id: res.body.account.id, kind: 'user', name: 'Ada' });

    const dup = await t.call('POST', '/accounts', { key: t.bootstrapKey, body: { kind: 'user', name: 'Ada 2', email: 'ADA@example.com' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('email_taken');

    const refused = await t.call('POST', '/accounts', { key: res.body.key, body: { kind: 'user', name: 'Mallory' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('operator_required');

    for (const body of [
      {},
      { kind: 'robot', name: 'x' },
      { kind: 'user', name: '' },
      { kind: 'user', name: 'x', email: 'nope' },
      { kind: 'organization', name: 'x', email: 'a@b.c' },
    ]) {
      const bad = await t.call('POST', '/accounts', { key: t.bootstrapKey, body });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual(ERROR_BODY);
    }
    // The key was imported by hash: its plaintext is nowhere in the database.
    const sql = await t.stack.backends.sql();
    const dump = JSON.stringify(await sql.query(`SELECT * FROM keys.api_keys`)) + JSON.stringify(await sql.query(`SELECT * FROM accounts.accounts`));
    expect(dump).not.toContain(res.body.key.slice(4));
  });

  test('a person creates organizations, sees them, and another tenant gets 404', async () => {
    const ada = await person();
    const bob = await person();
    const res = await t.call('POST', '/v1/accounts', { key: ada.key, body: { kind: 'organization', name: 'Ada Labs' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ kind: 'organization', name: 'Ada Labs', role: 'owner', email: null });
    expect(res.body.id).toMatch(/^acct_/);
    expect(res.body.createdAt).toMatch(ISO);
    const orgId = res.body.id;

    const list = await ok('GET', '/accounts', ada.key);
    expect(list.body.accounts.map((a: any) => [a.id, a.role])).toEqual(
      expect.arrayContaining([
        [ada.id, 'owner'],
        [orgId, 'owner'],
      ]),
    );
    expect(list.body.nextCursor).toBeNull();
    const page1 = await ok('GET', '/accounts?limit=1', ada.key);
    expect(page1.body.accounts).toHaveLength(1);
    const page2 = await ok('GET', `/accounts?limit=1&cursor=${page1.body.nextCursor}`, ada.key);
    expect(page2.body.accounts[0].id).not.toBe(page1.body.accounts[0].id);

    expect((await ok('GET', `/accounts/${orgId}`, ada.key)).body).toMatchObject({ id: orgId, role: 'owner' });
    const me = await ok('GET', '/me', ada.key);
    expect(me.body.organizations).toEqual([expect.objectContaining({ id: orgId, role: 'owner' })]);

    for (const path of [`/accounts/${orgId}`, `/accounts/${ada.id}`, `/accounts/${orgId}/settings`, `/accounts/${orgId}/members`]) {
      const other = await t.call('GET', path, { key: bob.key });
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('account_not_found');
    }
    expect((await t.call('GET', '/me', { key: bob.key, headers: { 'x-svc-account': orgId } })).status).toBe(404);
    expect((await t.call('GET', '/accounts/nope', { key: bob.key })).status).toBe(400);
  });

  test('members: owners add people with roles; roles decide; an organization keeps an owner', async () => {
    const owner = await person();
    const admin = await person();
    const member = await person();
    const orgId = await org(owner.key);

    const added = await t.call('POST', `/accounts/${orgId}/members`, { key: owner.key, body: { accountId: admin.id, role: 'admin' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ accountId: admin.id, role: 'admin' });
    const again = await t.call('POST', `/accounts/${orgId}/members`, { key: owner.key, body: { accountId: admin.id, role: 'admin' } });
    expect(again.status).toBe(200);
    expect((await t.call('POST', `/accounts/${orgId}/members`, { key: admin.key, body: { accountId: member.id, role: 'member' } })).status).toBe(201);

    // An admin does not make owners; a member manages nothing.
    const noOwner = await t.call('POST', `/accounts/${orgId}/members`, { key: admin.key, body: { accountId: member.id, role: 'owner' } });
    expect(noOwner.status).toBe(403);
    expect(noOwner.body.error.code).toBe('insufficient_role');
    const byMember = await t.call('PATCH', `/accounts/${orgId}/settings`, { key: member.key, body: { locale: 'fr-FR' } });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.code).toBe('insufficient_role');

    const members = await ok('GET', `/accounts/${orgId}/members`, member.key);
    expect(members.body.members.map((m: any) => [m.accountId, m.role]).sort()).toEqual(
      [
        [owner.id, 'owner'],
        [admin.id, 'admin'],
        [member.id, 'member'],
      ].sort(),
    );
    // The member acts in the organization with x-svc-account.
    const me = await ok('GET', '/me', member.key, undefined, { 'x-svc-account': orgId });
    expect(me.body.accountId).toBe(orgId);

    const lastOwner = await t.call('DELETE', `/accounts/${orgId}/members/${owner.id}`, { key: owner.key });
    expect(lastOwner.status).toBe(409);
    expect(lastOwner.body.error.code).toBe('last_owner');
    const demote = await t.call('POST', `/accounts/${orgId}/members`, { key: owner.key, body: { accountId: owner.id, role: 'member' } });
    expect(demote.status).toBe(409);
    expect((await t.call('DELETE', `/accounts/${orgId}/members/${member.id}`, { key: member.key })).status).toBe(200); // leaves
    expect((await t.call('GET', `/accounts/${orgId}`, { key: member.key })).status).toBe(404);
    // The gateway forgets the cached membership at once (accounts.member.removed), not after its TTL.
    const leftAt = Date.now();
    let acting = 200;
    while (acting === 200 && Date.now() - leftAt < 3000) {
      acting = (await t.call('GET', '/me', { key: member.key, headers: { 'x-svc-account': orgId } })).status;
      if (acting === 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(acting).toBe(404);
    expect(Date.now() - leftAt).toBeLessThan(1500);
    expect((await t.call('POST', `/accounts/${orgId}/members`, { key: owner.key, body: { accountId: orgId, role: 'member' } })).status).toBe(422);
    expect((await t.call('POST', `/accounts/${owner.id}/members`, { key: owner.key, body: { accountId: admin.id, role: 'member' } })).status).toBe(
      422,
    );

    const trail = await audit(orgId, owner.key);
    expect(trail.map((e) => e.action)).toEqual(expect.arrayContaining(['organization.created', 'member.added', 'member.removed']));
    const byAdmin = trail.find((e) => e.action === 'member.added' && e.data.memberId === member.id)!;
    expect(byAdmin.actor).toMatchObject({ kind: 'human', id: admin.id });
    expect((await t.call('GET', `/accounts/${orgId}/audit`, { key: member.key })).status).toBe(404); // gone now
  });

  test('settings: a validated document; PUT replaces, PATCH merges, ETag and If-Match', async () => {
    const ada = await person();
    const base = `/accounts/${ada.id}/settings`;
    const first = await ok('GET', base, ada.key);
    expect(first.body).toMatchObject({ timezone: 'UTC', locale: 'en-US', defaultModel: null, notifications: { email: true } });
    const etag0 = first.headers.get('etag')!;
    expect(etag0).toMatch(/^".+"$/);

    const put = await ok('PUT', base, ada.key, { timezone: 'Europe/Paris', metadata: { team: 'core' } }, { 'if-match': etag0 });
    expect(put.body).toMatchObject({ timezone: 'Europe/Paris', locale: 'en-US', metadata: { team: 'core' } });
    const etag1 = put.headers.get('etag')!;
    expect(etag1).not.toBe(etag0);

    const stale = await t.call('PATCH', base, { key: ada.key, body: { locale: 'fr-FR' }, headers: { 'if-match': etag0 } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('precondition_failed');

    const patched = await ok(
      'PATCH',
      base,
      ada.key,
      { locale: 'fr-FR', notifications: { email: false }, metadata: { team: null, env: 'prod' } },
      {
        'if-match': etag1,
      },
    );
    expect(patched.body).toMatchObject({
      timezone: 'Europe/Paris',
      locale: 'fr-FR',
      notifications: { email: false, securityAlerts: true },
      metadata: { env: 'prod' },
    });
    const reset = await ok('PATCH', base, ada.key, { timezone: null });
    expect(reset.body.timezone).toBe('UTC');
    const replaced = await ok('PUT', base, ada.key, {});
    expect(replaced.body).toEqual(first.body); // PUT replaces: back to the defaults
    expect(replaced.headers.get('etag')).toBe(etag0);
    const same = await ok('PUT', base, ada.key, {}, { 'if-match': etag0 });
    expect(same.headers.get('etag')).toBe(etag0);

    for (const body of [{ timezone: 'Mars/Olympus' }, { unknown: 1 }, { hosts: { callTimeoutMs: 1 } }, { notifications: { email: 'yes' } }]) {
      const bad = await t.call('PUT', base, { key: ada.key, body });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_settings');
      expect(bad.body.error.message).toMatch(/^settings\./);
    }
    expect((await t.call('PUT', base, { key: ada.key, body: [1] })).status).toBe(400);
    const trail = await audit(ada.id, ada.key, 'settings.updated');
    expect(trail.length).toBe(4); // the unchanged PUT is not a change
    expect(trail[0]!.actor.id).toBe(ada.id);
  });

  test('standing grants: created, widened, held by the grantee, deleted; published and audited', async () => {
    const ada = await person();
    const bob = await person();
    const agent = await agentKey(ada.key);
    const url = `/accounts/${ada.id}/standing-grants`;
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();

    const created = await t.call('POST', url, { key: ada.key, body: { granteeId: agent.id, verbs: ['drive.read'], expiresAt } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      accountId: ada.id,
      granteeKind: 'agent',
      granteeId: agent.id,
      verbs: ['drive.read'],
      scope: 'account',
      expiresAt,
      createdBy: { kind: 'human', id: ada.id },
    });
    expect(created.body.id).toMatch(/^grt_[0-9a-z]{26}$/);
    const retry = await t.call('POST', url, { key: ada.key, body: { granteeId: agent.id, verbs: ['drive.read'], expiresAt } });
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(created.body.id);
    const widened = await t.call('POST', url, { key: ada.key, body: { granteeId: agent.id, verbs: ['drive.write', 'drive.read'] } });
    expect(widened.status).toBe(200);
    expect(widened.body).toMatchObject({ id: created.body.id, verbs: ['drive.read', 'drive.write'], expiresAt: null });

    const held = await ok('GET', '/standing-grants/held', agent.key);
    expect(held.body.grants.map((g: any) => g.id)).toEqual([created.body.id]);
    expect(held.body.nextCursor).toBeNull();
    expect((await ok('GET', '/standing-grants/held', ada.key)).body.grants).toEqual([]);

    // Another account as grantee; it sees the grant among the ones it holds.
    const toBob = await ok('POST', url, ada.key, { granteeId: bob.id, verbs: ['profiles.read'], scope: 'project:web' });
    expect(toBob.body.granteeKind).toBe('account');
    expect((await ok('GET', '/standing-grants/held', bob.key)).body.grants.map((g: any) => g.id)).toEqual([toBob.body.id]);
    expect((await ok('GET', url, ada.key)).body.grants.map((g: any) => g.id).sort()).toEqual([created.body.id, toBob.body.id].sort());
    expect((await ok('GET', url, agent.key)).body.grants).toHaveLength(2); // agents read their account's grants

    // Bob cannot see, delete or add to Ada's grants.
    expect((await t.call('GET', url, { key: bob.key })).status).toBe(404);
    expect((await t.call('DELETE', `/standing-grants/${created.body.id}`, { key: bob.key })).status).toBe(404);
    expect((await t.call('POST', url, { key: bob.key, body: { granteeId: bob.id, verbs: ['*'] } })).status).toBe(404);

    const bad = [
      [{ granteeId: agent.id, verbs: [] }, 400],
      [{ granteeId: agent.id, verbs: ['Drive Read'] }, 400],
      [{ granteeId: agent.id, verbs: ['x'], expiresAt: '2001-01-01T00:00:00.000Z' }, 400],
      [{ granteeId: agent.id, verbs: ['x'], scope: 'every where' }, 400],
      [{ granteeId: 'agt_01m7zzzzzzzzzzzzzzzzzzzzzz', verbs: ['x'] }, 404],
      [{ granteeId: ada.id, verbs: ['x'] }, 422],
      [{ granteeId: agent.id, verbs: ['x'], extra: 1 }, 400],
    ] as const;
    for (const [body, status] of bad) {
      const res = await t.call('POST', url, { key: ada.key, body });
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), status]);
      expect(res.body).toEqual(ERROR_BODY);
    }

    expect((await t.call('DELETE', `/standing-grants/${created.body.id}`, { key: ada.key })).body).toEqual({ success: true });
    expect((await t.call('DELETE', `/standing-grants/${created.body.id}`, { key: ada.key })).status).toBe(200);
    expect((await ok('GET', '/standing-grants/held', agent.key)).body.grants).toEqual([]);

    const trail = await audit(ada.id, ada.key);
    const actions = trail.map((e) => e.action);
    expect(actions.filter((a) => a.startsWith('grant.'))).toEqual(['grant.deleted', 'grant.created', 'grant.widened', 'grant.created']);
    expect(trail.find((e) => e.action === 'grant.widened')!.data.addedVerbs).toEqual(['drive.write']);
    expect(trail.every((e) => e.actor.kind !== 'agent')).toBe(true);
    // ... and each one went out on the bus through the outbox, with the principal that made it.
    await waitFor(() => events.some((e) => e.type === 'accounts.grant.deleted' && (e.data as any).grantId === created.body.id));
    const published = events.find((e) => e.type === 'accounts.grant.created' && (e.data as any).grantId === created.body.id)!;
    expect(published).toMatchObject({ accountId: ada.id, data: { actor: { kind: 'human', id: ada.id }, verbs: ['drive.read'] } });
  });

  test('a project-scoped key grants inside its project only', async () => {
    const ada = await person();
    const agent = await agentKey(ada.key);
    const scoped = (await ok('POST', '/api/api-keys', ada.key, { name: 'p', projectId: 'web' })).body.key;
    const url = `/accounts/${ada.id}/standing-grants`;
    const inside = await ok('POST', url, scoped, { granteeId: agent.id, verbs: ['drive.read'] });
    expect(inside.body.scope).toBe('project:web');
    const outside = await t.call('POST', url, { key: scoped, body: { granteeId: agent.id, verbs: ['drive.read'], scope: 'account' } });
    expect(outside.status).toBe(403);
    expect(outside.body.error.code).toBe('project_scope');
    const elsewhere = await ok('POST', url, ada.key, { granteeId: agent.id, verbs: ['x'], scope: 'project:api' });
    // Scopes are structured values (kind:id), never paths: a traversal out of the key's project, or
    // any other malformed scope, is a 400 naming the field, whoever asks.
    for (const [key, scope] of [
      [scoped, 'project:web/../api'],
      [ada.key, 'project:p1/../p2'],
      [ada.key, 'project:web/x'],
      [ada.key, 'project:..'],
      [ada.key, 'project:'],
      [ada.key, 'host:a\tb'],
      [ada.key, 'team:x'],
      [ada.key, 'project:a\u202eb'],
    ]) {
      const res = await t.call('POST', url, { key, body: { granteeId: agent.id, verbs: ['x'], scope } });
      expect([scope, res.status, res.body.error.code, res.body.error.message]).toEqual([
        scope,
        400,
        'invalid_request',
        expect.stringMatching(/^body\.scope: /),
      ]);
    }
    // A key's project is the same kind of id.
    for (const projectId of ['..', 'a/b', 'web/../api', ' web']) {
      const res = await t.call('POST', '/api/api-keys', { key: ada.key, body: { name: 'p', projectId } });
      expect([projectId, res.status, res.body.error.message]).toEqual([projectId, 400, expect.stringMatching(/projectId/)]);
    }
    expect((await ok('GET', url, scoped)).body.grants.map((g: any) => g.id)).toEqual([inside.body.id]);
    expect((await t.call('DELETE', `/standing-grants/${elsewhere.body.id}`, { key: scoped })).status).toBe(404);
    expect((await t.call('PATCH', `/accounts/${ada.id}/settings`, { key: scoped, body: { locale: 'de-DE' } })).body.error.code).toBe('project_scope');
  });

  test('signing keys: an Ed25519 JWK; rotation keeps old signatures verifiable for the grace period', async () => {
    const ada = await person();
    const bob = await person();
    const base = `/accounts/${ada.id}`;
    const k0 = (await ok('GET', `${base}/signing-key`, ada.key)).body;
    expect(k0).toMatchObject({ algorithm: 'EdDSA', publicKey: { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' }, previous: [] });
    expect(k0.publicKey.kid).toBe(k0.id);
    expect(k0.publicKey.d).toBeUndefined();
    expect((await ok('GET', `${base}/signing-key`, ada.key)).body.id).toBe(k0.id); // stable

    const signed = (await ok('POST', `${base}/signatures`, ada.key, { payload: { hello: 'world' } })).body;
    expect(signed).toMatchObject({ keyId: k0.id, algorithm: 'EdDSA' });
    // Anyone with the public JWK verifies it, no platform needed.
    const { payload } = await compactVerify(signed.signature, await importJWK(k0.publicKey, 'EdDSA'));
    expect(JSON.parse(Buffer.from(payload).toString())).toEqual({ hello: 'world' });

    const rotated = await ok('POST', `${base}/signing-key/rotate`, ada.key);
    expect(rotated.body.id).not.toBe(k0.id);
    expect(rotated.body.previous).toEqual([expect.objectContaining({ id: k0.id, publicKey: k0.publicKey })]);
    expect(Date.parse(rotated.body.previous[0].verifyUntil) - Date.now()).toBeGreaterThan(167 * 3600_000);
    expect(rotated.body.jwks.keys.map((k: any) => k.kid)).toEqual([rotated.body.id, k0.id]);

    const old = await ok('POST', `${base}/signatures/verify`, ada.key, { signature: signed.signature });
    expect(old.body).toEqual({ valid: true, keyId: k0.id, payload: { hello: 'world' }, reason: null });
    const fresh = (await ok('POST', `${base}/signatures`, ada.key, { payload: [1, 2] })).body;
    expect(fresh.keyId).toBe(rotated.body.id);
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: fresh.signature })).body.valid).toBe(true);

    // A rotation without grace retires the old key for verification at once.
    await ok('POST', `${base}/signing-key/rotate?gracePeriodHours=0`, ada.key);
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: fresh.signature })).body).toMatchObject({
      valid: false,
      reason: 'key_expired',
    });
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: signed.signature })).body.valid).toBe(true);
    const [h, p, s] = signed.signature.split('.');
    const tampered = `${h}.${Buffer.from('{"hello":"mars"}').toString('base64url')}.${s}`;
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: tampered })).body.reason).toBe('bad_signature');
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: 'garbage' })).body.reason).toBe('malformed');
    // Another account's key does not verify here (and its signing key is not visible).
    const bobSig = (await ok('POST', `/accounts/${bob.id}/signatures`, bob.key, { payload: p })).body.signature;
    expect((await ok('POST', `${base}/signatures/verify`, ada.key, { signature: bobSig })).body.reason).toBe('unknown_key');
    expect((await t.call('GET', `${base}/signing-key`, { key: bob.key })).status).toBe(404);
    expect((await t.call('POST', `${base}/signing-key/rotate`, { key: bob.key })).status).toBe(404);

    // Private keys are sealed at rest.
    const sql = await t.stack.backends.sql();
    const rows = await sql.query<{ private_key_enc: string; public_jwk: unknown }>(
      `SELECT private_key_enc, public_jwk FROM accounts.signing_keys WHERE account_id = $1`,
      [ada.id],
    );
    expect(rows.length).toBe(3);
    for (const r of rows) {
      expect(r.private_key_enc).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(JSON.stringify(r.public_jwk)).not.toContain('"d"');
    }
    const trail = await audit(ada.id, ada.key, 'signing_key.rotated');
    expect(trail).toHaveLength(2);
    expect(trail[1]!.data).toMatchObject({ previousKeyId: k0.id, keyId: rotated.body.id });
    expect(trail[1]!.actor).toMatchObject({ kind: 'human', id: ada.id });
  });

  test('hosts: pairing gives a credential once; a call to an offline host answers 503; a connected host answers', async () => {
    const ada = await person();
    const bob = await person();
    const paired = await t.call('POST', `/accounts/${ada.id}/hosts`, { key: ada.key, body: { name: 'laptop' } });
    expect(paired.status).toBe(201);
    expect(paired.body.credential).toMatch(/^svch_[0-9a-f]{64}$/);
    expect(paired.body.host).toMatchObject({ accountId: ada.id, name: 'laptop', lastSeenAt: null, pairedBy: { kind: 'human', id: ada.id } });
    expect(paired.body.credential.startsWith(paired.body.host.credentialPrefix)).toBe(true);
    const hostId = paired.body.host.id;
    expect(hostId).toMatch(/^host_[0-9a-z]{26}$/);
    const listed = await ok('GET', `/accounts/${ada.id}/hosts`, ada.key);
    expect(listed.body.hosts.map((h: any) => h.id)).toEqual([hostId]);
    expect(JSON.stringify(listed.body)).not.toContain(paired.body.credential);
    // A host credential is not an API key: it works only where a host may call (GET /me does).
    expect((await t.call('GET', `/accounts/${ada.id}/hosts`, { key: paired.body.credential })).status).toBe(401);
    expect((await t.call('GET', '/me', { key: paired.body.credential })).body).toMatchObject({ kind: 'host', accountId: ada.id, keyId: hostId });

    const offline = await t.call('POST', `/hosts/${hostId}/call`, { key: ada.key, body: { tool: 'fs.read', arguments: { path: '/etc/hosts' } } });
    expect(offline.status).toBe(503);
    expect(offline.body).toEqual(ERROR_BODY);
    expect(offline.body.error.code).toBe('host_offline');

    // The host connects (here: a responder on the bus, as the host front will do).
    const bus = await t.stack.backends.bus();
    const seen: any[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const sub = await bus.respond(`hosts.${hostId}.call`, async (req: any) => {
      seen.push(req);
      if (req.tool === 'slow') await gate; // answers only after the caller gave up
      return { content: [{ type: 'text', text: `ran ${req.tool}` }] };
    });
    try {
      const call = await ok('POST', `/hosts/${hostId}/call`, ada.key, { tool: 'fs.read', arguments: { path: '/tmp/x' } });
      expect(call.body).toMatchObject({ hostId, tool: 'fs.read', result: { content: [{ type: 'text', text: 'ran fs.read' }] } });
      expect(call.body.callId).toMatch(/^call_/);
      expect(seen[0]).toMatchObject({ tool: 'fs.read', arguments: { path: '/tmp/x' }, caller: { kind: 'human', id: ada.id } });
      const slow = await t.call('POST', `/hosts/${hostId}/call`, { key: ada.key, body: { tool: 'slow', timeoutMs: 300 } });
      expect(slow.status).toBe(504);
      expect(slow.body.error.code).toBe('host_timeout');
      release();
      // Bob may not use Ada's host... until Ada grants it.
      expect((await t.call('POST', `/hosts/${hostId}/call`, { key: bob.key, body: { tool: 'x' } })).status).toBe(404);
      await ok('POST', `/accounts/${ada.id}/standing-grants`, ada.key, { granteeId: bob.id, verbs: ['hosts.call'], scope: `host:${hostId}` });
      expect((await t.call('POST', `/hosts/${hostId}/call`, { key: bob.key, body: { tool: 'x' } })).status).toBe(200);
      expect((await ok('GET', `/accounts/${ada.id}/hosts`, ada.key)).body.hosts[0].lastSeenAt).toMatch(ISO);
    } finally {
      await sub.unsubscribe();
    }
    expect((await t.call('GET', `/accounts/${ada.id}/hosts`, { key: bob.key })).status).toBe(404);
    expect((await t.call('DELETE', `/hosts/${hostId}`, { key: bob.key })).status).toBe(404);
    expect((await t.call('DELETE', `/hosts/${hostId}`, { key: ada.key })).body).toEqual({ success: true });
    expect((await t.call('DELETE', `/hosts/${hostId}`, { key: ada.key })).status).toBe(200);
    expect((await t.call('POST', `/hosts/${hostId}/call`, { key: ada.key, body: { tool: 'x' } })).status).toBe(404);

    const sql = await t.stack.backends.sql();
    const dump = JSON.stringify(await sql.query(`SELECT * FROM accounts.hosts`));
    expect(dump).toContain(hostId);
    expect(dump).not.toContain(paired.body.credential.slice(5));
    expect((await audit(ada.id, ada.key)).map((e) => e.action)).toEqual(expect.arrayContaining(['host.paired', 'host.unpaired']));
  });

  test('the chain of authority: person, person in an organization, agent, agent in an organization', async () => {
    const ada = await person('Ada Chain');
    const orgId = await org(ada.key, 'Chain Org');
    const agent = await agentKey(ada.key);
    const links = (b: any) => b.chain.map((l: any) => [l.kind, l.id, l.relation, l.role]);

    const own = (await ok('GET', '/accounts/me/chain', ada.key)).body;
    expect(links(own)).toEqual([['user', ada.id, 'self', null]]);
    expect(own).toMatchObject({ actingAccountId: ada.id, principal: { kind: 'human', channel: 'api' }, canChangeAuthority: true });
    const inOrg = (await ok('GET', '/accounts/me/chain', ada.key, undefined, { 'x-svc-account': orgId })).body;
    expect(links(inOrg)).toEqual([
      ['user', ada.id, 'self', null],
      ['organization', orgId, 'member', 'owner'],
    ]);
    const asAgent = (await ok('GET', '/v1/accounts/me/chain', agent.key)).body;
    expect(links(asAgent)).toEqual([
      ['agent', agent.id, 'self', null],
      ['user', ada.id, 'owner', null],
    ]);
    expect(asAgent.canChangeAuthority).toBe(false);
    const agentInOrg = (await ok('GET', '/accounts/me/chain', agent.key, undefined, { 'x-svc-account': orgId })).body;
    expect(links(agentInOrg)).toEqual([
      ['agent', agent.id, 'self', null],
      ['user', ada.id, 'owner', null],
      ['organization', orgId, 'member', 'owner'],
    ]);
    expect(agentInOrg.actingAccountId).toBe(orgId);
  });
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
