import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { DomainError } from '@svc/kit';
import { AlpacaClient } from '@svc/trading';

/**
 * The Alpaca client's reads stop when their caller gives up (the signal a gRPC handler passes down
 * as ctx.signal: a run's tool call aborted, docs/threads.md, "Aborting a tool"); without one, a
 * read waits for its timeout. A venue that never answers shows both.
 */
describe('Alpaca reads and their caller', () => {
  let server: http.Server;
  let url: string;
  const seen: string[] = [];
  beforeAll(async () => {
    // Takes every request and never answers it.
    server = http.createServer((req) => void seen.push(`${req.method} ${req.url}`));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const creds = { keyId: 'k', secretKey: 's' };
  const failure = async (p: Promise<unknown>) => {
    const started = Date.now();
    const err = (await p.then(
      () => undefined,
      (e: unknown) => e,
    )) as DomainError;
    return { err, ms: Date.now() - started };
  };

  test("a read stops as soon as its caller's signal aborts, long before its timeout", async () => {
    const client = new AlpacaClient(url, 10_000);
    const ac = new AbortController();
    const reads = [failure(client.account(creds, ac.signal)), failure(client.getOrder(creds, 'o-1', ac.signal))];
    // Aborted once the venue holds both requests (they are in flight, not refused before leaving).
    while (!(seen.includes('GET /v2/account') && seen.includes('GET /v2/orders/o-1'))) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    for (const r of await Promise.all(reads)) {
      expect(r.err.code).toBe('venue_unavailable');
      expect(r.ms).toBeLessThan(5_000);
    }
  });

  test('without a signal a read waits for its timeout', async () => {
    const client = new AlpacaClient(url, 400);
    const r = await failure(client.positions(creds));
    expect(r.err.code).toBe('venue_unavailable');
    expect(r.ms).toBeGreaterThanOrEqual(350);
  });
});
