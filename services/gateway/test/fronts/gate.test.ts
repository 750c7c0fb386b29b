import http from 'node:http';
import type { AddressInfo } from 'node:net';

import express from 'express';

import { firstSegment, Fronts } from '@svc/gateway';

/**
 * The fronts' one entry (fronts/gate.ts): a front is entered only for the first path segments it
 * claims (or its host), in the order the fronts were added, and a request none of them answers
 * goes on to the app's next layer, the API in the gateway.
 */
describe('the fronts gate', () => {
  let server: http.Server;
  let base: string;
  const entered: string[] = [];

  beforeAll(async () => {
    const app = express();
    const fronts = new Fronts();
    const a = fronts.add({ segments: ['dav', '.well-known'] });
    a.use((req, _res, next) => {
      entered.push(`a ${req.path}`);
      next();
    });
    a.use('/dav', (req, res) => void res.json({ front: 'a', path: req.path, baseUrl: req.baseUrl }));
    a.get('/.well-known/thing', (_req, res) => void res.json({ front: 'a', thing: true }));
    // A front claiming a segment another front claimed too: entered when the first lets it go.
    const b = fronts.add({ segments: ['.well-known', 'boom'] });
    b.use((req, _res, next) => {
      entered.push(`b ${req.path}`);
      next();
    });
    b.get('/.well-known/other', (_req, res) => void res.json({ front: 'b' }));
    b.get('/boom', () => {
      throw new Error('boom');
    });
    // A front sharing its segment with the API: entered only for the paths it answers.
    const d = fronts.add({ segments: ['shared'], path: (req) => req.path.startsWith('/shared/front') });
    d.use((req, res) => {
      entered.push(`d ${req.path}`);
      res.json({ front: 'd' });
    });
    // A front by host name: any path on its host.
    const c = fronts.add({ segments: [], host: (req) => req.hostname === 'site.test' });
    c.use((req, res) => void res.json({ front: 'c', path: req.path }));
    app.use(fronts.handler());
    app.use((req, res) => void res.status(404).json({ front: 'api', path: req.path }));
    app.use(
      (err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ error: err.message }),
    );
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => void entered.splice(0));

  // node:http rather than fetch, which sends its own Host header.
  const get = (path: string, host?: string) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = http.get(base + path, host ? { headers: { host } } : {}, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Record<string, unknown> }));
      });
      req.on('error', reject);
    });

  test('a path no front claims enters none of them', async () => {
    expect(await get('/me')).toEqual({ status: 404, body: { front: 'api', path: '/me' } });
    expect(await get('/davx/y')).toEqual({ status: 404, body: { front: 'api', path: '/davx/y' } });
    expect(entered).toEqual([]);
  });

  test('a claimed segment enters its front, case-insensitively, with express routing inside', async () => {
    expect(await get('/DAV/x/y')).toEqual({ status: 200, body: { front: 'a', path: '/x/y', baseUrl: '/DAV' } });
    expect(entered).toEqual(['a /DAV/x/y']);
  });

  test('fronts claiming one segment are tried in order; unanswered, the request goes on', async () => {
    expect(await get('/.well-known/thing')).toEqual({ status: 200, body: { front: 'a', thing: true } });
    expect(await get('/.well-known/other')).toEqual({ status: 200, body: { front: 'b' } });
    expect(await get('/.well-known/none')).toEqual({ status: 404, body: { front: 'api', path: '/.well-known/none' } });
    expect(entered).toEqual(['a /.well-known/thing', 'a /.well-known/other', 'b /.well-known/other', 'a /.well-known/none', 'b /.well-known/none']);
  });

  test('a path claim keeps the rest of its segment out of the front', async () => {
    expect(await get('/shared/front/x')).toEqual({ status: 200, body: { front: 'd' } });
    expect(await get('/shared/api')).toEqual({ status: 404, body: { front: 'api', path: '/shared/api' } });
    expect(entered).toEqual(['d /shared/front/x']);
  });

  test("a front's error reaches the app's error handler", async () => {
    expect(await get('/boom')).toEqual({ status: 500, body: { error: 'boom' } });
  });

  test('a host claim enters its front whatever the path', async () => {
    expect(await get('/me', 'site.test')).toEqual({ status: 200, body: { front: 'c', path: '/me' } });
    expect(await get('/me', 'other.test')).toEqual({ status: 404, body: { front: 'api', path: '/me' } });
  });

  test('firstSegment', () => {
    expect(firstSegment('/')).toBe('');
    expect(firstSegment('/Me')).toBe('me');
    expect(firstSegment('/dav/a/b')).toBe('dav');
    expect(firstSegment('/.well-known/x')).toBe('.well-known');
    expect(firstSegment('//x')).toBe('');
  });
});
