import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  AccountsDomain,
  AccountStore,
  checkIfMatch,
  DEFAULT_SETTINGS,
  generateSigningKey,
  KeyVault,
  mergePatch,
  migrations,
  privateKeyFrom,
  SCHEMA,
  scopeWithin,
  settingsEtag,
  signCompact,
  validateSettings,
  vaultSecret,
  verbCovers,
  verifyCompact,
} from '@svc/accounts';
import {
  type Bus,
  BusRequestError,
  createMemoryBus,
  createNatsBus,
  createPgliteSql,
  createPgSql,
  DomainError,
  migrate,
  newId,
  type Principal,
  type Sql,
} from '@svc/kit';

import { createDatabase } from '../../../../test/support/backends';

/** The accounts rules on their own: settings, sealing, signing, request/reply, and the domain on SQL. */

const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? e.code : e instanceof BusRequestError ? e.code : String(e)),
  );

describe('settings', () => {
  test('defaults, validation with field names, merge patch (RFC 7396), stable ETags, If-Match', () => {
    expect(validateSettings({})).toEqual(DEFAULT_SETTINGS);
    expect(() => validateSettings({ timezone: 'Nowhere/Land' })).toThrow(/^settings\.timezone: /);
    expect(() => validateSettings({ notifications: { sms: true } })).toThrow('settings.notifications.sms: is not a known setting');
    expect(() => validateSettings({ metadata: { 'bad key': 'x' } })).toThrow(/settings\.metadata/);
    expect(() => validateSettings(null)).toThrow(/must be a JSON object/);

    expect(mergePatch({ a: 'b', c: { d: 'e', f: 'g' } }, { a: 'z', c: { f: null } })).toEqual({ a: 'z', c: { d: 'e' } });
    expect(mergePatch({ a: [1, 2] }, { a: [3] })).toEqual({ a: [3] });
    expect(mergePatch({ a: 1 }, { b: { c: null } })).toEqual({ a: 1, b: {} });
    expect(mergePatch('x', { a: 1 })).toEqual({ a: 1 });

    const a = validateSettings({ timezone: 'UTC', metadata: { x: '1', y: '2' } });
    const b = validateSettings({ metadata: { y: '2', x: '1' } });
    expect(settingsEtag(a)).toBe(settingsEtag(b));
    expect(settingsEtag(a)).not.toBe(settingsEtag(DEFAULT_SETTINGS));
    const e = settingsEtag(a);
    expect(() => checkIfMatch(undefined, e)).not.toThrow();
    expect(() => checkIfMatch('*', e)).not.toThrow();
    expect(() => checkIfMatch(`"nope", W/${e}`, e)).not.toThrow();
    expect(() => checkIfMatch('"nope"', e)).toThrow(DomainError);
  });

  test('grant scopes and verbs', () => {
    expect(scopeWithin('project:web/x', 'project:web')).toBe(true);
    expect(scopeWithin('project:webapp', 'project:web')).toBe(false);
    expect(verbCovers('*', 'hosts.call')).toBe(true);
    expect(verbCovers('hosts.*', 'hosts.call')).toBe(true);
    expect(verbCovers('hosts.*', 'hostsx.call')).toBe(false);
    expect(verbCovers('hosts.read', 'hosts.call')).toBe(false);
  });
});

