import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

// The account's order updates (GET /trading/events, docs/trading.md "Order updates"): as a list and
// as a live stream resumed with Last-Event-ID, nothing lost or repeated, one gap-free sequence per
// account, another account's never visible; the stream ends with its key. The market maker's
// reference does not step during the suite, so the book only moves with the orders here.
const LIMIT = 3;
let t: TestStack;

beforeAll(async () => {
  t = await startTestStack({
    SVC_TRADING_PAPER_TICK_MS: '3600000',
    SVC_TRADING_PAPER_CASH: '100000',
    SVC_TRADING_ALPACA_URL: 'off',
    SVC_SSE_MAX_STREAMS_PER_KEY: String(LIMIT),
  });
}, 60_000);
afterAll(() => t?.stop());

let n = 0;
const person = async () => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `Trader ${++n}` })).body.key as string;
const order = async (key: string, body: Record<string, unknown>) => (await t.ok('POST', '/trading/order', key, body)).body;
const bookOf = async (key: string, symbol: string) => (await t.ok('GET', `/trading/book?symbol=${encodeURIComponent(symbol)}&depth=10`, key)).body;
const account = async (key: string) => (await t.ok('POST', '/trading/account', key, { venue: 'paper' })).body;
const events = async (key: string, after = 0) => (await t.ok('GET', `/trading/events?after=${after}&limit=200`, key)).body.events as any[];

type SseEvent = { id?: string; event?: string; data: any };
/** Opens the stream; `events` grows as they come; `close()` drops it; `ended` once the server ended it. */
async function stream(key: string, opts: { after?: number; lastEventId?: string } = {}) {
  const ac = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(`${t.url}/trading/events${opts.after !== undefined ? `?after=${opts.after}` : ''}`, { headers, signal: ac.signal });
  const out = { status: res.status, events: [] as SseEvent[], ended: false, body: undefined as any, close: () => ac.abort() };
  if (res.status !== 200) {
    out.body = await res.json();
    return out;
  }
  void (async () => {
    let text = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += Buffer.from(chunk).toString('utf8');
        let i: number;
        while ((i = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, i);
          text = text.slice(i + 2);
          const e: SseEvent = { data: null };
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
          }
          if (e.data !== null) out.events.push(e);
        }
      }
      out.ended = true;
    } catch {
      // dropped by the client
    }
  })();
  return out;
}

