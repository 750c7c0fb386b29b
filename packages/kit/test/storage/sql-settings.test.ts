import { Backends, createLogger, createPgSql, loadConfig, sessionOptions } from '@svc/kit';

import { createDatabase, REAL, tempDir } from '../../../../test/support/backends';

const log = createLogger({ level: 'silent', service: 'test' });
const planMode = async (sql: { query<R>(t: string): Promise<R[]> }) =>
  (await sql.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode'))[0]!.plan_cache_mode;

test("a pool's session settings are startup options, after the operator's PGOPTIONS; only plain names and values", () => {
  expect(sessionOptions({}, undefined)).toBeUndefined();
  expect(sessionOptions({ plan_cache_mode: 'force_generic_plan' }, undefined)).toBe('-c plan_cache_mode=force_generic_plan');
  expect(sessionOptions({ plan_cache_mode: 'force_generic_plan', work_mem: '8MB' }, ' -c statement_timeout=5s ')).toBe(
    '-c statement_timeout=5s -c plan_cache_mode=force_generic_plan -c work_mem=8MB',
  );
  // No settings: nothing set here, so the client reads PGOPTIONS as it always does.
  expect(sessionOptions(undefined, '-c statement_timeout=5s')).toBeUndefined();
  expect(() => sessionOptions({ 'plan_cache_mode=auto -c x': 'y' }, undefined)).toThrow('invalid database setting');
  expect(() => sessionOptions({ plan_cache_mode: 'a b' }, undefined)).toThrow('invalid database setting');
});

(REAL.pg ? describe : describe.skip)('on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createDatabase>>;
  beforeAll(async () => {
    db = await createDatabase(REAL.pg!);
  });
  afterAll(() => db.drop());

  test("a pool with settings has them in each of its sessions, in and out of transactions; others keep the server's", async () => {
    const own = createPgSql(db.url, { settings: { plan_cache_mode: 'force_generic_plan' } });
    const plain = createPgSql(db.url);
    try {
      expect(await planMode(own)).toBe('force_generic_plan');
      expect(await own.tx((q) => planMode(q))).toBe('force_generic_plan');
      // Several sessions at once: each connection of the pool got them.
      const modes = await Promise.all(Array.from({ length: 4 }, () => own.tx(async (q) => (await q.query('SELECT pg_sleep(0.05)'), planMode(q)))));
      expect(modes).toEqual(Array(4).fill('force_generic_plan'));
      expect(await planMode(plain)).toBe('auto');
    } finally {
      await Promise.all([own.close(), plain.close()]);
    }
  });

  test("the backends give a service that asks for settings a pool of its own; the process's pool is unchanged", async () => {
    const backends = new Backends(loadConfig({ DATABASE_URL: db.url, SVC_DATA_DIR: tempDir() }), log);
    try {
      const shared = await backends.sql();
      const own = await backends.sql({ plan_cache_mode: 'force_generic_plan' });
      expect(own).not.toBe(shared);
      expect(await backends.sql({ plan_cache_mode: 'force_generic_plan' })).toBe(own);
      expect(await backends.sql({})).toBe(shared);
      expect(await planMode(own)).toBe('force_generic_plan');
      expect(await planMode(shared)).toBe('auto');
    } finally {
      await backends.close(5000);
    }
  });
});

test('on the embedded database, settings do not apply: the one connection is shared', async () => {
  const backends = new Backends(loadConfig({ SVC_DATA_DIR: tempDir() }), log);
  try {
    expect(await backends.sql({ plan_cache_mode: 'force_generic_plan' })).toBe(await backends.sql());
  } finally {
    await backends.close(10_000);
  }
}, 60_000);
