import { contractProblem, operationFor } from '../support/contract';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * The contract check itself (test/support/contract.ts, which every suite's answers pass through),
 * and the answers it found wrong: a required body sent empty, an explicit zero, a null where a
 * number is declared.
 */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 120_000);
afterAll(() => t?.stop());

const json = 'application/json; charset=utf-8';

describe('the contract check', () => {
  test('finds the operation under /v1 and in any case, a literal segment before a parameter', () => {
    expect(operationFor('GET', '/V1/ME')?.id).toBe('me.get');
    expect(operationFor('HEAD', '/me')?.id).toBe('me.get');
    expect(operationFor('POST', '/drive/upload?name=x')?.id).toBe('drive.upload');
    expect(operationFor('GET', '/dav/x')).toBeUndefined();
    expect(operationFor('GET', '/hosts/connect')).toBeUndefined(); // the hosts' WebSocket, not hosts.get
    expect(operationFor('GET', '/hosts/hst_x')?.id).toBe('hosts.get');
  });

  test('refuses a status the operation does not declare, a body its schema does not allow, a code it does not list', () => {
    expect(contractProblem({ method: 'GET', path: '/me', status: 418, contentType: json, text: '{}' })).toMatch(
      /^GET \/me \(me\.get\) answered 418, which the operation does not declare \(declared: 200, /,
    );
    const error = (extra: object) => JSON.stringify({ error: { code: 'invalid_api_key', message: 'm', requestId: 'r', ...extra } });
    expect(contractProblem({ method: 'GET', path: '/me', status: 401, contentType: json, text: error({}) })).toBeNull();
    expect(contractProblem({ method: 'GET', path: '/me', status: 401, contentType: json, text: error({ details: { etag: '"a"' } }) })).toBeNull();
    expect(contractProblem({ method: 'GET', path: '/me', status: 401, contentType: json, text: error({ stack: 'at x' }) })).toMatch(
      /401: the body does not match its schema at \/error .*additional properties/,
    );
    // An error code the answer's status does not list (`x-svc-error-codes`), or that no operation answers.
    expect(contractProblem({ method: 'GET', path: '/me', status: 401, contentType: json, text: error({ code: 'thread_busy' }) })).toMatch(
      /^GET \/me \(me\.get\) answered 401 thread_busy, a code the operation does not list \(listed: invalid_api_key, /,
    );
    expect(contractProblem({ method: 'GET', path: '/me', status: 401, contentType: json, text: error({ code: 'x' }) })).toMatch(
      /answered 401 x, a code/,
    );
    // Not JSON (a stream, content): the status is checked, the bytes are not.
    expect(contractProblem({ method: 'GET', path: '/me', status: 200, contentType: 'text/event-stream' })).toBeNull();
  });
});

describe('what the check found', () => {
  const empty = (method: string, path: string) =>
    fetch(t.url + path, {
      method,
      headers: { authorization: `Bearer ${t.bootstrapKey}`, 'content-type': 'application/json', 'content-length': '0' },
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: { message: string } } }));

  test('an empty body (Content-Length: 0) is no body: 400 where the operation requires one', async () => {
    const me = (await t.ok('GET', '/me', t.bootstrapKey)).body;
    for (const [method, path] of [
      ['POST', '/trading/reset'],
      ['POST', '/trading/positions/close-all'],
      ['PUT', `/accounts/${me.accountId}/settings`],
      ['POST', '/threads/thr_00000000000000000000000000/wait'],
    ]) {
      const res = await empty(method!, path!);
      expect([path, res.status, res.body.error.message]).toEqual([path, 400, 'body: a JSON body is required (send {} for the defaults).']);
    }
    // `{}` itself still takes the defaults.
    expect((await t.call('POST', '/trading/reset', { key: t.bootstrapKey, body: {} })).status).toBe(200);
  });

  test('null is not a number: minContext must be an integer', async () => {
    const res = await t.call('POST', '/models/recommend', { key: t.bootstrapKey, body: { useCase: 'chat', minContext: null } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^body\.minContext: /);
  });

  // An explicit zero is not "the default": wait-events with timeoutMs 0 answers at once. (The
  // test's own timeout, well under the default 10 s wait, is what would fail if it waited.)
  test('wait-events with timeoutMs 0 answers at once', async () => {
    const agent = (await t.ok('POST', '/agents', t.bootstrapKey, { name: 'zero' })).body;
    const th = (await t.ok('POST', '/threads', t.bootstrapKey, { agentId: agent.id })).body;
    const last = (await t.ok('GET', `/threads/${th.id}`, t.bootstrapKey)).body.lastSeq ?? 0;
    const res = await t.ok('POST', `/threads/${th.id}/wait-events`, t.bootstrapKey, { after: last + 1000, timeoutMs: 0 });
    expect(res.body).toMatchObject({ events: [], timedOut: true });
  }, 8_000);
});
