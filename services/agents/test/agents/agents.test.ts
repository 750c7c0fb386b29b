import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { AgentsDomain, migrations, SCHEMA } from '@svc/agents';
import { createPgliteSql, createPgSql, DomainError, migrate, newId, type Principal, type Sql } from '@svc/kit';

import { createDatabase } from '../../../../test/support/backends';

/**
 * The agents rules against SQL (PostgreSQL when DATABASE_URL is set, PGlite otherwise), with the
 * keys and accounts services faked: tenancy, owner changes as authority changes, and deletion that
 * never leaves an agent gone with its keys alive.
 */

const ACCT_A = newId('acct');
const ACCT_B = newId('acct');
const ORG = newId('acct');
const A: Principal = { kind: 'human', userId: ACCT_A, accountId: ACCT_A, keyId: 'key_a', channel: 'api' };
const B: Principal = { kind: 'human', userId: ACCT_B, accountId: ACCT_B, keyId: 'key_b', channel: 'api' };

let sql: Sql;
let dir: string;
let drop: (() => Promise<void>) | undefined;
let d: AgentsDomain;
const revocations: string[] = [];
let keysDown = false;
/** Roles the fake accounts service knows: `${userId}|${accountId}` → role. */
const roles = new Map<string, string>([
  [`${ACCT_A}|${ORG}`, 'owner'],
  [`${ACCT_B}|${ORG}`, 'member'],
]);

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-agents-'));
  if (process.env.DATABASE_URL) {
    const db = await createDatabase(process.env.DATABASE_URL);
    sql = createPgSql(db.url, { max: 4 });
    drop = db.drop;
  } else {
    sql = await createPgliteSql(path.join(dir, 'pg'));
  }
  await migrate(sql, SCHEMA, migrations);
  d = new AgentsDomain({
    sql,
    outbox: () => undefined,
    keysClient: () =>
      ({
        async revokeOwnerKeys(req: { ownerId: string }) {
          if (keysDown) throw new DomainError('unavailable', 'service_unavailable', 'The KeysService is unavailable.');
          revocations.push(req.ownerId);
          return { revoked: 2 };
        },
      }) as never,
    accountsClient: () =>
      ({
        async resolveActingAccount(req: { userId: string; accountId: string }) {
          if (req.userId === req.accountId) return { accountId: req.accountId, role: 'owner' };
          const role = roles.get(`${req.userId}|${req.accountId}`);
          if (!role) throw new DomainError('not_found', 'account_not_found', 'Account not found.');
          return { accountId: req.accountId, role };
        },
      }) as never,
    systemToken: async () => 'token',
    log: { warn() {}, error() {} },
  });
}, 30_000);
afterAll(async () => {
  await sql?.close();
  await drop?.();
  fs.rmSync(dir, { recursive: true, force: true });
});

const outbox = (subject: string) =>
  sql
    .query<{ payload: any }>(`SELECT payload FROM agents.outbox WHERE subject = $1 ORDER BY id`, [subject])
    .then((rows) => rows.map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload)));

