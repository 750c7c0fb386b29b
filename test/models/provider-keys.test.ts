import fs from 'node:fs';
import path from 'node:path';

import { DomainError, type EventEnvelope, type Principal, PrincipalSigner } from '@svc/kit';
import { models } from '@svc/proto';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Provider keys through HTTP (docs/models.md): set, list (last four characters only), the models'
 * availability, delete; authority (a person through the API, never an agent key or MCP); an
 * organization's key serving its members; isolation between accounts; no plaintext key in the
 * database, the logs or the events; the SSRF rule on a custom baseUrl.
 */

const logs: string[] = [];
let t: TestStack;
let ada: { id: string; key: string };
let bob: { id: string; key: string };
let orgId: string;
let agent: { id: string; key: string; keyId: string };
const events: EventEnvelope[] = [];

beforeAll(async () => {
  t = await startTestStack({ LOG_LEVEL: 'trace' }, { logDestination: { write: (l: string) => void logs.push(l) } });
  const bus = await t.stack.backends.bus();
  await bus.subscribe('models.provider_key.>', async (e) => void events.push(e));
  const user = async (name: string) => {
    const body = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
    return { id: body.account.id as string, key: body.key as string };
  };
  ada = await user('Ada');
  bob = await user('Bob');
  orgId = (await t.ok('POST', '/accounts', ada.key, { kind: 'organization', name: 'Ada Org' })).body.id;
  await t.ok('POST', `/accounts/${orgId}/members`, ada.key, { accountId: bob.id, role: 'member' });
  const agentId = (await t.ok('POST', '/agents', ada.key, { name: 'keyless' })).body.id;
  const k = (await t.ok('POST', `/agents/${agentId}/keys`, ada.key, { name: 'k' })).body;
  agent = { id: agentId, key: k.key, keyId: k.id };
}, 60_000);
afterAll(() => t?.stop());

const SECRET = 'sk-proj-Zx9QvT7bL2mN4pR8sK1wY6uE3hJ5gF0dA';
const ANTHROPIC_SECRET = 'sk-ant-api03-Qq7Ww8Ee9Rr0Tt1Yy2Uu3Ii4Oo5Pp6';
/** The distinct availabilities of a provider's models for a caller, e.g. `['false provider_key_missing']`. */
const availability = async (key: string, provider: string, headers?: Record<string, string>) => {
  const listed = (await t.ok('GET', `/models?provider=${provider}`, key, undefined, headers)).body.models as any[];
  expect(listed.length).toBeGreaterThan(0);
  return [...new Set(listed.map((m) => `${m.available} ${m.unavailableReason?.code ?? '-'}`))];
};
const MISSING = ['false provider_key_missing'];
const AVAILABLE = ['true -'];

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
}

