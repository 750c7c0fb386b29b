import { startTestStack, type TestStack } from '../support/stack';

// Linked orders, trailing stops and the sessions' auctions on the paper venue, from outside
// (docs/trading.md, "Linked orders", "Sessions"). The market maker's reference does not step during the suite, so a book only moves
// with the orders here; each test has a book of its own.
let t: TestStack;
let alice: string;
let bob: string;
let person: string;
let agentKey: string;
let agentId: string;

const order = (key: string, body: Record<string, unknown>) => t.call('POST', '/trading/order', { key, body });
const book = async (key: string, symbol: string) => (await t.ok('GET', `/trading/book?symbol=${encodeURIComponent(symbol)}&depth=10`, key)).body;
const get = async (key: string, id: string) => (await t.ok('GET', `/trading/orders/${id}`, key)).body;
const events = async (key: string, after = 0) => (await t.ok('GET', `/trading/events?after=${after}&limit=200`, key)).body.events;
const lastSeq = async (key: string) => {
  let after = 0;
  for (;;) {
    const page = (await t.ok('GET', `/trading/events?after=${after}&limit=200`, key)).body;
    if (!page.events.length) return after;
    after = page.events[page.events.length - 1].seq;
  }
};
/** Prices in cents, as integers, and back. */
const cents = (s: string) => Math.round(Number(s) * 100);
const price = (c: number) => (c / 100).toFixed(2);
/** A bracket buying at a limit of `entry` cents, its take-profit `up` cents above and its stop-loss `down` cents below. */
const limitBracket = (symbol: string, entry: number, qty: string, up: number, down: number) => ({
  symbol,
  side: 'buy',
  type: 'limit',
  price: price(entry),
  qty,
  orderClass: 'bracket',
  takeProfit: { price: price(entry + up) },
  stopLoss: { stopPrice: price(entry - down) },
});

