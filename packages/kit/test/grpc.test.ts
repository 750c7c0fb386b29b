import { AsyncLocalStorage } from 'node:async_hooks';

import { bindService, createLogger, createRpcClient, DomainError, type Handlers, offerInProcess, PrincipalSigner, startGrpcServer } from '@svc/kit';
import { keys } from '@svc/proto';

// A real grpc-js server and client on loopback, with the keys service's definition and test
// handlers; each test runs on both transports: over HTTP/2, and in process (the server offered to
// callers of the same process, in-process.ts), which must behave the same.
type Def = typeof keys.KeysServiceService;
const SECRET = 'k'.repeat(40);
const signer = new PrincipalSigner(SECRET);
const log = createLogger({ level: 'silent', service: 'test' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The slow calls the handlers have begun, in order. */
const started: string[] = [];

const handlers = {
  async verifyKey(req, ctx) {
    if (req.keyHash === 'missing') throw new DomainError('not_found', 'key_not_found', 'API key not found.');
    if (req.keyHash === 'limited') throw new DomainError('rate_limited', 'too_many', 'Slow down.', { retryAfterSeconds: 3, bucket: 'b' });
    if (req.keyHash === 'wordy') throw new DomainError('conflict', 'merge_conflict', 'Too much to tell.', { items: 'x'.repeat(600_000) });
    if (req.keyHash === 'store') return { key: { ...blank, id: String(store.getStore() ?? 'none') } };
    if (req.keyHash === 'keep-signal') {
      kept.push(ctx.signal);
      return { key: blank };
    }
    if (req.keyHash === 'crash') throw new Error('database password is hunter2');
    if (req.keyHash.startsWith('slow')) {
      started.push(req.keyHash);
      await sleep(Number(req.keyHash.slice(4)));
    }
    if (req.keyHash === 'wait-for-abort') {
      // Waits for its caller to give up: the call's signal.
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted.push(ctx.signal.aborted);
    }
    return {
      key: { id: ctx.principal.accountId, name: ctx.requestId, prefix: '', usageCount: 0, createdAt: '', accountId: '', ownerKind: '', ownerId: '' },
    };
  },
} as Partial<Handlers<Def>> as Handlers<Def>;

const blank = { id: '', name: '', prefix: '', usageCount: 0, createdAt: '', accountId: '', ownerKind: '', ownerId: '' };
/** Something a caller holds in AsyncLocalStorage (as sql-guard.ts holds an open transaction): never seen by the service it calls. */
const store = new AsyncLocalStorage<string>();
const aborted: boolean[] = [];
const kept: AbortSignal[] = [];

/** A server of the test handlers; `inProcess`: offered to callers of this process too, as runService does. */
async function serve(inProcess: boolean) {
  const definition = { verifyKey: keys.KeysServiceService.verifyKey } as Def;
  const implementation = bindService(definition, handlers, { signer, log });
  const handle = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    serviceName: 'svc.keys.v1.KeysService',
    services: [{ definition: keys.KeysServiceService as never, implementation }],
  });
  handle.setServing('SERVING');
  const withdraw = inProcess ? offerInProcess(handle.address, definition, implementation) : undefined;
  return {
    handle,
    /** As runService stops a service. */
    stop: async (graceMs: number) => {
      withdraw?.();
      await handle.shutdown(graceMs);
    },
  };
}

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    const e = err as DomainError;
    return `${e.kind}/${e.code}: ${e.message}`;
  }
  throw new Error('expected the call to fail');
};