describe('provider keys', () => {
  test('set, list (last four only), availability flips, delete', async () => {
    expect(await availability(ada.key, 'openai')).toEqual(MISSING);
    const set = await t.ok('PUT', '/models/provider-keys/openai', ada.key, { key: SECRET });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      provider: 'openai',
      last4: SECRET.slice(-4),
      baseUrl: null,
      setBy: { kind: 'human', id: ada.id },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(JSON.stringify(set.body)).not.toContain(SECRET);

    const list = (await t.ok('GET', '/models/provider-keys', ada.key)).body;
    expect(Object.keys(list)).toEqual(['providerKeys']);
    expect(list.providerKeys).toEqual([set.body]);
    expect(JSON.stringify(list)).not.toContain(SECRET);
    // An agent of the account may list them (never the key) and sees the models available.
    expect((await t.ok('GET', '/models/provider-keys', agent.key)).body.providerKeys.map((k: any) => k.provider)).toEqual(['openai']);

    expect(await availability(ada.key, 'openai')).toEqual(AVAILABLE);
    expect(await availability(agent.key, 'openai')).toEqual(AVAILABLE);
    expect(await availability(ada.key, 'anthropic')).toEqual(MISSING);
    const catalog = (await t.ok('GET', '/models/catalog', ada.key)).body.models as any[];
    expect(catalog.filter((m) => m.provider === 'openai').every((m) => m.available)).toBe(true);

    // Replacing keeps createdAt and shows the new key's last four.
    const replaced = (await t.ok('PUT', '/models/provider-keys/openai', ada.key, { key: `${SECRET}XYZW` })).body;
    expect(replaced).toMatchObject({ last4: 'XYZW', createdAt: set.body.createdAt });

    expect((await t.ok('DELETE', '/models/provider-keys/openai', ada.key)).body).toEqual({ success: true });
    expect((await t.ok('GET', '/models/provider-keys', ada.key)).body).toEqual({ providerKeys: [] });
    expect(await availability(ada.key, 'openai')).toEqual(MISSING);
    const again = await t.call('DELETE', '/models/provider-keys/openai', { key: ada.key });
    expect([again.status, again.body.error.code]).toEqual([404, 'provider_key_not_found']);
  });

  test('bad input: unknown provider, a key with whitespace or too long, openai-compatible without baseUrl', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['svc', { key: 'k' }, 'unknown_provider'],
      ['mistral', { key: 'k' }, 'unknown_provider'],
      ['openai', { key: 'has space' }, 'invalid_request'],
      ['openai', { key: '' }, 'invalid_request'],
      ['openai', { key: 'x'.repeat(501) }, 'invalid_request'],
      ['openai', { key: 'k', extra: 1 }, 'invalid_request'],
      ['openai-compatible', { key: 'k' }, 'invalid_request'],
    ];
    for (const [provider, body, code] of cases) {
      const res = await t.call('PUT', `/models/provider-keys/${provider}`, { key: ada.key, body });
      expect([provider, res.status, res.body]).toEqual([provider, 400, ERROR_BODY]);
      expect([provider, res.body.error.code]).toEqual([provider, code]);
    }
    expect((await t.ok('GET', '/models/provider-keys', ada.key)).body.providerKeys).toEqual([]);
  });

  test('an agent key may not set or delete a key (403 human_principal_required), in its account or an organization', async () => {
    await t.ok('PUT', '/models/provider-keys/anthropic', ada.key, { key: ANTHROPIC_SECRET });
    for (const headers of [{}, { 'x-svc-account': orgId }]) {
      const set = await t.call('PUT', '/models/provider-keys/openai', { key: agent.key, body: { key: 'sk-agent' }, headers });
      expect([set.status, set.body.error.code]).toEqual([403, 'human_principal_required']);
      const del = await t.call('DELETE', '/models/provider-keys/anthropic', { key: agent.key, headers });
      expect([del.status, del.body.error.code]).toEqual([403, 'human_principal_required']);
    }
    expect((await t.ok('GET', '/models/provider-keys', ada.key)).body.providerKeys.map((k: any) => k.provider)).toEqual(['anthropic']);
  });

  test('the service refuses an agent principal and the MCP channel on its own', async () => {
    const signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
    const client = t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
    const principals: Principal[] = [
      { kind: 'agent', agentId: agent.id, accountId: ada.id, keyId: agent.keyId, channel: 'api' },
      { kind: 'agent', agentId: agent.id, accountId: orgId, keyId: agent.keyId, channel: 'api', role: 'owner' },
      { kind: 'human', userId: ada.id, accountId: ada.id, keyId: 'key_01m7zzzzzzzzzzzzzzzzzzzzzz', channel: 'mcp' },
    ];
    for (const p of principals) {
      const o = { principalToken: (await signer.sign(p)).token };
      for (const op of [
        () => client.setProviderKey({ provider: 'openai', key: 'sk-x' }, o),
        () => client.deleteProviderKey({ provider: 'anthropic' }, o),
      ]) {
        const err = await op().then(
          () => null,
          (e: unknown) => e,
        );
        expect([p.kind, p.channel, err instanceof DomainError ? err.code : String(err)]).toEqual([p.kind, p.channel, 'human_principal_required']);
      }
    }
    expect((await t.ok('GET', '/models/provider-keys', ada.key)).body.providerKeys.map((k: any) => k.provider)).toEqual(['anthropic']);
  });

  test("an organization's key serves its members acting in it; another account's keys are invisible", async () => {
    const org = { 'x-svc-account': orgId };
    await t.ok('PUT', '/models/provider-keys/openai', ada.key, { key: SECRET }, org);
    // Bob, a member acting in the organization, sees its key and its models available.
    expect((await t.ok('GET', '/models/provider-keys', bob.key, undefined, org)).body.providerKeys.map((k: any) => [k.provider, k.last4])).toEqual([
      ['openai', SECRET.slice(-4)],
    ]);
    expect(await availability(bob.key, 'openai', org)).toEqual(AVAILABLE);
    // A member does not manage the organization's keys.
    const byMember = await t.call('DELETE', '/models/provider-keys/openai', { key: bob.key, headers: org });
    expect([byMember.status, byMember.body.error.code]).toEqual([403, 'insufficient_role']);
    // In his own account Bob has none, and sees neither Ada's nor the organization's.
    expect((await t.ok('GET', '/models/provider-keys', bob.key)).body.providerKeys).toEqual([]);
    expect(await availability(bob.key, 'openai')).toEqual(MISSING);
    expect(await availability(bob.key, 'anthropic')).toEqual(MISSING);
    const notHis = await t.call('DELETE', '/models/provider-keys/anthropic', { key: bob.key });
    expect(notHis.status).toBe(404);
    // Ada's own account holds her anthropic key only: the organization's key is the organization's.
    expect((await t.ok('GET', '/models/provider-keys', ada.key)).body.providerKeys.map((k: any) => k.provider)).toEqual(['anthropic']);
  });

  test('a custom baseUrl must reach a public address', async () => {
    for (const baseUrl of [
      'http://127.0.0.1:8000/v1',
      'http://169.254.169.254/',
      'http://[::1]/v1',
      'http://10.0.0.8/v1',
      'http://localhost:8000/v1',
    ]) {
      const res = await t.call('PUT', '/models/provider-keys/openai-compatible', { key: ada.key, body: { key: 'sk-local', baseUrl } });
      expect([baseUrl, res.status, res.body.error?.code]).toEqual([baseUrl, 400, 'address_not_allowed']);
    }
    const bad = await t.call('PUT', '/models/provider-keys/openai-compatible', {
      key: ada.key,
      body: { key: 'sk-local', baseUrl: 'ftp://93.184.215.14/' },
    });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'address_not_allowed']);
    // A public address is accepted (no DNS needed for an IP literal).
    const ok = await t.ok('PUT', '/models/provider-keys/openai-compatible', ada.key, { key: 'sk-public', baseUrl: 'https://93.184.215.14/v1' });
    expect(ok.body).toMatchObject({ provider: 'openai-compatible', baseUrl: 'https://93.184.215.14/v1', last4: 'blic' });
    await t.ok('DELETE', '/models/provider-keys/openai-compatible', ada.key);
  });

  test('no plaintext key in the database, the logs or the events', async () => {
    await t.ok('PUT', '/models/provider-keys/openai', ada.key, { key: SECRET });
    const sql = await t.stack.backends.sql();
    const tables = await sql.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'models'`);
    expect(tables.map((r) => r.table_name)).toEqual(expect.arrayContaining(['provider_keys', 'outbox']));
    let rows = 0;
    for (const { table_name } of tables) {
      const dump = await sql.query<{ row: string }>(`SELECT t::text AS row FROM models.${table_name} t`);
      rows += dump.length;
      for (const { row } of dump) {
        expect([table_name, row.includes(SECRET), row.includes(ANTHROPIC_SECRET)]).toEqual([table_name, false, false]);
      }
    }
    expect(rows).toBeGreaterThan(0);
    const stored = await sql.query<{ sealed_key: string; last4: string }>(
      `SELECT sealed_key, last4 FROM models.provider_keys WHERE account_id = $1`,
      [ada.id],
    );
    expect(stored.map((r) => r.sealed_key.startsWith('v1.'))).toEqual([true, true]);

    await waitFor(() => events.filter((e) => e.type === 'models.provider_key.set').length >= 6);
    expect(events.filter((e) => e.type === 'models.provider_key.set').length).toBeGreaterThanOrEqual(6);
    const kinds = new Set(events.map((e) => e.type));
    expect(kinds).toEqual(new Set(['models.provider_key.set', 'models.provider_key.deleted']));
    const first = events.find((e) => e.type === 'models.provider_key.set')!;
    expect(first).toMatchObject({ accountId: ada.id, data: { provider: 'openai', last4: SECRET.slice(-4) } });
    const text = JSON.stringify(events) + logs.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    expect(text.includes(SECRET)).toBe(false);
    expect(text.includes(ANTHROPIC_SECRET)).toBe(false);
  });

  test('the embedded KEK is generated once into the data directory (0600); its path is logged, never its value', () => {
    const file = path.join(t.env.SVC_DATA_DIR!, 'models-kek');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const kek = fs.readFileSync(file, 'utf8').trim();
    expect(kek).toMatch(/^local:[A-Za-z0-9+/=]{44}$/);
    expect(logs.some((l) => l.includes(file))).toBe(true);
    expect(logs.some((l) => l.includes(kek.split(':')[1]!))).toBe(false);
  });
});

describe('SVC_MODELS_ALLOWED_HOSTS', () => {
  test('the operator may allow a private host: then 127.0.0.1 is accepted, the metadata address still not', async () => {
    const allowed = await startTestStack({ SVC_MODELS_ALLOWED_HOSTS: '127.0.0.1, 10.1.0.0/16' });
    try {
      const key = allowed.bootstrapKey;
      const ok = await allowed.ok('PUT', '/models/provider-keys/openai-compatible', key, { key: 'sk-local', baseUrl: 'http://127.0.0.1:8000/v1' });
      expect(ok.body).toMatchObject({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:8000/v1' });
      await allowed.ok('PUT', '/models/provider-keys/openai', key, { key: 'sk-net', baseUrl: 'http://10.1.2.3/v1' });
      const meta = await allowed.call('PUT', '/models/provider-keys/openai-compatible', {
        key,
        body: { key: 'sk-local', baseUrl: 'http://169.254.169.254/' },
      });
      expect([meta.status, meta.body.error.code]).toEqual([400, 'address_not_allowed']);
      expect((await allowed.ok('GET', '/models/provider-keys', key)).body.providerKeys.map((k: any) => k.provider)).toEqual([
        'openai',
        'openai-compatible',
      ]);
    } finally {
      await allowed.stop();
    }
  }, 60_000);
});