beforeAll(async () => {
  // A compressed trading day of 4 s (the clock tests drive): opening auctions at 0, 4, 8 s…, closing ones at 2, 6, 10 s….
  t = await startTestStack({
    SVC_TRADING_PAPER_TICK_MS: '3600000',
    SVC_TRADING_PAPER_CASH: '1000000',
    SVC_TRADING_ALPACA_URL: 'off',
    SVC_TRADING_PAPER_SESSION_CYCLE_MS: '4000',
  });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
  person = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Carol' })).body.key;
  agentId = (await t.ok('POST', '/agents', person, { name: 'bot' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, person, { name: 'bot key' })).body.key;
  await t.ok('PUT', `/trading/limits/${agentId}`, person, { maxNotionalPerOrder: '2000', maxNotionalPerDay: null, symbols: null, paperOnly: true });
}, 60_000);
afterAll(() => t?.stop());

test('a bracket: the entry fills, its legs go live, the take-profit fills and the stop-loss is cancelled in the same step', async () => {
  const b = await book(alice, 'ETH/USD');
  const ask = cents(b.asks[0].price);
  const from = await lastSeq(alice);
  const bracket = { ...limitBracket('ETH/USD', ask, '0.5', 500, 3000), clientOrderId: 'br-1' };
  const res = await order(alice, bracket);
  expect(res.status).toBe(201);
  const entry = res.body;
  expect(entry).toMatchObject({ orderClass: 'bracket', status: 'filled', filledQty: '0.5' });
  expect(entry.legs).toHaveLength(2);
  const tp = entry.legs.find((l: any) => l.type === 'limit');
  const sl = entry.legs.find((l: any) => l.type === 'stop');
  expect(tp).toMatchObject({ side: 'sell', status: 'new', qty: '0.5', parentOrderId: entry.id, linkedOrderId: sl.id });
  expect(sl).toMatchObject({ side: 'sell', status: 'new', qty: '0.5', parentOrderId: entry.id, linkedOrderId: tp.id });
  expect([cents(tp.price), cents(sl.stopPrice)]).toEqual([ask + 500, ask - 3000]);
  // One hold for both exits: the take-profit's 0.5 ETH.
  const eth = (await t.ok('POST', '/trading/account', alice, { venue: 'paper' })).body.balances.find((x: any) => x.asset === 'ETH');
  expect(eth).toMatchObject({ total: '0.5', held: '0.5', available: '0' });
  // A retry answers the same bracket.
  const again = await order(alice, bracket);
  expect(again.status).toBe(200);
  expect(again.body.legs.map((l: any) => l.id).sort()).toEqual([tp.id, sl.id].sort());

  // Bob buys through every ask up to the take-profit's price.
  const asks = (await book(bob, 'ETH/USD')).asks.filter((l: any) => cents(l.price) <= ask + 500);
  const qty = asks.reduce((s: number, l: any) => s + Number(l.qty), 0);
  expect(
    (await order(bob, { symbol: 'ETH/USD', side: 'buy', type: 'limit', price: price(ask + 500), qty: qty.toFixed(6), timeInForce: 'ioc' })).status,
  ).toBe(201);
  expect(await get(alice, tp.id)).toMatchObject({ status: 'filled', filledQty: '0.5' });
  expect(await get(alice, sl.id)).toMatchObject({ status: 'cancelled', reason: 'linked_order_filled', filledQty: '0' });

  const evs = (await events(alice, from)).filter((e: any) => [entry.id, tp.id, sl.id].includes(e.order.id));
  const seen = evs.map((e: any) => `${e.type}:${e.order.id === entry.id ? 'entry' : e.order.id === tp.id ? 'tp' : 'sl'}`);
  expect(seen).toEqual([
    'accepted:entry',
    'accepted:tp',
    'accepted:sl',
    ...seen.filter((s: string) => /^(partially_)?filled:entry$/.test(s)),
    'activated:tp',
    'activated:sl',
    ...seen.filter((s: string) => /^(partially_)?filled:tp$/.test(s)),
    'cancelled:sl',
  ]);
  expect(evs.find((e: any) => e.type === 'accepted' && e.order.id === tp.id).order.status).toBe('held');
  // The take-profit's fill and the stop-loss's cancel are one step: the same balances, seqs next to each other.
  const fill = evs.filter((e: any) => e.order.id === tp.id && e.type === 'filled')[0];
  const cancel = evs.find((e: any) => e.order.id === sl.id && e.type === 'cancelled');
  expect(cancel.seq).toBe(fill.seq + 1);
  expect(cancel.balances).toEqual(fill.balances);
  expect(cancel.balances.find((x: any) => x.asset === 'ETH')).toEqual({ asset: 'ETH', total: '0', held: '0', available: '0' });
});

test('an OCO: the stop leg triggers, the take-profit is cancelled, never both filled', async () => {
  const b = await book(alice, 'SPY');
  const ask = cents(b.asks[0].price);
  const bid = cents(b.bids[0].price);
  expect((await order(alice, { symbol: 'SPY', side: 'buy', qty: '2' })).status).toBe(201);
  const oco = await order(alice, {
    symbol: 'SPY',
    side: 'sell',
    type: 'limit',
    qty: '2',
    orderClass: 'oco',
    takeProfit: { price: price(ask + 200) },
    stopLoss: { stopPrice: price(bid - 10) },
  });
  expect(oco.status).toBe(201);
  expect(oco.body).toMatchObject({ orderClass: 'oco', type: 'limit', status: 'new' });
  expect(cents(oco.body.price)).toBe(ask + 200);
  const sl = oco.body.legs[0];
  expect(sl).toMatchObject({ type: 'stop', side: 'sell', status: 'new', linkedOrderId: oco.body.id, parentOrderId: oco.body.id });
  // Bob sells into the bids down past the stop: the stop fires (a market sell), the take-profit goes.
  const bids = (await book(bob, 'SPY')).bids.filter((l: any) => cents(l.price) >= bid - 10);
  const qty = bids.reduce((s: number, l: any) => s + Number(l.qty), 0);
  await t.ok('POST', '/trading/order', bob, { symbol: 'SPY', side: 'buy', qty: String(qty) });
  expect(
    (await order(bob, { symbol: 'SPY', side: 'sell', type: 'limit', price: price(bid - 10), qty: String(qty), timeInForce: 'ioc' })).status,
  ).toBe(201);
  const tp = await get(alice, oco.body.id);
  const stop = await get(alice, sl.id);
  expect(stop.status).toMatch(/filled|expired/);
  expect(Number(stop.filledQty)).toBeGreaterThan(0);
  expect(tp).toMatchObject({ status: 'cancelled', reason: 'linked_order_triggered', filledQty: '0' });
  // Cancelling a filled OCO's leg answers 409; the account holds nothing for it.
  expect((await t.call('POST', '/trading/cancel', { key: alice, body: { orderId: tp.id } })).status).toBe(409);
  const spy = (await t.ok('POST', '/trading/account', alice, { venue: 'paper' })).body.balances.find((x: any) => x.asset === 'SPY');
  expect(spy.held).toBe('0');
});

test('cancelling a bracket entry that filled nothing cancels its held legs with it', async () => {
  const b = await book(alice, 'ETH/USD');
  const bid = cents(b.bids[0].price);
  const res = await t.ok('POST', '/trading/order', alice, {
    symbol: 'ETH/USD',
    side: 'buy',
    type: 'limit',
    price: price(bid - 1000),
    qty: '0.1',
    orderClass: 'oto',
    stopLoss: { stopPrice: price(bid - 2000) },
  });
  expect(res.body.legs[0]).toMatchObject({ status: 'held', type: 'stop' });
  expect((await t.ok('GET', '/trading/orders?status=open&symbol=ETH%2FUSD', alice)).body.orders.map((o: any) => o.id)).toContain(res.body.legs[0].id);
  // Cancelling the held leg takes the bracket: the entry too.
  const cancelled = (await t.ok('POST', '/trading/cancel', alice, { orderId: res.body.legs[0].id })).body.orders;
  expect(cancelled[0]).toMatchObject({ id: res.body.legs[0].id, status: 'cancelled' });
  expect(await get(alice, res.body.id)).toMatchObject({ status: 'cancelled', reason: 'cancelled_by_user' });
});

test('a trailing stop follows the last price up and fires when it falls back by its trail', async () => {
  const b = await book(alice, 'AAPL');
  const last = cents(b.last);
  expect((await order(alice, { symbol: 'AAPL', side: 'buy', qty: '5' })).status).toBe(201);
  const placedAt = cents((await book(alice, 'AAPL')).last);
  const ts = await t.ok('POST', '/trading/order', alice, { symbol: 'AAPL', side: 'sell', type: 'trailing_stop', trailPrice: '0.10', qty: '5' });
  expect(ts.body).toMatchObject({ type: 'trailing_stop', status: 'new', trailPrice: '0.1' });
  expect([cents(ts.body.hwm), cents(ts.body.stopPrice)]).toEqual([placedAt, placedAt - 10]);
  // Bob lifts the asks: the last price rises, and the stop with it.
  const asks = (await book(bob, 'AAPL')).asks.slice(0, 3);
  const qty = asks.reduce((s: number, l: any) => s + Number(l.qty), 0);
  await t.ok('POST', '/trading/order', bob, { symbol: 'AAPL', side: 'buy', qty: String(qty) });
  const high = cents((await book(bob, 'AAPL')).last);
  expect(high).toBeGreaterThan(placedAt);
  const moved = await get(alice, ts.body.id);
  expect(moved.status).toBe('new');
  expect([cents(moved.hwm), cents(moved.stopPrice)]).toEqual([high, high - 10]);
  // Bob sells the best two bids, more than 0.10 below the high: the stop fires and sells at market into the rest.
  const bids = (await book(bob, 'AAPL')).bids.slice(0, 2);
  expect(cents(bids[1].price)).toBeLessThanOrEqual(high - 10);
  const down = bids.reduce((s: number, l: any) => s + Number(l.qty), 0);
  await t.ok('POST', '/trading/order', bob, {
    symbol: 'AAPL',
    side: 'sell',
    type: 'limit',
    price: bids[1].price,
    qty: String(down),
    timeInForce: 'ioc',
  });
  const fired = await get(alice, ts.body.id);
  expect(fired).toMatchObject({ status: 'filled', filledQty: '5' });
  expect(cents(fired.stopPrice)).toBe(high - 10);
  expect(cents(fired.avgFillPrice)).toBeLessThanOrEqual(high - 10);
  expect(last).toBeGreaterThan(0);
});

test("an agent's bracket is refused at its limit when a leg is over it, and nothing is written", async () => {
  const b = await book(agentKey, 'AAPL');
  const ask = cents(b.asks[0].price);
  const qty = 10; // about 1,900 USD: under the agent's 2,000 per order
  const body = {
    symbol: 'AAPL',
    side: 'buy',
    type: 'limit',
    price: price(ask),
    qty: String(qty),
    orderClass: 'bracket',
    stopLoss: { stopPrice: price(ask - 1000) },
    clientOrderId: 'agent-br',
  };
  // The take-profit at a price where 10 shares are worth over 2,000.
  const over = await order(agentKey, { ...body, takeProfit: { price: price(Math.ceil(200_00 * 1.01)) } });
  expect(over.status).toBe(403);
  expect(over.body.error.code).toBe('trading_limit_exceeded');
  expect(over.body.error.message).toMatch(/maxNotionalPerOrder.*takeProfit/);
  expect((await t.ok('GET', '/trading/orders?limit=5', agentKey)).body.orders).toEqual([]);
  const usage = (await t.ok('GET', '/trading/limits', agentKey)).body.limits[0].usedToday;
  expect(Number(usage)).toBe(0);
  // Within the limit on every leg, the same bracket is placed.
  const ok = await order(agentKey, { ...body, takeProfit: { price: price(ask + 100) } });
  expect(ok.status).toBe(201);
  expect(ok.body.legs).toHaveLength(2);
});

test('a bracket with a trailing stop-loss: the leg goes live a trail below the last price, follows it up, and fires when it falls back', async () => {
  const last = cents((await book(alice, 'ETH/USD')).last);
  const res = await order(alice, {
    symbol: 'ETH/USD',
    side: 'buy',
    type: 'market',
    qty: '0.5',
    orderClass: 'bracket',
    takeProfit: { price: price(last + 50_00) },
    stopLoss: { trailPrice: '0.01' },
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'filled', filledQty: '0.5' });
  const tp = res.body.legs.find((l: any) => l.type === 'limit');
  const sl = res.body.legs.find((l: any) => l.type === 'trailing_stop');
  const filledAt = cents((await book(alice, 'ETH/USD')).last);
  expect(sl).toMatchObject({ side: 'sell', status: 'new', qty: '0.5', trailPrice: '0.01', linkedOrderId: tp.id, parentOrderId: res.body.id });
  expect([cents(sl.hwm), cents(sl.stopPrice)]).toEqual([filledAt, filledAt - 1]);
  // Bob lifts two ask levels: the leg's water mark and trigger follow the last price up.
  const asks = (await book(bob, 'ETH/USD')).asks.slice(0, 2);
  await t.ok('POST', '/trading/order', bob, {
    symbol: 'ETH/USD',
    side: 'buy',
    qty: asks.reduce((n: number, l: any) => n + Number(l.qty), 0).toFixed(6),
  });
  const high = cents((await book(bob, 'ETH/USD')).last);
  expect(high).toBeGreaterThan(filledAt);
  const moved = await get(alice, sl.id);
  expect([moved.status, cents(moved.hwm), cents(moved.stopPrice)]).toEqual(['new', high, high - 1]);
  // A trade at the best bid, below the trigger: the leg fires (a market sell) and the take-profit is cancelled.
  const bid = (await book(bob, 'ETH/USD')).bids[0];
  expect(cents(bid.price)).toBeLessThanOrEqual(high - 1);
  expect((await order(bob, { symbol: 'ETH/USD', side: 'sell', type: 'limit', price: bid.price, qty: '0.01', timeInForce: 'ioc' })).status).toBe(201);
  expect(await get(alice, sl.id)).toMatchObject({ status: 'filled', filledQty: '0.5' });
  expect(await get(alice, tp.id)).toMatchObject({ status: 'cancelled', reason: 'linked_order_triggered', filledQty: '0' });
  // The percent form as an OTO's exit: a trail of 0.5% from the last price when it goes live.
  const oto = await t.ok('POST', '/trading/order', alice, {
    symbol: 'ETH/USD',
    side: 'buy',
    qty: '0.1',
    orderClass: 'oto',
    stopLoss: { trailPercent: '0.5' },
  });
  const leg = oto.body.legs[0];
  expect(leg).toMatchObject({ type: 'trailing_stop', status: 'new', trailPercent: '0.5', trailPrice: null });
  expect(cents(leg.stopPrice)).toBe(cents(leg.hwm) - Math.ceil(cents(leg.hwm) * 0.005));
});

/** The agent's limits as the person sets them (docs/trading.md, "Agents' limits"). */
const limit = (body: Record<string, unknown>) =>
  t.ok('PUT', `/trading/limits/${agentId}`, person, {
    maxNotionalPerOrder: '2000',
    maxNotionalPerDay: null,
    symbols: null,
    paperOnly: true,
    ...body,
  });

test("an agent's bracket legs are checked against its limits again when they go live: the leg over a tightened cap is rejected, its partner cancelled, nothing executed", async () => {
  const b = await book(agentKey, 'BTC/USD');
  const bid = cents(b.bids[0].price);
  const ask = cents(b.asks[0].price);
  expect(ask - bid).toBeGreaterThan(1);
  // The entry is the best bid (between the market maker's bid and ask); its exits 100 USD either side.
  const entry = bid + 1;
  const from = await lastSeq(agentKey);
  const placed = await order(agentKey, limitBracket('BTC/USD', entry, '0.02', 100_00, 100_00));
  expect(placed.status).toBe(201);
  expect(placed.body.status).toBe('new');
  const tp = placed.body.legs.find((l: any) => l.type === 'limit');
  const sl = placed.body.legs.find((l: any) => l.type === 'stop');
  // Tightened while the legs wait: 0.02 × the entry's price, under the take-profit's notional, over the stop-loss's.
  const cap = (Math.round(entry * 0.02) / 100).toFixed(2);
  await limit({ maxNotionalPerOrder: cap });
  // Bob sells into the entry: it fills, and its legs go live, each asked the limits as it does.
  await t.ok('POST', '/trading/order', bob, { symbol: 'BTC/USD', side: 'buy', qty: '0.05' });
  const sold = await order(bob, { symbol: 'BTC/USD', side: 'sell', type: 'limit', price: price(entry), qty: '0.02', timeInForce: 'ioc' });
  expect(sold.body).toMatchObject({ status: 'filled', filledQty: '0.02' });
  expect(await get(agentKey, placed.body.id)).toMatchObject({ status: 'filled', filledQty: '0.02' });
  expect(await get(agentKey, tp.id)).toMatchObject({ status: 'rejected', reason: 'trading_limit_exceeded:maxNotionalPerOrder', filledQty: '0' });
  expect(await get(agentKey, sl.id)).toMatchObject({ status: 'cancelled', reason: 'linked_order_closed', filledQty: '0' });
  // The account keeps what the entry bought, held by nothing.
  const btc = (await t.ok('POST', '/trading/account', agentKey, { venue: 'paper' })).body.balances.find((x: any) => x.asset === 'BTC');
  expect(btc).toMatchObject({ total: '0.02', held: '0' });
  const evs = (await events(agentKey, from)).filter((e: any) => [tp.id, sl.id].includes(e.order.id) && e.type !== 'accepted');
  expect(evs.map((e: any) => `${e.type}:${e.order.id === tp.id ? 'tp' : 'sl'}:${e.order.reason ?? ''}`)).toEqual([
    'activated:tp:',
    'activated:sl:',
    'rejected:tp:trading_limit_exceeded:maxNotionalPerOrder',
    'cancelled:sl:linked_order_closed',
  ]);
  await limit({});
});

test("an agent's trailing stop is checked against its limits again when it triggers: outside them it is rejected, never executed", async () => {
  // Bob buys (the last price rises to an ask): the stop's high water mark starts there, a cent above its trigger.
  await t.ok('POST', '/trading/order', bob, { symbol: 'BTC/USD', side: 'buy', qty: '0.05' });
  // A sell of the 0.02 BTC the agent's bracket bought, a cent below the high water mark.
  const stop = { symbol: 'BTC/USD', side: 'sell', type: 'trailing_stop', trailPrice: '0.01', qty: '0.02' };
  const ts = await t.ok('POST', '/trading/order', agentKey, stop);
  expect(ts.body.status).toBe('new');
  const from = await lastSeq(agentKey);
  // BTC/USD taken off the agent's symbols while the stop waits.
  await limit({ symbols: ['AAPL', 'SPY'] });
  const bid = (await book(bob, 'BTC/USD')).bids[0];
  expect((await order(bob, { symbol: 'BTC/USD', side: 'sell', type: 'limit', price: bid.price, qty: '0.01', timeInForce: 'ioc' })).status).toBe(201);
  expect(await get(agentKey, ts.body.id)).toMatchObject({ status: 'rejected', reason: 'trading_limit_exceeded:symbols', filledQty: '0' });
  const btc = (await t.ok('POST', '/trading/account', agentKey, { venue: 'paper' })).body.balances.find((x: any) => x.asset === 'BTC');
  expect(btc).toMatchObject({ total: '0.02', held: '0' });
  expect((await events(agentKey, from)).map((e: any) => [e.type, e.order.id, e.order.reason])).toEqual([
    ['rejected', ts.body.id, 'trading_limit_exceeded:symbols'],
  ]);
  // Within its limits again, the same stop triggers and sells.
  await limit({});
  await t.ok('POST', '/trading/order', bob, { symbol: 'BTC/USD', side: 'buy', qty: '0.05' });
  const again = await t.ok('POST', '/trading/order', agentKey, stop);
  const next = (await book(bob, 'BTC/USD')).bids[0];
  expect((await order(bob, { symbol: 'BTC/USD', side: 'sell', type: 'limit', price: next.price, qty: '0.01', timeInForce: 'ioc' })).status).toBe(201);
  expect(await get(agentKey, again.body.id)).toMatchObject({ status: 'filled', filledQty: '0.02' });
});

test('the rules of linked orders and trailing stops name the field', async () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ type: 'trailing_stop', qty: '1' }, /trailPrice: a trailing_stop order needs exactly one/],
    [{ type: 'trailing_stop', qty: '1', trailPercent: '100' }, /trailPercent: must be a percent below 100/],
    [{ type: 'limit', price: '100', qty: '1', trailPrice: '1' }, /trailPrice: only a trailing_stop order takes a trail/],
    [{ orderClass: 'bracket', qty: '1', takeProfit: { price: '300' } }, /stopLoss: a bracket order needs both/],
    [
      { orderClass: 'bracket', type: 'stop', stopPrice: '1', qty: '1', takeProfit: { price: '300' }, stopLoss: { stopPrice: '1' } },
      /type: the entry/,
    ],
    [{ orderClass: 'oco', type: 'limit', price: '1', qty: '1', takeProfit: { price: '300' }, stopLoss: { stopPrice: '1' } }, /price: an oco order/],
    [{ orderClass: 'bracket', qty: '1', takeProfit: { price: '100' }, stopLoss: { stopPrice: '200' } }, /takeProfit.price: must be above stopLoss/],
    [{ qty: '1', takeProfit: { price: '300' } }, /takeProfit: give orderClass/],
    [{ orderClass: 'oto', notional: '100', stopLoss: { stopPrice: '1' } }, /notional: a oto order is for a quantity/],
    [{ orderClass: 'oto', qty: '1', timeInForce: 'ioc', stopLoss: { stopPrice: '1' } }, /timeInForce: a oto order is day or gtc/],
    // A trailing stop-loss has the standalone trailing stop's rules.
    [{ orderClass: 'oto', qty: '1', stopLoss: { price: '90' } }, /stopLoss.stopPrice: a stop-loss leg needs a stop price, or a trail/],
    [
      { orderClass: 'oto', qty: '1', stopLoss: { stopPrice: '90', trailPrice: '1' } },
      /stopLoss.trailPrice: give a stop-loss leg either a stopPrice or a trail/,
    ],
    [
      { orderClass: 'oto', qty: '1', stopLoss: { trailPrice: '1', trailPercent: '1' } },
      /stopLoss.trailPrice: a trailing stop-loss takes exactly one/,
    ],
    [
      { orderClass: 'bracket', qty: '1', takeProfit: { price: '300' }, stopLoss: { trailPercent: '100' } },
      /stopLoss.trailPercent: must be a percent below 100/,
    ],
    [
      { orderClass: 'oto', qty: '1', stopLoss: { trailPercent: '0.125' } },
      /stopLoss.trailPercent: must be a percent below 100 with at most 2 decimals/,
    ],
    [{ orderClass: 'oto', qty: '1', stopLoss: { trailPrice: '1', price: '90' } }, /stopLoss.price: a trailing stop-loss has no limit price/],
    [{ orderClass: 'oto', qty: '1', stopLoss: { trailPrice: '0.001' } }, /stopLoss.trailPrice: /],
    [{ orderClass: 'oto', qty: '1', stopLoss: { trailPrice: '-1' } }, /stopLoss.trailPrice: must be a positive decimal/],
  ];
  for (const [extra, message] of cases) {
    const res = await order(alice, { symbol: 'AAPL', side: 'buy', ...extra });
    expect({ status: res.status, message: res.body.error?.message }).toEqual({ status: 400, message: expect.stringMatching(message) });
  }
});

