import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { Svc, SvcConfigError, SvcConnectionError, SvcInvalidRequestError, SvcPreconditionFailedError, SvcServerError } from '@svc/sdk';

/** A server that answers each request with the next step of a script, recording what it got. */
async function scripted(steps: Array<(req: http.IncomingMessage, res: http.ServerResponse) => void>) {
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string; at: number }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, at: Date.now() });
      const step = steps[Math.min(seen.length - 1, steps.length - 1)]!;
      step(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
const error = (status: number, code: string, headers: Record<string, string> = {}) =>
  json(status, { error: { code, message: `${code}.`, requestId: 'req_1' } }, headers);
const drop = (req: http.IncomingMessage) => req.socket.destroy();
const KEY = 'svc_' + 'a'.repeat(64);

describe('the TypeScript SDK’s transport', () => {
  test('a missing key is an error at the first call, naming SVC_API_KEY; calls without auth need none', async () => {
    const s = await scripted([json(200, { status: 'ok' })]);
    try {
      const svc = new Svc({ env: { SVC_BASE_URL: s.url } });
      await expect(svc.me.get()).rejects.toThrow(SvcConfigError);
      await expect(svc.me.get()).rejects.toThrow(/SVC_API_KEY/);
      expect(s.seen).toHaveLength(0);
      expect(await svc.system.health()).toEqual({ status: 'ok' });
      expect(s.seen[0]!.headers.authorization).toBeUndefined();
    } finally {
      await s.close();
    }
  });

  test('options override the environment; the default origin is https://api.svc.dev', () => {
    expect(new Svc({ env: {} }).config.baseUrl).toBe('https://api.svc.dev');
    expect(new Svc({ env: { SVC_BASE_URL: 'http://a.test/' } }).config.baseUrl).toBe('http://a.test');
    expect(new Svc({ baseUrl: 'http://b.test', env: { SVC_BASE_URL: 'http://a.test' } }).config.baseUrl).toBe('http://b.test');
    expect(new Svc({ apiKey: 'svc_x', env: { SVC_API_KEY: 'svc_y' } }).config.credential()).toBe('svc_x');
    expect(new Svc({ env: { SVC_HOST_CREDENTIAL: 'svch_z' } }).config.credential()).toBe('svch_z');
  });

  test('an attempt waits 60 s for its answer by default, as the Python SDK does; the limit is configurable and does not cut a body', async () => {
    expect(new Svc({ env: {} }).config.timeoutMs).toBe(60_000);
    expect(new Svc({ env: {}, timeoutMs: 0 }).config.timeoutMs).toBe(0);
    // Nothing answers: the limit ends the attempt.
    const silent = await scripted([() => undefined]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: silent.url, timeoutMs: 100, maxRetries: 0 });
      await expect(svc.me.get()).rejects.toThrow(/timed out \(no answer in 100 ms\)/);
    } finally {
      await silent.close();
    }
    // The answer starts at once and its body comes after the limit: it is read whole.
    const slow = await scripted([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":');
        setTimeout(() => res.end('"usr_1"}'), 300);
      },
    ]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: slow.url, timeoutMs: 100, maxRetries: 0 });
      expect(await svc.me.get()).toEqual({ id: 'usr_1' });
    } finally {
      await slow.close();
    }
  });

  test('a POST is retried after 503 and a dropped connection, with one Idempotency-Key across its attempts', async () => {
    const s = await scripted([error(503, 'unavailable'), drop, json(201, { id: 'thr_1' })]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: s.url, retryBaseMs: 10 });
      expect(await svc.threads.create({ title: 't' })).toEqual({ id: 'thr_1' });
      expect(s.seen.map((r) => r.method)).toEqual(['POST', 'POST', 'POST']);
      const keys = s.seen.map((r) => r.headers['idempotency-key']);
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(new Set(keys).size).toBe(1);
      expect(s.seen.map((r) => [r.body, r.headers.authorization])).toEqual(Array(3).fill(['{"title":"t"}', `Bearer ${KEY}`]));
      // The next logical call gets a key of its own.
      await svc.threads.create({ title: 'u' });
      expect(s.seen[3]!.headers['idempotency-key']).not.toBe(keys[0]);
    } finally {
      await s.close();
    }
  });

  test('a POST whose key is still in use is sent again later; a PATCH (no key) is not retried after a 503', async () => {
    const s = await scripted([error(409, 'idempotency_key_in_use'), json(201, { id: 'fld_1' })]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: s.url, retryBaseMs: 10 });
      expect(await svc.drive.createFolder({ name: 'x' })).toEqual({ id: 'fld_1' });
      expect(new Set(s.seen.map((r) => r.headers['idempotency-key'])).size).toBe(1);
      expect(s.seen).toHaveLength(2);
    } finally {
      await s.close();
    }
    const p = await scripted([error(503, 'unavailable')]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: p.url, retryBaseMs: 1 });
      await expect(svc.threads.update({ id: 'thr_x', title: 't' })).rejects.toBeInstanceOf(SvcServerError);
      expect(p.seen.map((r) => [r.method, r.headers['idempotency-key']])).toEqual([['PATCH', undefined]]);
    } finally {
      await p.close();
    }
  });

  test('429 waits as Retry-After says; a 4xx is not retried and is a typed error; 5xx gives up after maxRetries', async () => {
    const s = await scripted([error(429, 'rate_limited', { 'retry-after': '1' }), json(200, { models: [] })]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: s.url, retryBaseMs: 1 });
      expect(await svc.models.list()).toEqual({ models: [] });
      expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(950);
    } finally {
      await s.close();
    }
    const bad = await scripted([error(400, 'invalid_request')]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: bad.url, retryBaseMs: 1 });
      const err = await svc.models.list().catch((e) => e);
      expect(err).toBeInstanceOf(SvcInvalidRequestError);
      expect([err.status, err.code, err.requestId, err.operation]).toEqual([400, 'invalid_request', 'req_1', 'models.list']);
      expect(bad.seen).toHaveLength(1);
    } finally {
      await bad.close();
    }
    const down = await scripted([error(502, 'bad_gateway')]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: down.url, retryBaseMs: 1, maxRetries: 2 });
      await expect(svc.drive.get({ id: 'file_x' })).rejects.toBeInstanceOf(SvcServerError);
      expect(down.seen).toHaveLength(3);
    } finally {
      await down.close();
    }
  });

  test('a 412 carries the current ETag; a streamed upload is sent once; nothing answering is a connection error', async () => {
    const s = await scripted([error(412, 'precondition_failed', { etag: '"abc"' })]);
    try {
      const svc = new Svc({ apiKey: KEY, baseUrl: s.url, retryBaseMs: 1 });
      async function* chunks() {
        yield new TextEncoder().encode('hello ');
        yield new TextEncoder().encode('world');
      }
      const err = await svc.drive.replace({ id: 'file_x', content: chunks(), ifMatch: '"old"' }).catch((e) => e);
      expect(err).toBeInstanceOf(SvcPreconditionFailedError);
      expect(err.etag).toBe('"abc"');
      expect(s.seen.map((r) => [r.method, r.url, r.headers['if-match'], r.body])).toEqual([['PUT', '/drive/file_x/content', '"old"', 'hello world']]);
    } finally {
      await s.close();
    }
    const svc = new Svc({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9', retryBaseMs: 1, maxRetries: 1 });
    await expect(svc.me.get()).rejects.toBeInstanceOf(SvcConnectionError);
  });

  test('input is checked: a missing path parameter or an unknown field is an error before any request', async () => {
    const svc = new Svc({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9' });
    await expect(svc.threads.get({} as any)).rejects.toThrow(/threads.get needs id/);
    await expect(svc.threads.get({ id: 'thr_x', nope: 1 } as any)).rejects.toThrow(/takes no nope/);
  });
});
