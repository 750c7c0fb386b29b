import { startTestStack, type TestStack } from '../support/stack';

/**
 * The embedded database (PGlite) has one connection, so a statement that escapes its transaction
 * waits for it forever, and every tenant with it. On the embedded stack whatever the environment
 * names (the default `npm start`): a comment's edit and delete (which once sent a statement through
 * the pool inside their transaction) answer, and another tenant's requests answer right after; a
 * transaction held open makes other statements fail with 503 `database_busy` instead of waiting,
 * `/ready` say why, the transaction is rolled back past its bound, and the stack still stops.
 */

let t: TestStack;
let a: string;
let b: string;
beforeAll(async () => {
  t = await startTestStack({ SVC_SQL_BUSY_TIMEOUT_MS: '1000', SVC_SQL_TX_TIMEOUT_MS: '4000' }, { embedded: true });
  a = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Ada' })).body.key;
  b = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bo' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

test('the stack under test is the embedded one', () => {
  expect(t.stack.backends.describe('sql')).toBe('pglite');
});

test("tenant A edits and deletes a comment; tenant B's requests answer right after", async () => {
  const list = (await t.ok('POST', '/task-lists', a, { name: 'home' })).body;
  const task = (await t.ok('POST', '/tasks', a, { listId: list.id, title: 'write the report' })).body;
  const comment = (await t.ok('POST', `/tasks/${task.id}/comments`, a, { body: 'draft is in the drive' })).body;

  const edited = await t.call('PATCH', `/tasks/${task.id}/comments/${comment.id}`, { key: a, body: { body: 'final is in the drive' } });
  expect([edited.status, edited.body.body]).toEqual([200, 'final is in the drive']);
  expect((await t.call('GET', '/me', { key: b })).status).toBe(200);
  expect((await t.call('GET', '/drive', { key: b })).status).toBe(200);

  // B may not touch A's task (404, its existence does not leak); A's comment is still there.
  const foreign = await t.call('PATCH', `/tasks/${task.id}/comments/${comment.id}`, { key: b, body: { body: 'mine now' } });
  expect([foreign.status, foreign.body.error.code]).toEqual([404, 'task_not_found']);

  const deleted = await t.call('DELETE', `/tasks/${task.id}/comments/${comment.id}`, { key: a });
  expect([deleted.status, deleted.body]).toEqual([200, { deleted: 1 }]);
  expect((await t.call('DELETE', `/tasks/${task.id}/comments/${comment.id}`, { key: a })).body).toEqual({ deleted: 0 });
  expect((await t.call('GET', '/me', { key: b })).status).toBe(200);
  expect((await t.call('GET', '/drive', { key: b })).status).toBe(200);
  const ready = await t.call('GET', '/ready');
  expect([ready.status, ready.body.status]).toEqual([200, 'ready']);
});

test('a transaction held open: others get 503 database_busy, /ready says why, and it is rolled back past its bound', async () => {
  const sql = await t.stack.backends.sql();
  let release!: () => void;
  const held = sql.tx(async (q) => {
    await q.query('SELECT 1');
    await new Promise<void>((resolve) => (release = resolve));
  });
  const outcome = held.then(
    () => 'committed',
    (err: { code?: string }) => err.code,
  );
  try {
    const busy = await t.call('GET', '/drive', { key: b });
    expect([busy.status, busy.body.error?.code]).toEqual([503, 'database_busy']);
    expect(busy.headers.get('retry-after')).toBeTruthy();
    const ready = await t.call('GET', '/ready');
    expect([ready.status, ready.body.status, ready.body.backends.sql.ok]).toEqual([503, 'unavailable', false]);
    expect(ready.body.backends.sql.cause).toMatch(/^database_busy: .*held for \d+ ms/);
    // Past SVC_SQL_TX_TIMEOUT_MS the transaction is rolled back and its caller told so.
    expect(await outcome).toBe('transaction_timeout');
  } finally {
    release?.();
  }
  expect((await t.call('GET', '/drive', { key: b })).status).toBe(200);
  expect((await t.call('GET', '/me', { key: a })).status).toBe(200);
}, 30_000);

test('the stack stops while a transaction is held open', async () => {
  const own = await startTestStack({ SVC_SQL_TX_TIMEOUT_MS: '600000' }, { embedded: true });
  const sql = await own.stack.backends.sql();
  const held = sql
    .tx(() => new Promise<void>(() => {}))
    .then(
      () => 'committed',
      (err: { code?: string }) => err.code,
    );
  await own.stop();
  // close() rolled it back (the database was closing): its caller hears an outage, not silence.
  expect(await held).toBe('database_unavailable');
}, 30_000);
