import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/** What the fuzz run (test/platform/fuzz.test.ts, scripts/fuzz.mjs) found, each kept as a test of its own. */
let t: TestStack;
let key: string;
let agentId: string;
beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Lone' })).body.key;
  agentId = (await t.ok('POST', '/agents', key, { name: 'lone agent' })).body.id;
});
afterAll(() => t?.stop());

describe('a lone surrogate (not Unicode: no UTF-8 can carry it) in a JSON string', () => {
  // Found by `node scripts/fuzz.mjs --seed 2026 --cases 30 --duration 300` (replay: FUZZ_SEED=2044
  // FUZZ_ONLY=threads.create FUZZ_CASES=11): a thread's metadata holding "\ud800" answered 500, as
  // PostgreSQL refuses the escape in a jsonb value.
  test('in a value or a key of thread metadata answers 400 naming the field, on create and update', async () => {
    for (const metadata of ['{"k":"\\ud800"}', '{"k":"x\\udfffy"}', '{"\\ud800":"v"}']) {
      const created = await t.call('POST', '/threads', { key, body: `{"agentId":"${agentId}","metadata":${metadata}}` });
      expect([metadata, created.status]).toEqual([metadata, 400]);
      expect(created.body).toEqual(ERROR_BODY);
      expect(created.body.error.code).toBe('invalid_request');
      expect(created.body.error.message).toMatch(/body\.(metadata|metadata\.k): .*surrogate/);
    }
    const thread = (await t.ok('POST', '/threads', key, { agentId, metadata: { k: 'emoji 😀 and שלום' } })).body;
    expect(thread.metadata).toEqual({ k: 'emoji 😀 and שלום' });
    const updated = await t.call('PATCH', `/threads/${thread.id}`, { key, body: '{"metadata":{"k":"\\udc00"}}' });
    expect(updated.status).toBe(400);
    expect(updated.body.error.message).toMatch(/body\.metadata\.k: .*surrogate/);
    expect((await t.ok('GET', `/threads/${thread.id}`, key)).body.metadata).toEqual({ k: 'emoji 😀 and שלום' });
  });

  test('in a text field answers 400 too, instead of being stored as U+FFFD', async () => {
    const res = await t.call('POST', '/agents', { key, body: '{"name":"a\\ud800b"}' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/body\.name: .*surrogate/);
  });
});

describe('a number past what its wire field carries', () => {
  // Found by the stateful fuzzer (test/platform/fuzz-stateful.test.ts, seed 20261201, phase
  // "mutate"): PATCH /drive/:id/lines with `"end": 2147483648` answered 500, as the gateway could
  // not write 2^31 into the request's int32 field.
  test('answers 400 invalid_request, and the file stays as it was', async () => {
    const file = await t.call('POST', '/drive/upload?name=lines.txt', { key, body: 'one\ntwo\nthree\n', headers: { 'content-type': 'text/plain' } });
    expect(file.status).toBe(201);
    for (const body of [
      { start: 1, end: 2147483648, text: 'x' },
      { start: 2147483648, end: 2147483649, text: 'x' },
    ]) {
      const res = await t.call('PATCH', `/drive/${file.body.id}/lines`, { key, body });
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const inserted = await t.call('POST', `/drive/${file.body.id}/lines`, { key, body: { after: 2147483648, text: 'x' } });
    expect(inserted.status).toBe(400);
    expect((await t.ok('GET', `/drive/${file.body.id}/lines`, key)).body.lines.map((l: { text: string }) => l.text)).toEqual(['one', 'two', 'three']);
    // A line number it carries is still the operation's own answer: 422, the file has 3 lines.
    expect((await t.call('PATCH', `/drive/${file.body.id}/lines`, { key, body: { start: 1, end: 2147483647, text: 'x' } })).status).toBe(422);
  });
});