test("opg and cls orders wait for the session's opening and closing auctions; the clock says when they come", async () => {
  const clock = (await t.ok('GET', '/trading/clock', alice)).body;
  expect(clock).toMatchObject({ isOpen: true, session: 'continuous' });
  const nextOpen = Date.parse(clock.nextOpen);
  const nextClose = Date.parse(clock.nextClose);
  expect(Math.abs(nextClose - nextOpen)).toBe(2000);
  expect((await order(alice, { symbol: 'BTC/USD', side: 'buy', qty: '0.01', timeInForce: 'opg' })).body.error.message).toMatch(
    /timeInForce: BTC\/USD trades around the clock/,
  );
  expect((await order(alice, { symbol: 'SPY', side: 'buy', type: 'stop', stopPrice: '1', qty: '1', timeInForce: 'cls' })).status).toBe(400);

  const from = await lastSeq(alice);
  const opg = (await t.ok('POST', '/trading/order', alice, { symbol: 'SPY', side: 'buy', qty: '1', timeInForce: 'opg' })).body;
  expect(opg).toMatchObject({ status: 'new', timeInForce: 'opg', filledQty: '0' });
  const bid = cents((await book(alice, 'SPY')).bids[0].price);
  const cls = (
    await t.ok('POST', '/trading/order', alice, { symbol: 'SPY', side: 'buy', type: 'limit', price: price(bid - 500), qty: '1', timeInForce: 'cls' })
  ).body;
  // Nothing trades before its auction, whatever crosses the book meanwhile.
  expect((await get(alice, opg.id)).status).toBe('new');
  // Past the next open and the next close, the book's next use runs their auctions, in order.
  const settle = async (id: string) => {
    for (let i = 0; i < 100; i++) {
      await book(alice, 'SPY');
      const o = await get(alice, id);
      if (o.status !== 'new') return o;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${id} still waits`);
  };
  expect(await settle(opg.id)).toMatchObject({ status: 'filled', filledQty: '1' });
  expect(Date.now()).toBeGreaterThanOrEqual(Math.min(nextOpen, nextClose));
  // The closing auction: a limit far below the book finds nothing and expires.
  expect(await settle(cls.id)).toMatchObject({ status: 'expired', reason: 'auction_ended', filledQty: '0' });
  const types = (await events(alice, from)).filter((e: any) => e.order?.id === opg.id).map((e: any) => e.type);
  expect(types).toEqual(['accepted', ...types.slice(1, -1), 'filled']);
});
