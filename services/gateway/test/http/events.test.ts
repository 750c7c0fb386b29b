import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

import { z } from 'zod';

import { route } from '@svc/api';
import { Dispatcher, eventsAnswer, type StreamEvent } from '@svc/dispatch';
import { createLogger, DomainError, PrincipalSigner, Registry } from '@svc/kit';

import { sendEvents } from '../../dist/http/events.js';
import { Authenticator, createApp } from '../../dist/index.js';

// Operations that declare `events` answer `Accept: text/event-stream` with a live stream of
// server-sent events, and JSON otherwise; the gateway writes them (http/events.ts).

const Tick = z.object({ n: z.number().int() });
const ticks = route({
  id: 'test.ticks',
  method: 'get',
  path: '/ticks',
  summary: 'Ticks.',
  tag: 'test',
  query: z.object({ count: z.coerce.number().int().min(0).max(10_000).default(3), fail: z.enum(['yes', 'no']).default('no') }),
  response: z.object({ ticks: z.array(Tick) }),
  events: { schema: Tick, description: 'One event per tick.' },
  auth: 'none',
  principals: [],
  authority: false,
  handler: { kind: 'local', name: 'ticks' },
});

let server: http.Server;
let url: string;
const registry = new Registry({}, 1000);
const finished: number[] = [];

beforeAll(async () => {
  const log = createLogger({ level: 'silent', service: 'test' });
  const auth = new Authenticator({ registry, signer: new PrincipalSigner('s'.repeat(32)), systemToken: async () => '', log });
  const dispatcher = new Dispatcher({
    registry,
    routes: [ticks],
    handlers: {
      async ticks(input, ctx) {
        const count = input.query.count as number;
        if (!ctx.stream) return { ticks: Array.from({ length: count }, (_, n) => ({ n })) };
        async function* gen(): AsyncGenerator<StreamEvent> {
          try {
            for (let n = 0; n < count; n++) {
              if (input.query.fail === 'yes' && n === 2) throw new DomainError('conflict', 'tick_failed', 'The third tick failed.');
              yield { id: String(n + 1), event: 'tick', data: { n } };
              if (count > 100) await new Promise((r) => setTimeout(r, 1));
            }
          } finally {
            finished.push(count);
          }
        }
        return eventsAnswer(gen());
      },
    },
  });
  const app = createApp({ log, dispatcher, auth, bodyLimit: '1mb' });
  server = http.createServer(app);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((ok) => server.close(() => ok()));
  registry.close();
});

test('Accept: text/event-stream gets the events, in order, in the SSE format', async () => {
  const res = await fetch(`${url}/ticks?count=3`, { headers: { accept: 'text/event-stream' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(await res.text()).toBe('id: 1\nevent: tick\ndata: {"n":0}\n\nid: 2\nevent: tick\ndata: {"n":1}\n\nid: 3\nevent: tick\ndata: {"n":2}\n\n');
  expect(finished).toContain(3);
});

test('without it, the same operation answers JSON', async () => {
  const res = await fetch(`${url}/ticks?count=2`);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ ticks: [{ n: 0 }, { n: 1 }] });
});

test('an error once the stream has started is an error event with the error body, then the end', async () => {
  const res = await fetch(`${url}/ticks?count=5&fail=yes`, { headers: { accept: 'text/event-stream', 'x-request-id': 'req-sse' } });
  const text = await res.text();
  expect(text).toBe(
    'id: 1\nevent: tick\ndata: {"n":0}\n\nid: 2\nevent: tick\ndata: {"n":1}\n\n' +
      'event: error\ndata: {"error":{"code":"tick_failed","message":"The third tick failed.","requestId":"req-sse"}}\n\n',
  );
});

test('a client that leaves stops the source (its finally runs)', async () => {
  await new Promise<void>((resolve, reject) => {
    const req = http.get(`${url}/ticks?count=10000`, { headers: { accept: 'text/event-stream' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => {});
    req.on('close', () => resolve());
    setTimeout(() => reject(new Error('no data')), 5000);
  });
  for (let i = 0; i < 100 && !finished.includes(10_000); i++) await new Promise((r) => setTimeout(r, 20));
  expect(finished).toContain(10_000);
});

describe('sendEvents on its own', () => {
  /** A source that never yields and records being stopped. */
  const quiet = () => {
    const stopped = { n: 0 };
    const source: AsyncIterable<StreamEvent> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<StreamEvent>>(() => {}),
        async return() {
          stopped.n++;
          return { done: true, value: undefined };
        },
      }),
    };
    return { source, stopped };
  };
  async function serve(handler: http.RequestListener): Promise<{ port: number; close: () => Promise<void> }> {
    const s = http.createServer(handler);
    await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
    return { port: (s.address() as AddressInfo).port, close: () => new Promise<void>((ok) => s.close(() => ok())) };
  }

  test('a client gone before the head stops the source at once (no head is written)', async () => {
    const { source, stopped } = quiet();
    let done = false;
    const srv = await serve((req, res) => {
      // The operation takes a while (authentication, reading the thread): the client leaves meanwhile.
      setTimeout(() => void sendEvents(req as any, res as any, source).then(() => (done = true)), 100);
    });
    const socket = net.connect(srv.port, '127.0.0.1', () => {
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
      socket.destroy();
    });
    for (let i = 0; i < 100 && !done; i++) await new Promise((r) => setTimeout(r, 20));
    expect([done, stopped.n]).toEqual([true, 1]);
    await srv.close();
  });

  test('the hold’s end stops a quiet stream with an error event naming why, then the end', async () => {
    const { source, stopped } = quiet();
    let end: ((why: DomainError) => void) | undefined;
    let released = 0;
    const srv = await serve((req, res) => {
      (req as any).requestId = 'req-held';
      void sendEvents(req as any, res as any, source, (e) => {
        end = e;
        return () => released++;
      });
    });
    const res = await fetch(`http://127.0.0.1:${srv.port}/`);
    const reading = res.text();
    for (let i = 0; i < 100 && !end; i++) await new Promise((r) => setTimeout(r, 10));
    end!(new DomainError('unauthenticated', 'key_revoked', 'The API key was revoked: this stream has ended.'));
    expect(await reading).toBe(
      'event: error\ndata: {"error":{"code":"key_revoked","message":"The API key was revoked: this stream has ended.","requestId":"req-held"}}\n\n',
    );
    expect([stopped.n, released]).toEqual([1, 1]);
    await srv.close();
  });
});
