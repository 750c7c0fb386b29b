import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

describe('gateway', () => {
  test('GET /health and /v1/health answer 200 without a key', async () => {
    for (const p of ['/health', '/v1/health']) {
      const res = await t.call('GET', p);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    }
  });

  test('readiness reports each backend and service', async () => {
    const res = await t.call('GET', '/ready');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ready');
    // The database too: all services run in this process, which opened it.
    expect(Object.keys(res.body.backends).sort()).toEqual(['bus', 'cache', 'sql']);
    expect(res.body.backends.sql).toEqual({ ok: true });
    expect(res.body.services.keys.ok).toBe(true);
    expect(Object.keys(res.body.services)).toHaveLength(8);
  });

  test('an unknown route answers 404 with the error body, with and without /v1', async () => {
    for (const p of ['/no/such/route', '/v1/no/such/route']) {
      const res = await t.call('GET', p, { key: t.bootstrapKey });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('not_found');
      expect(res.body.error.requestId).toBe(res.headers.get('x-request-id'));
    }
  });

  test('a known path with the wrong method answers 405 with Allow', async () => {
    const res = await t.call('PUT', '/health');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.body.error.code).toBe('method_not_allowed');
    const keys = await t.call('PATCH', '/v1/api/api-keys', { key: t.bootstrapKey });
    expect(keys.status).toBe(405);
    expect(keys.headers.get('allow')!.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'POST']);
  });

  test('OPTIONS on a known path answers 204 with Allow, without a key', async () => {
    const res = await fetch(`${t.url}/v1/api/api-keys`, { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')!.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'POST']);
  });

  test('paths match as express matches them: any case, an optional trailing slash', async () => {
    for (const p of ['/ME', '/me/', '/v1/Me/', '/V1/ME']) {
      const res = await t.call('GET', p, { key: t.bootstrapKey });
      expect(res.status).toBe(200);
      expect(res.body.keyId).toMatch(/^key_/);
    }
    const unknown = await t.call('GET', '/v1/v1/me', { key: t.bootstrapKey });
    expect(unknown.status).toBe(404);
    // The message names the path as the client sent it.
    expect(unknown.body.error.message).toBe('No route for GET /v1/v1/me.');
    expect((await t.call('GET', '/me//', { key: t.bootstrapKey })).status).toBe(404);
  });

  test('a path parameter that is not valid percent-encoding answers 400', async () => {
    const res = await t.call('GET', '/agents/%E0%A4%A/keys', { key: t.bootstrapKey });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR_BODY);
    expect(res.body.error.code).toBe('invalid_request');
  });

  test('malformed JSON answers 400 invalid_json', async () => {
    const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: '{"name": ' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR_BODY);
    expect(res.body.error.code).toBe('invalid_json');
  });

  test('a JSON body that is not an object answers 400 invalid_request, naming what was expected', async () => {
    for (const body of ['"abc"', 'null', '[1]', '42']) {
      const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body });
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });

  test('headers over the limit and requests that are not HTTP answer with the error body', async () => {
    const net = await import('node:net');
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
        let got = '';
        socket.on('data', (d) => (got += d));
        socket.on('end', () => resolve(got));
        socket.on('error', reject);
        socket.end(text);
      });
    const huge = await raw(`GET /me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    const hugeBody = JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4));
    expect(hugeBody).toEqual(ERROR_BODY);
    expect(hugeBody.error.code).toBe('headers_too_large');
    const garbage = await raw('HELLO\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)).error.code).toBe('bad_request');
  });

  test('a body over the limit answers 413', async () => {
    const res = await t.call('POST', '/api/api-keys', {
      key: t.bootstrapKey,
      body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  test('a non-JSON body on a JSON route answers 415', async () => {
    const res = await t.call('POST', '/api/api-keys', {
      key: t.bootstrapKey,
      body: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  test('x-request-id is echoed when sent and generated when not', async () => {
    const mine = await t.call('GET', '/health', { headers: { 'x-request-id': 'client-abc.123' } });
    expect(mine.headers.get('x-request-id')).toBe('client-abc.123');
    const generated = await t.call('GET', '/health');
    expect(generated.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24,}$/);
    const hostile = await t.call('GET', '/health', { headers: { 'x-request-id': 'a b<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^req_/);
  });

  test('the MCP endpoint answers a request without a key with 401 and the error body (test/mcp/mcp.test.ts has the rest)', async () => {
    const mcp = await t.call('POST', '/mcp', { body: {} });
    expect(mcp.status).toBe(401);
    expect(mcp.body).toEqual(ERROR_BODY);
    expect(mcp.body.error.code).toBe('missing_api_key');
  });

  test('input is validated with a message that names the field', async () => {
    const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: '' } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.message).toMatch(/^body\.name: /);
    const extra = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: 'a', admin: true } });
    expect(extra.status).toBe(400);
    const q = await t.call('GET', '/api/api-keys?limit=500', { key: t.bootstrapKey });
    expect(q.status).toBe(400);
    expect(q.body.error.message).toMatch(/^query\.limit/);
    // Sentences, not the validator's generic wording.
    const messages: Array<[unknown, string]> = [
      [{}, 'body.name: a string is required.'],
      [{ name: 5 }, 'body.name: must be a string.'],
      [{ name: 'a', admin: true, root: 1 }, 'body: unknown fields "admin", "root".'],
      [{ name: 'x'.repeat(101) }, 'body.name: must be at most 100 characters.'],
      [{ name: 'a', expiresInDays: 0 }, 'body.expiresInDays: must be at least one minute (1/1440).'],
      [{ name: 'a', expiresInDays: 3651 }, 'body.expiresInDays: must be at most 3650.'],
    ];
    for (const [body, message] of messages) {
      const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body });
      expect([res.status, res.body.error.message]).toEqual([400, message]);
    }
    // A POST with no body at all says what is missing (400), not what type it lacked (415).
    const none = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey });
    expect([none.status, none.body.error.code, none.body.error.message]).toEqual([
      400,
      'invalid_request',
      'body: a JSON body is required (send {} for the defaults).',
    ]);
  });

  test('GET /openapi.json is an OpenAPI 3.1 document built from the route table', async () => {
    const res = await t.call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const post = res.body.paths['/api/api-keys'].post;
    expect(post.operationId).toBe('apiKeys.create');
    expect(post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateKeyRequestInput' });
    expect(res.body.components.schemas.CreateKeyRequestInput.required).toEqual(['name']);
    expect(res.body.components.schemas.ApiKey.required).toContain('usageCount');
    expect(res.body.paths['/agents/{id}/keys/{keyId}'].delete.parameters.map((p: any) => p.name)).toEqual(['id', 'keyId']);
    expect(res.body.paths['/accounts/{id}/standing-grants'].post['x-svc-authority']).toBe(true);
  });
});