test('an order’s life as updates: accepted, filled step by step, cancelled, replaced; each with the balances after it', async () => {
  const alice = await person();
  const bob = await person();
  const b = await bookOf(alice, 'ETH/USD');
  // A resting buy: accepted, its cash held.
  const rest = await order(alice, { symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '2', price: (Number(b.bids[0].price) - 10).toFixed(2) });
  let list = await events(alice);
  expect(list.map((e) => [e.seq, e.type, e.order.id, e.order.status])).toEqual([[1, 'accepted', rest.id, 'new']]);
  const acct = await account(alice);
  expect(list[0].balances).toEqual([{ asset: 'ETH', total: '0', held: '0', available: '0' }, acct.balances.find((x: any) => x.asset === 'USD')]);
  expect(list[0]).toMatchObject({ venue: 'paper', symbol: 'ETH/USD', fill: null, replacedBy: null });
  // Replaced: the old order's update says so and names the new one, which is accepted.
  const replaced = (await t.ok('POST', `/trading/orders/${rest.id}/replace`, alice, { price: (Number(b.bids[0].price) - 20).toFixed(2) })).body;
  list = await events(alice, 1);
  expect(list.map((e) => [e.seq, e.type, e.order.id])).toEqual([
    [2, 'replaced', rest.id],
    [3, 'accepted', replaced.order.id],
  ]);
  expect(list[0].replacedBy).toBe(replaced.order.id);
  expect(list[0].order.status).toBe('cancelled');
  // Cancelled: the hold given back.
  await t.ok('POST', '/trading/cancel', alice, { orderId: replaced.order.id });
  list = await events(alice, 3);
  expect(list.map((e) => [e.seq, e.type])).toEqual([[4, 'cancelled']]);
  expect(list[0].balances.find((x: any) => x.asset === 'USD')).toEqual({ asset: 'USD', total: '100000', held: '0', available: '100000' });

  // Bob rests a sell; Alice's market buy walks past it: Bob's maker fill and Alice's taker fills.
  const ask = Number((await bookOf(bob, 'ETH/USD')).asks[0].price);
  await order(bob, { symbol: 'ETH/USD', side: 'buy', qty: '1' }); // something to sell
  const sell = await order(bob, { symbol: 'ETH/USD', side: 'sell', type: 'limit', qty: '0.5', price: (ask - 0.01).toFixed(2) });
  const buy = await order(alice, { symbol: 'ETH/USD', side: 'buy', qty: '3' });
  expect(buy.status).toBe('filled');
  const fills = (await t.ok('GET', `/trading/fills?orderId=${buy.id}`, alice)).body.fills.reverse();
  list = await events(alice, 4);
  expect(list.map((e) => e.type)).toEqual([
    'accepted',
    ...fills.map((_: unknown, i: number) => (i === fills.length - 1 ? 'filled' : 'partially_filled')),
  ]);
  expect(list.slice(1).map((e) => [e.fill.price, e.fill.qty, e.fill.liquidity])).toEqual(fills.map((f: any) => [f.price, f.qty, 'taker']));
  // The filled quantity grows fill by fill; the last update's balances are the account's.
  expect(list.slice(1).map((e) => e.order.filledQty)).toEqual(
    fills.map((_: unknown, i: number) => String(fills.slice(0, i + 1).reduce((s: number, f: any) => s + Number(f.qty) * 1e6, 0) / 1e6)),
  );
  const after = await account(alice);
  expect(list.at(-1).balances).toEqual(['ETH', 'USD'].map((a) => after.balances.find((x: any) => x.asset === a)));
  const bobs = await events(bob);
  const bobFill = bobs.find((e) => e.order.id === sell.id && e.fill);
  expect(bobFill).toMatchObject({ type: 'filled', fill: { qty: '0.5', liquidity: 'maker' }, order: { status: 'filled', filledQty: '0.5' } });
  expect(bobs.map((e) => e.seq)).toEqual(bobs.map((_, i) => i + 1));
});

test("another account's updates are never visible, in the list or the stream", async () => {
  const alice = await person();
  const bob = await person();
  const live = await stream(bob);
  expect(live.status).toBe(200);
  const mine = await order(alice, { symbol: 'AAPL', side: 'buy', qty: '1.5' });
  await order(bob, { symbol: 'SPY', side: 'buy', qty: '0.1' });
  await until(() => live.events.length >= 2, 10_000, { what: "Bob's two updates on his stream" });
  live.close();
  expect(live.events.every((e) => e.data.order.symbol === 'SPY')).toBe(true);
  expect((await events(bob)).some((e) => e.order?.id === mine.id)).toBe(false);
  expect((await events(alice)).map((e) => e.order.id)).toEqual([mine.id, mine.id]);
});