describe('AgentsDomain', () => {
  test('agents belong to their account; another account, or another project, does not see them', async () => {
    const a = await d.create(A, { name: 'a' });
    const p = await d.create({ ...A, projectId: 'web' }, { name: 'p' });
    expect(p.project_id).toBe('web');
    expect(await codeOf(d.get(B, a.id))).toBe('agent_not_found');
    expect(await codeOf(d.get({ ...A, projectId: 'web' }, a.id))).toBe('agent_not_found');
    expect((await d.get({ kind: 'agent', agentId: a.id, accountId: ORG, channel: 'api' }, a.id)).id).toBe(a.id); // itself, anywhere
    expect((await d.list(B, {})).rows).toEqual([]);
    expect((await d.list({ ...A, projectId: 'web' }, {})).rows.map((r) => r.id)).toEqual([p.id]);
    expect(await codeOf(d.update(A, a.id, { description: 'x', clearFields: ['description'] }))).toBe('invalid_request');
    const [created] = (await outbox('agents.agent.created')).filter((e) => e.data.agent.id === a.id);
    expect(created).toMatchObject({ accountId: ACCT_A, data: { actor: { kind: 'human', id: ACCT_A } } });
    expect(JSON.stringify(created)).not.toContain('instructions');
  });

  test('deleting revokes the keys first: if the keys service is down, nothing is deleted', async () => {
    const a = await d.create(A, { name: 'doomed' });
    keysDown = true;
    try {
      expect(await codeOf(d.remove(A, a.id))).toBe('service_unavailable');
    } finally {
      keysDown = false;
    }
    expect((await d.get(A, a.id)).id).toBe(a.id);
    expect(await d.remove(A, a.id)).toBe(2);
    expect(revocations).toContain(a.id);
    expect(await codeOf(d.get(A, a.id))).toBe('agent_not_found');
    const [deleted] = (await outbox('agents.agent.deleted')).filter((e) => e.data.agent.id === a.id);
    expect(deleted.data).toMatchObject({ revokedKeys: 2, actor: { id: ACCT_A } });
  });

  test('moving an agent: a person, through the API, managing both accounts; keys revoked, defaults dropped', async () => {
    const a = await d.create(A, { name: 'mover' });
    await d.setDefaults(A, [a.id]);
    const agentP: Principal = { kind: 'agent', agentId: a.id, accountId: ACCT_A, keyId: 'key_g', channel: 'api' };
    expect(await codeOf(d.update(agentP, a.id, { ownerAccountId: ORG }))).toBe('human_principal_required');
    expect(await codeOf(d.update({ ...A, channel: 'mcp' }, a.id, { ownerAccountId: ORG }))).toBe('human_principal_required');
    expect(await codeOf(d.update({ ...A, projectId: 'web' }, a.id, { ownerAccountId: ORG }))).toBe('agent_not_found');
    expect(await codeOf(d.update(A, a.id, { ownerAccountId: ACCT_B }))).toBe('account_not_found');
    const b = await d.create(B, { name: 'b' });
    expect(await codeOf(d.update(B, b.id, { ownerAccountId: ORG }))).toBe('insufficient_role'); // B is a member only
    expect(revocations.filter((x) => x === a.id)).toHaveLength(0);

    const moved = await d.update(A, a.id, { ownerAccountId: ORG });
    expect(moved.owner_account_id).toBe(ORG);
    expect(revocations.filter((x) => x === a.id)).toHaveLength(2); // before and after the move
    expect(await d.getDefaults(A)).toEqual([]);
    const [event] = (await outbox('agents.agent.owner_changed')).filter((e) => e.data.agent.id === a.id);
    expect(event.data).toMatchObject({ fromAccountId: ACCT_A, toAccountId: ORG, actor: { kind: 'human', id: ACCT_A } });
    expect(await codeOf(d.get(A, a.id))).toBe('agent_not_found');
    expect((await d.get({ ...A, accountId: ORG, role: 'owner' }, a.id)).id).toBe(a.id);
  });

  test('default agents: only the account’s own, no repeats, at most 20', async () => {
    const a = await d.create(A, { name: 'd1' });
    const b = await d.create(B, { name: 'd2' });
    expect(await codeOf(d.setDefaults(A, [b.id]))).toBe('agent_not_found');
    expect(await codeOf(d.setDefaults(A, [a.id, a.id]))).toBe('invalid_request');
    expect(
      await codeOf(
        d.setDefaults(
          A,
          Array.from({ length: 21 }, () => newId('agt')),
        ),
      ),
    ).toBe('invalid_request');
    expect(await codeOf(d.setDefaults({ ...A, projectId: 'web' }, [a.id]))).toBe('project_scope');
    expect((await d.setDefaults(A, [a.id])).map((r) => r.id)).toEqual([a.id]);
  });
});
