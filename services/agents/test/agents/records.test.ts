import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { type AgentRecord, type AgentRecords, AgentsDomain, migrations, SCHEMA } from '@svc/agents';
import { createPgliteSql, createPgSql, DomainError, migrate, newId, type Principal, type Sql } from '@svc/kit';

import { createDatabase } from '../../../../test/support/backends';

/**
 * The records of agents the agents service writes in the accounts service (faked here): written
 * before an agent exists, dropped again when it could not be written; every change and deletion
 * at a higher version; all of them at start. An accounts service that cannot take the record
 * stops a creation before anything is written.
 */

const ACCT = newId('acct');
const A: Principal = { kind: 'human', userId: ACCT, accountId: ACCT, keyId: 'key_a', channel: 'api' };

let sql: Sql;
let dir: string;
let drop: (() => Promise<void>) | undefined;
const synced: Array<AgentRecord & { existed: boolean }> = [];
const forgotten: string[] = [];
const warned: string[] = [];
let accountsDown = false;
let d: AgentsDomain;

function domain(over: { sql?: Sql } = {}) {
  const records: AgentRecords = {
    async sync(rs) {
      if (accountsDown) throw new DomainError('unavailable', 'service_unavailable', 'The AccountsService is unavailable.');
      for (const r of rs) synced.push({ ...r, existed: (await d.store.byId(r.id)) !== null || r.deleted });
    },
    async forget(id) {
      forgotten.push(id);
    },
  };
  return new AgentsDomain({
    sql: over.sql ?? sql,
    outbox: () => undefined,
    keysClient: () => ({ revokeOwnerKeys: async () => ({ revoked: 0 }) }) as never,
    accountsClient: () => ({}) as never,
    records,
    systemToken: async () => 'token',
    log: { warn: (_o: unknown, msg: string) => void warned.push(msg), error: (_o: unknown, msg: string) => void warned.push(msg) },
  });
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-agent-records-'));
  if (process.env.DATABASE_URL) {
    const db = await createDatabase(process.env.DATABASE_URL);
    sql = createPgSql(db.url, { max: 4 });
    drop = db.drop;
  } else {
    sql = await createPgliteSql(path.join(dir, 'pg'));
  }
  await migrate(sql, SCHEMA, migrations);
  d = domain();
}, 30_000);
afterAll(async () => {
  await sql?.close();
  await drop?.();
  fs.rmSync(dir, { recursive: true, force: true });
});

const of = (id: string) => synced.filter((r) => r.id === id).map(({ name, version, deleted, existed }) => ({ name, version, deleted, existed }));

test('recorded before it exists, then at each change and at deletion, version by version', async () => {
  const a = await d.create(A, { name: 'first' });
  expect(a.version).toBe(1);
  await d.update(A, a.id, { name: 'second' });
  await d.update(A, a.id, { name: 'second' }); // no change: no new version, no record
  await d.remove(A, a.id);
  expect(of(a.id)).toEqual([
    { name: 'first', version: 1, deleted: false, existed: false },
    { name: 'second', version: 2, deleted: false, existed: true },
    { name: 'second', version: 3, deleted: true, existed: true },
  ]);
  expect(forgotten).not.toContain(a.id);
});

test('an accounts service that cannot take the record stops the creation: nothing is written', async () => {
  const before = (await d.list(A, { limit: 200 })).rows.length;
  accountsDown = true;
  try {
    const err = await d.create(A, { name: 'orphan?' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('service_unavailable');
  } finally {
    accountsDown = false;
  }
  expect((await d.list(A, { limit: 200 })).rows).toHaveLength(before);
});

test('an agent that cannot be written has its record dropped again', async () => {
  const failing = Object.assign(Object.create(sql) as Sql, {
    tx: async () => {
      throw new Error('the database is gone');
    },
  });
  const broken = domain({ sql: failing });
  await expect(broken.create(A, { name: 'never' })).rejects.toThrow('the database is gone');
  const last = synced[synced.length - 1]!;
  expect(last).toMatchObject({ name: 'never', version: 1 });
  expect(forgotten).toEqual([last.id]);
});

test('a change stands when its record cannot be written (its event writes it); every agent is recorded at start', async () => {
  const a = await d.create(A, { name: 'kept' });
  accountsDown = true;
  try {
    expect((await d.update(A, a.id, { name: 'renamed' })).name).toBe('renamed');
  } finally {
    accountsDown = false;
  }
  expect(warned).toContain('could not record an agent change in accounts; its event will');
  const gone = await d.create(A, { name: 'gone' });
  await d.remove(A, gone.id);
  synced.length = 0;
  const n = await d.recordAll(2);
  const all = await sql.query<{ id: string }>('SELECT id FROM agents.agents');
  expect(n).toBe(all.length);
  expect(of(a.id)).toEqual([{ name: 'renamed', version: 2, deleted: false, existed: true }]);
  expect(of(gone.id)).toEqual([{ name: 'gone', version: 2, deleted: true, existed: true }]);
});
