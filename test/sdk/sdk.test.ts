import { responseOf, type ServerEvent, Svc, SvcNotFoundError, SvcPreconditionFailedError } from '@svc/sdk';

import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/** The TypeScript SDK (docs/sdk.md) against the running platform: every resource family, pagination, streams, errors. */

let t: TestStack;
let ada: { id: string; key: string };
let svc: Svc;
beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_ALPACA_URL: 'off' });
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'sdk person' });
  ada = { id: res.body.account.id, key: res.body.key };
  svc = new Svc({ env: { SVC_API_KEY: ada.key, SVC_BASE_URL: t.url } });
  const agent = await svc.agents.create({ name: 'default helper' });
  await svc.defaultAgents.set({ agentIds: [agent.id] });
}, 60_000);
afterAll(() => t?.stop());

const text = (s: string) => new TextEncoder().encode(s);
type Ev = ServerEvent<{ seq: number; type: string; data: any }>;

describe('the TypeScript SDK against the stack', () => {
  test('the key and origin come from SVC_API_KEY and SVC_BASE_URL in the environment', async () => {
    const saved = { key: process.env.SVC_API_KEY, url: process.env.SVC_BASE_URL };
    process.env.SVC_API_KEY = ada.key;
    process.env.SVC_BASE_URL = t.url;
    try {
      const me = await new Svc().me.get();
      expect(me).toMatchObject({ accountId: ada.id });
      expect(responseOf(me)?.requestId).toEqual(expect.any(String));
    } finally {
      for (const [k, v] of [
        ['SVC_API_KEY', saved.key],
        ['SVC_BASE_URL', saved.url],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  test('keys: create, list, revoke; the new key works and then does not', async () => {
    const created = await svc.keys.create({ name: 'from the sdk' });
    expect(created.key).toMatch(/^svc_[0-9a-f]{64}$/);
    const other = new Svc({ apiKey: created.key, baseUrl: t.url });
    expect((await other.me.get()).accountId).toBe(ada.id);
    const listed = await svc.keys.list();
    expect(listed.keys.map((k) => k.id)).toContain(created.id);
    await svc.keys.revoke({ keyId: created.id });
    await expect(other.me.get()).rejects.toMatchObject({ status: 401 });
  });

  test('drive: streamed upload and download, If-None-Match / If-Match, typed 412 with the current ETag, typed 404', async () => {
    async function* parts() {
      for (let i = 0; i < 64; i++) yield text(`line ${i}\n`.padEnd(1024, '.'));
    }
    const file = await svc.drive.upload({ name: 'notes.txt', content: parts(), contentType: 'text/plain', ifNoneMatch: '*' });
    expect(file).toMatchObject({ name: 'notes.txt', size: 64 * 1024, contentType: 'text/plain' });
    const taken = await svc.drive.upload({ name: 'notes.txt', content: 'again', ifNoneMatch: '*' }).catch((e) => e);
    expect(taken).toBeInstanceOf(SvcPreconditionFailedError);
    expect(taken.etag).toBe(file.etag);

    const got = await svc.drive.read({ id: file.id });
    expect([got.status, got.etag, got.contentLength]).toEqual([200, file.etag, 64 * 1024]);
    let bytes = 0;
    for await (const chunk of got.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    expect(bytes).toBe(64 * 1024);
    expect((await svc.drive.read({ id: file.id, ifNoneMatch: file.etag })).notModified).toBe(true);

    const replaced = await svc.drive.replace({ id: file.id, content: 'v2', ifMatch: file.etag });
    expect(await (await svc.drive.read({ id: file.id })).text()).toBe('v2');
    const stale = await svc.drive.replace({ id: file.id, content: 'v3', ifMatch: file.etag }).catch((e) => e);
    expect(stale).toBeInstanceOf(SvcPreconditionFailedError);
    expect([stale.status, stale.code, stale.etag]).toEqual([412, expect.any(String), replaced.etag]);
    expect(stale.requestId).toEqual(expect.any(String));

    const renamed = await svc.drive.update({ id: file.id, name: 'renamed.txt', ifMatch: replaced.etag });
    expect(renamed.name).toBe('renamed.txt');
    await svc.drive.delete({ id: file.id });
    const gone = await svc.drive.get({ id: file.id }).catch((e) => e);
    expect(gone).toBeInstanceOf(SvcNotFoundError);
    expect([gone.status, gone.code, gone.operation]).toEqual([404, expect.stringMatching(/not_found$/), 'drive.get']);
  });

  test('pagination: .all() yields every item across pages, following nextCursor', async () => {
    const parent = await svc.drive.createFolder({ name: 'many' });
    const names = Array.from({ length: 7 }, (_, i) => `f${i}`);
    for (const name of names) await svc.drive.createFolder({ name, parentId: parent.id });
    const pages: Array<string | null> = [];
    const first = await svc.drive.list({ parentId: parent.id, limit: 3 });
    pages.push(first.nextCursor);
    expect(first.items).toHaveLength(3);
    const all: string[] = [];
    for await (const item of svc.drive.list.all({ parentId: parent.id, limit: 3 })) all.push(item.name);
    expect(all).toEqual(names);
    expect(pages[0]).toEqual(expect.any(String));
  });

  test('threads: create with the development model, stream events live, resume after a dropped connection with nothing repeated', async () => {
    // A fetch whose first event stream is cut after the first persisted events arrive.
    let streams = 0;
    const resumedWith: Array<string | null> = [];
    const dropping: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const headers = new Headers(init?.headers);
      if (headers.get('accept') !== 'text/event-stream') return res;
      resumedWith.push(headers.get('last-event-id'));
      if (++streams > 1) return res;
      const reader = res.body!.getReader();
      const cut = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          controller.enqueue(value);
          if (new TextDecoder().decode(value).includes('id: 2')) {
            await reader.cancel();
            controller.error(new Error('connection reset'));
          }
        },
      });
      return new Response(cut, { status: res.status, headers: res.headers });
    };
    const live = new Svc({ apiKey: ada.key, baseUrl: t.url, fetch: dropping, retryBaseMs: 20 });
    const thread = await live.threads.create({ title: 'sdk', message: 'hello from the sdk' });
    expect(thread.runId).toEqual(expect.any(String));
    const seen: Ev[] = [];
    const ac = new AbortController();
    for await (const e of live.threads.events.stream({ id: thread.id }, { signal: ac.signal })) {
      seen.push(e as Ev);
      if (e.event === 'run.completed' || e.event === 'run.failed') break;
    }
    expect(streams).toBe(2);
    expect(resumedWith[0]).toBeNull();
    expect(Number(resumedWith[1])).toBeGreaterThanOrEqual(2);
    const persisted = seen.filter((e) => e.id !== undefined);
    const listed: number[] = [];
    for await (const e of svc.threads.events.all({ id: thread.id })) listed.push(e.seq);
    expect(persisted.map((e) => Number(e.id))).toEqual(listed.slice(0, persisted.length));
    expect(new Set(persisted.map((e) => e.id)).size).toBe(persisted.length);
    expect(seen.map((e) => e.event)).toContain('run.completed');
    const answer = persisted.find((e) => e.event === 'message.created' && e.data.data?.role === 'assistant');
    expect(JSON.stringify(answer?.data.data)).toContain('hello from the sdk');

    const injected = await svc.threads.inject({ id: thread.id, content: 'again' });
    expect(injected.status).toBe('started');
    await until(async () => (await svc.threads.get({ id: thread.id })).status === 'idle');
    expect((await svc.threads.list()).threads.map((x) => x.id)).toContain(thread.id);
  }, 60_000);

  test('a server that sends events again is not repeated to the caller', async () => {
    // A fetch that strips the resume position: the server replays everything; the SDK skips what it yielded.
    let streams = 0;
    const forgetful: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (headers.get('accept') !== 'text/event-stream') return fetch(input, init);
      headers.delete('last-event-id');
      const url = new URL(String(input));
      url.searchParams.delete('after');
      const res = await fetch(url, { ...init, headers });
      if (++streams > 1) return res;
      const reader = res.body!.getReader();
      let n = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            const { value, done } = await reader.read();
            if (done) return controller.close();
            controller.enqueue(value);
            if (++n >= 1) {
              await reader.cancel();
              controller.close();
            }
          },
        }),
        { status: res.status, headers: res.headers },
      );
    };
    const thread = await svc.threads.create({ title: 'replay', message: 'one' });
    await until(async () => (await svc.threads.get({ id: thread.id })).status === 'idle');
    const client = new Svc({ apiKey: ada.key, baseUrl: t.url, fetch: forgetful, retryBaseMs: 20 });
    const ids: string[] = [];
    const total = (await svc.threads.get({ id: thread.id })).lastSeq;
    for await (const e of client.threads.events.stream({ id: thread.id })) {
      if (e.id) ids.push(e.id);
      if (ids.length >= total) break;
    }
    expect(streams).toBeGreaterThanOrEqual(2);
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => String(i + 1)));
  });

  test('models, credits, agents, profiles, trading, sites, code, hosts, accounts: one call each', async () => {
    expect((await svc.models.list()).models.map((m) => m.id)).toContain('svc/dev');
    expect(await svc.credits.get()).toMatchObject({ currency: expect.any(String) });
    const agent = await svc.agents.create({ name: 'helper' });
    expect((await svc.agents.get({ id: agent.id })).id).toBe(agent.id);

    const profile = await svc.profiles.create({ name: 'taste' });
    const c1 = await svc.profiles.commit({ id: profile.id, message: 'first' });
    const c2 = await svc.profiles.commit({ id: profile.id, message: 'second' });
    const log = await svc.profiles.log({ id: profile.id });
    expect(log.versions.map((v) => v.id)).toEqual(expect.arrayContaining([c1.id, c2.id]));
    expect(await svc.profiles.diff({ id: profile.id, from: c1.id, to: c2.id })).toBeDefined();

    expect((await svc.trading.venues()).venues.map((v) => v.id)).toContain('paper');
    await svc.trading.account({ venue: 'paper' });
    const book = await svc.trading.book({ symbol: 'BTC/USD', depth: 5 });
    const price = book.bids[book.bids.length - 1]!.price;
    const order = await svc.trading.order({ symbol: 'BTC/USD', side: 'buy', type: 'limit', qty: '0.01', price, timeInForce: 'gtc' });
    const cancelled = await svc.trading.cancel({ orderId: order.id });
    expect(cancelled.orders.map((o) => o.status)).toEqual(['cancelled']);

    expect((await svc.sites.list()).sites).toEqual([]);
    expect(await svc.code.run({ code: '6 * 7' })).toMatchObject({ result: 42 });
    expect((await svc.hosts.list({ id: ada.id })).hosts).toEqual([]);
    expect((await svc.accounts.get({ id: ada.id })).id).toBe(ada.id);
  });

  test('a POST sent twice under one Idempotency-Key happens once; the SDK sends a key of its own on every POST', async () => {
    const key = `sdk-${Date.now()}`;
    const a = await svc.drive.createFolder({ name: 'once' }, { idempotencyKey: key });
    const b = await svc.drive.createFolder({ name: 'once' }, { idempotencyKey: key });
    expect(b.id).toBe(a.id);
    expect(responseOf(b)?.headers.get('idempotent-replayed')).toBe('true');
    const named: string[] = [];
    for await (const item of svc.drive.list.all()) if (item.name === 'once') named.push(item.id);
    expect(named).toEqual([a.id]);
    // Without an explicit key each call is its own: a second folder of that name is a conflict, not a replay.
    await expect(svc.drive.createFolder({ name: 'once' })).rejects.toMatchObject({ status: 409 });
  });
});