describe.each([
  ['over HTTP/2', false],
  ['in process', true],
])('%s', (_name, inProcess) => {
  let server: Awaited<ReturnType<typeof serve>>;
  let client: ReturnType<typeof createRpcClient<Def>>;
  let token: string;

  beforeAll(async () => {
    server = await serve(inProcess);
    client = createRpcClient(keys.KeysServiceService, 'svc.keys.v1.KeysService', server.handle.address, { deadlineMs: 2000 });
    token = (await signer.sign({ kind: 'human', userId: 'acct_me', accountId: 'acct_me', channel: 'api' })).token;
  });
  afterAll(async () => {
    client.close();
    await server.stop(100);
  });
  beforeEach(() => {
    aborted.length = 0;
  });

  test('the principal and request id arrive with the call', async () => {
    const res = await client.verifyKey({ keyHash: 'ok' }, { principalToken: token, requestId: 'req_1' });
    expect(res.key).toMatchObject({ id: 'acct_me', name: 'req_1' });
  });

  test('a call without a principal, or with a forged one, is refused', async () => {
    expect(await codeOf(client.verifyKey({ keyHash: 'ok' }, { principalToken: '' }))).toMatch(/^unauthenticated\//);
    const forged = (await new PrincipalSigner('z'.repeat(40)).sign({ kind: 'system', accountId: 'system', channel: 'internal' })).token;
    expect(await codeOf(client.verifyKey({ keyHash: 'ok' }, { principalToken: forged }))).toBe(
      'unauthenticated/invalid_principal: The call carries no valid principal.',
    );
  });

  test('a domain error crosses the hop unchanged; an unexpected one leaks nothing', async () => {
    expect(await codeOf(client.verifyKey({ keyHash: 'missing' }, { principalToken: token }))).toBe('not_found/key_not_found: API key not found.');
    const limited = await client.verifyKey({ keyHash: 'limited' }, { principalToken: token }).catch((err: DomainError) => err);
    expect(limited).toMatchObject({ kind: 'rate_limited', code: 'too_many', message: 'Slow down.', details: { retryAfterSeconds: 3, bucket: 'b' } });
    const crash = await codeOf(client.verifyKey({ keyHash: 'crash' }, { principalToken: token }));
    expect(crash).toBe('internal/internal_error: Internal error.');
    // Details past their bound are left out, and the connection serves the next call.
    const wordy = await client.verifyKey({ keyHash: 'wordy' }, { principalToken: token }).catch((err: DomainError) => err);
    expect(wordy).toMatchObject({ kind: 'conflict', code: 'merge_conflict', message: 'Too much to tell.', details: undefined });
    expect((await client.verifyKey({ keyHash: 'ok' }, { principalToken: token })).key).toMatchObject({ id: 'acct_me' });
  });

  test('deadlines end slow calls', async () => {
    expect(await codeOf(client.verifyKey({ keyHash: 'slow500' }, { principalToken: token, deadlineMs: 100 }))).toMatch(/^deadline_exceeded\//);
  });

  test('a deadline farther away than a timer can wait (24.8 days) does not end the call at once', async () => {
    const res = await client.verifyKey({ keyHash: 'slow50' }, { principalToken: token, deadlineMs: 40 * 24 * 3600 * 1000 });
    expect(res.key?.id).toBe('acct_me');
  });

  test('shutdown drains calls in flight and refuses new ones', async () => {
    const other = await serve(inProcess);
    const c = createRpcClient(keys.KeysServiceService, 'svc.keys.v1.KeysService', other.handle.address, { deadlineMs: 5000 });
    const before = started.length;
    const inFlight = c.verifyKey({ keyHash: 'slow400' }, { principalToken: token });
    // In flight: the server holds it (a fixed sleep was too short for a new channel on a loaded machine).
    for (const end = Date.now() + 10_000; started.length === before && Date.now() < end;) await sleep(5);
    expect(started.length).toBeGreaterThan(before);
    const stopped = other.stop(3000);
    const late = await codeOf(c.verifyKey({ keyHash: 'ok' }, { principalToken: token }));
    expect(late).toMatch(/^unavailable\//);
    await expect(inFlight).resolves.toMatchObject({ key: { id: 'acct_me' } });
    await stopped;
    c.close();
  });

  test('a handler sees its call end once it has answered, as grpc-js reports a closed stream', async () => {
    kept.length = 0;
    await client.verifyKey({ keyHash: 'keep-signal' }, { principalToken: token });
    for (let i = 0; i < 50 && !kept[0]?.aborted; i++) await sleep(10);
    expect(kept[0]?.aborted).toBe(true);
  });

  test("the service runs outside its caller's async context", async () => {
    const res = await store.run('the caller', () => client.verifyKey({ keyHash: 'store' }, { principalToken: token }));
    expect(res.key!.id).toBe('none');
  });

  test('a unary call its caller aborts rejects at once with call_aborted, and the handler sees its signal abort', async () => {
    const ac = new AbortController();
    const call = client.verifyKey({ keyHash: 'wait-for-abort' }, { principalToken: token, signal: ac.signal });
    await sleep(100);
    ac.abort();
    expect(await codeOf(call)).toBe('unavailable/call_aborted: The call was aborted by its caller.');
    for (let i = 0; i < 100 && !aborted.length; i++) await sleep(20);
    expect(aborted).toEqual([true]);
    // Aborted before it is sent: never sent.
    expect(await codeOf(client.verifyKey({ keyHash: 'ok' }, { principalToken: token, signal: ac.signal }))).toMatch(/^unavailable\/call_aborted/);
    // The channel goes on serving calls.
    expect((await client.verifyKey({ keyHash: 'ok' }, { principalToken: token })).key).toMatchObject({ id: 'acct_me' });
  });
});

test('a server offered in process is called without its socket', async () => {
  const s = await serve(true);
  const c = createRpcClient(keys.KeysServiceService, 'svc.keys.v1.KeysService', s.handle.address, { deadlineMs: 2000 });
  const token = (await signer.sign({ kind: 'system', accountId: 'system', channel: 'internal' })).token;
  // Its HTTP/2 server gone, a call still reaches the implementation: it never went over the socket.
  s.handle.server.forceShutdown();
  expect((await c.verifyKey({ keyHash: 'ok' }, { principalToken: token })).key).toMatchObject({ id: 'system' });
  await s.stop(100);
  expect(await codeOf(c.verifyKey({ keyHash: 'ok' }, { principalToken: token }))).toMatch(/^unavailable\//);
  c.close();
});
