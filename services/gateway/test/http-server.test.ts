import http from 'node:http';
import type { AddressInfo } from 'node:net';

import express from 'express';

import { expressServerOptions } from '@svc/gateway';

describe('expressServerOptions', () => {
  test("node builds requests and responses with express's prototypes, and express works on them", async () => {
    const app = express();
    app.get('/echo', (req, res) => res.json({ q: req.query.q, ip: typeof req.ip, path: req.path }));
    const seen: boolean[] = [];
    const server = http.createServer(expressServerOptions(app), (req, res) => {
      // Before express runs: already express's objects, so its setPrototypeOf has nothing to do.
      seen.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
      app(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${url}/echo?q=1`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ q: '1', ip: 'string', path: '/echo' });
      expect((await fetch(`${url}/missing`)).status).toBe(404);
      expect(seen).toEqual([true, true]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