describe('sealed signing keys', () => {
  test('seal/open round trip; another secret, another row or a flipped bit cannot open it', () => {
    const v = new KeyVault('a'.repeat(64));
    const secret = Buffer.from('private key bytes');
    const sealed = v.seal(secret, 'acct_1:sk_1');
    expect(sealed).not.toContain(secret.toString('base64url'));
    expect(v.open(sealed, 'acct_1:sk_1')).toEqual(secret);
    expect(() => v.open(sealed, 'acct_2:sk_1')).toThrow();
    expect(() => new KeyVault('b'.repeat(64)).open(sealed, 'acct_1:sk_1')).toThrow();
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] ^= 1;
    expect(() => v.open([...parts.slice(0, 3), ct.toString('base64url')].join('.'), 'acct_1:sk_1')).toThrow();
  });

  test('without SVC_INTERNAL_SECRET the vault secret is kept in the data dir (0600) and survives restarts', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-vault-'));
    try {
      const s1 = vaultSecret({ SVC_DATA_DIR: dir });
      expect(vaultSecret({ SVC_DATA_DIR: dir })).toBe(s1);
      expect(fs.statSync(path.join(dir, 'signing-secret')).mode & 0o777).toBe(0o600);
      expect(vaultSecret({ SVC_DATA_DIR: dir, SVC_INTERNAL_SECRET: 'x'.repeat(40) })).toBe('x'.repeat(40));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('Ed25519 JWS sign and verify', async () => {
    const k = generateSigningKey('sk_test');
    expect(k.publicJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', kid: 'sk_test', alg: 'EdDSA' });
    const jws = await signCompact(Buffer.from('{"a":1}'), privateKeyFrom(k.privatePkcs8), 'sk_test');
    expect(Buffer.from((await verifyCompact(jws, k.publicJwk))!).toString()).toBe('{"a":1}');
    expect(await verifyCompact(jws, generateSigningKey('sk_other').publicJwk)).toBeNull();
  });
});

const buses: Array<[string, () => Promise<Bus>]> = [['memory', async () => createMemoryBus('rr')]];
if (process.env.NATS_URL) buses.push(['nats', () => createNatsBus(process.env.NATS_URL!, `rr${Date.now().toString(36)}`)]);

describe.each(buses)('Bus request/reply on %s', (_name, make) => {
  let bus: Bus;
  beforeAll(async () => {
    bus = await make();
  });
  afterAll(() => bus?.close());

  test('one responder answers; no responder is told at once; slow and failing responders are told apart', async () => {
    expect(await codeOf(bus.request('hosts.h1.call', { a: 1 }, 2000))).toBe('no_responders');
    const seen: unknown[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const sub = await bus.respond('hosts.*.call', async (data, meta) => {
      seen.push([data, meta.subject.endsWith('hosts.h1.call')]);
      const d = data as { op: string };
      if (d.op === 'slow') await gate; // answers only after the caller gave up
      if (d.op === 'fail') throw new Error('tool crashed');
      return { echoed: data };
    });
    const started = Date.now();
    expect(await bus.request('hosts.h1.call', { op: 'echo' }, 2000)).toEqual({ echoed: { op: 'echo' } });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(seen).toEqual([[{ op: 'echo' }, true]]);
    expect(await codeOf(bus.request('hosts.h1.call', { op: 'slow' }, 100))).toBe('timeout');
    release();
    const failed = await bus.request('hosts.h1.call', { op: 'fail' }, 2000).catch((e) => e);
    expect(failed).toBeInstanceOf(BusRequestError);
    expect(failed.code).toBe('responder_failed');
    expect(failed.message).toContain('tool crashed');
    await sub.unsubscribe();
    await new Promise((r) => setTimeout(r, 50));
    expect(await codeOf(bus.request('hosts.h1.call', {}, 2000))).toBe('no_responders');
  });

  test('with several responders each request goes to one of them', async () => {
    let n = 0;
    const subs = await Promise.all([1, 2, 3].map(() => bus.respond('svc.one', async () => ++n)));
    for (let i = 0; i < 6; i++) await bus.request('svc.one', null, 2000);
    expect(n).toBe(6);
    await Promise.all(subs.map((s) => s.unsubscribe()));
  });
});

// The domain on SQL --------------------------------------------------------------------------

let sql: Sql;
let dir: string;
let drop: (() => Promise<void>) | undefined;
const revoked: string[] = [];
let onImport: (() => Promise<void>) | undefined;

function domainWith(secret: string): AccountsDomain {
  return new AccountsDomain({
    store: new AccountStore(sql),
    outbox: () => undefined,
    bus: async () => createMemoryBus('unit'),
    vault: new KeyVault(secret),
    keysClient: () =>
      ({
        async importKey(req: { accountId: string }) {
          await onImport?.();
          return { key: { id: newId('key'), accountId: req.accountId } };
        },
        async revokeOwnerKeys(req: { ownerId: string }) {
          revoked.push(req.ownerId);
          return { revoked: 1 };
        },
      }) as never,
    agentsClient: () => ({}) as never,
    systemToken: async () => 'token',
    log: { warn() {} },
  });
}

const operatorId = newId('acct');
const OPERATOR: Principal = { kind: 'human', userId: operatorId, accountId: operatorId, keyId: 'key_op', channel: 'api' };

describe('AccountsDomain on SQL', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-accounts-'));
    if (process.env.DATABASE_URL) {
      const db = await createDatabase(process.env.DATABASE_URL);
      sql = createPgSql(db.url, { max: 4 });
      drop = db.drop;
    } else {
      sql = await createPgliteSql(path.join(dir, 'pg'));
    }
    await migrate(sql, SCHEMA, migrations);
    await new AccountStore(sql).insertOperatorIfEmpty(operatorId);
  }, 30_000);
  afterAll(async () => {
    await sql?.close();
    await drop?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a user account whose creation fails after its key was imported leaves no usable key', async () => {
    const d = domainWith('s'.repeat(40));
    // Someone takes the email between the check and the insert.
    onImport = async () => {
      await sql.query(`INSERT INTO accounts.accounts (id, kind, name, email) VALUES ($1, 'user', 'other', 'race@example.com')`, [newId('acct')]);
    };
    try {
      expect(await codeOf(d.createAccount(OPERATOR, { kind: 'user', name: 'Racer', email: 'race@example.com' }))).toBe('email_taken');
    } finally {
      onImport = undefined;
    }
    expect(revoked).toHaveLength(1);
    expect(await sql.query(`SELECT id FROM accounts.accounts WHERE id = $1`, [revoked[0]])).toEqual([]);
    const made = await d.createAccount(OPERATOR, { kind: 'user', name: 'Fine' });
    expect(made.key).toMatch(/^svc_[0-9a-f]{64}$/);
  });

  test('a refused change writes neither audit nor outbox rows', async () => {
    const d = domainWith('s'.repeat(40));
    const { account } = await d.createAccount(OPERATOR, { kind: 'organization', name: 'Solo' });
    const count = async () =>
      (await sql.query<{ n: number }>(`SELECT (SELECT count(*) FROM accounts.audit_events) + (SELECT count(*) FROM accounts.outbox) AS n`))[0]!.n;
    const before = Number(await count());
    expect(await codeOf(d.addMember(OPERATOR, account.id, operatorId, 'member'))).toBe('last_owner');
    expect(await codeOf(d.removeMember(OPERATOR, account.id, operatorId))).toBe('last_owner');
    expect(await codeOf(d.writeSettings(OPERATOR, account.id, 'merge', '{"timezone":"Mars/Base"}', undefined))).toBe('invalid_settings');
    expect(Number(await count())).toBe(before);
    const agent: Principal = { kind: 'agent', agentId: newId('agt'), accountId: account.id, keyId: 'key_ag', channel: 'api' };
    expect(await codeOf(d.writeSettings(agent, account.id, 'merge', '{}', undefined))).toBe('human_principal_required');
    expect(await codeOf(d.rotateSigningKey({ ...OPERATOR, channel: 'mcp' }, account.id, undefined))).toBe('human_principal_required');
  });

  test('concurrent first grants for one grantee and scope end as one live grant', async () => {
    const d = domainWith('s'.repeat(40));
    const { account } = await d.createAccount(OPERATOR, { kind: 'organization', name: 'Race' });
    const results = await Promise.all(
      [['a'], ['b'], ['a', 'c']].map((verbs) => d.createGrant(OPERATOR, account.id, { granteeId: operatorId, verbs })),
    );
    expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
    const live = await sql.query<{ verbs: string[] }>(`SELECT verbs FROM accounts.standing_grants WHERE account_id = $1 AND revoked_at IS NULL`, [
      account.id,
    ]);
    expect(live).toHaveLength(1);
    expect([...live[0]!.verbs].sort()).toEqual(['a', 'b', 'c']);
  });

  test('a signing key sealed under a lost secret is rotated on use; its public key still verifies', async () => {
    const d1 = domainWith('1'.repeat(40));
    const { account } = await d1.createAccount(OPERATOR, { kind: 'organization', name: 'Keys' });
    const first = await d1.sign(OPERATOR, account.id, '{"n":1}');
    const d2 = domainWith('2'.repeat(40)); // the secret changed
    const second = await d2.sign(OPERATOR, account.id, '{"n":2}');
    expect(second.keyId).not.toBe(first.keyId);
    expect((await d2.verify(OPERATOR, account.id, first.jws)).valid).toBe(true);
    expect((await d2.verify(OPERATOR, account.id, second.jws)).valid).toBe(true);
    const rotations = await sql.query<{ actor: { kind: string } }>(
      `SELECT actor FROM accounts.audit_events WHERE account_id = $1 AND action = 'signing_key.rotated'`,
      [account.id],
    );
    expect(rotations.map((r) => (typeof r.actor === 'string' ? JSON.parse(r.actor) : r.actor).kind)).toEqual(['system']);
  });
});