test('the stream sends every update after Last-Event-ID, then the live ones, nothing lost or repeated', async () => {
  const key = await person();
  for (let i = 0; i < 3; i++) await order(key, { symbol: 'BTC/USD', side: 'buy', notional: '100' });
  const first = await stream(key);
  await until(() => first.events.length >= 6, 10_000, { what: 'the first six updates' });
  expect(first.events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6']);
  expect(first.events.map((e) => e.event)).toEqual(['accepted', 'filled', 'accepted', 'filled', 'accepted', 'filled']);
  expect(first.events[1]!.data).toMatchObject({ seq: 2, type: 'filled', order: { notional: '100', status: 'filled' } });
  // Live: an update made while the stream is open.
  await order(key, { symbol: 'BTC/USD', side: 'sell', notional: '50' });
  await until(() => first.events.length >= 8, 10_000, { what: 'the live updates' });
  first.close();
  // Updates made while no one listens, then a resume after the last one seen.
  await order(key, { symbol: 'AAPL', side: 'buy', qty: '0.25' });
  await order(key, { symbol: 'AAPL', side: 'buy', qty: '0.25' });
  const resumed = await stream(key, { lastEventId: first.events.at(-1)!.id });
  await until(() => resumed.events.length >= 4, 10_000, { what: 'the updates made meanwhile' });
  await order(key, { symbol: 'AAPL', side: 'sell', qty: '0.5' });
  await until(() => resumed.events.length >= 6, 10_000, { what: 'the live updates after the resume' });
  resumed.close();
  const seen = [...first.events, ...resumed.events].map((e) => Number(e.id));
  expect(seen).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
  // The list says the same.
  expect((await events(key)).map((e) => e.seq)).toEqual(seen);
  // `after` resumes the same way.
  const fromQuery = await stream(key, { after: 12 });
  await until(() => fromQuery.events.length >= 2, 10_000, { what: 'the updates after 12' });
  fromQuery.close();
  expect(fromQuery.events.map((e) => e.id)).toEqual(['13', '14']);
});

test('concurrent orders of several accounts on several books: each account’s sequence has no gap, every stream sees all of its own', async () => {
  const keys = await Promise.all([person(), person(), person()]);
  const streams = await Promise.all(keys.map((k) => stream(k)));
  const symbols = ['BTC/USD', 'ETH/USD', 'AAPL', 'SPY'];
  let i = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (i < 90) {
        const k = i++;
        const key = keys[k % keys.length]!;
        const symbol = symbols[k % symbols.length]!;
        const body =
          k % 3 === 0
            ? { symbol, side: 'buy', notional: '120' }
            : { symbol, side: k % 2 ? 'buy' : 'sell', type: 'limit', qty: '0.01', price: '100.00' };
        await t.call('POST', '/trading/order', { key, body });
      }
    }),
  );
  for (const [j, key] of keys.entries()) {
    const list = await events(key);
    expect(list.map((e) => e.seq)).toEqual(list.map((_, x) => x + 1));
    await until(() => streams[j]!.events.length >= list.length, 10_000, { what: `stream ${j} catching up` });
    streams[j]!.close();
    expect(streams[j]!.events.map((e) => Number(e.id))).toEqual(list.map((e) => e.seq));
  }
});

test('a reset is an update too, with the starting cash as the balances', async () => {
  const key = await person();
  await order(key, { symbol: 'SPY', side: 'buy', qty: '1' });
  await t.ok('POST', '/trading/reset', key, { venue: 'paper' });
  const list = await events(key);
  expect(list.at(-1)).toMatchObject({
    type: 'reset',
    order: null,
    symbol: null,
    balances: [{ asset: 'USD', total: '100000', held: '0', available: '100000' }],
  });
});

test('a key holds a few streams at most (shared with the other live streams); revoking it ends them with an error event', async () => {
  const root = await person();
  const made = (await t.ok('POST', '/me/api-keys', root, { name: 'stream key' })).body as { key: string; id: string };
  const open = [];
  for (let i = 0; i < LIMIT; i++) open.push(await stream(made.key));
  expect(open.map((s) => s.status)).toEqual(open.map(() => 200));
  const refused = await stream(made.key);
  expect([refused.status, refused.body.error.code]).toEqual([429, 'too_many_streams']);
  open.pop()!.close();
  await until(
    async () => {
      const s = await stream(made.key);
      if (s.status === 200) {
        open.push(s);
        return true;
      }
      return false;
    },
    10_000,
    { what: 'a slot given back when a client left' },
  );
  await t.ok('DELETE', `/me/api-keys/${made.id}`, root);
  await until(() => open.every((s) => s.ended), 5_000, { what: 'every stream ended by the revocation' });
  for (const s of open) expect(s.events.at(-1)).toMatchObject({ event: 'error', data: { error: { code: 'key_revoked' } } });
});
