import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

// The paper venue from outside: the book, market/limit/stop orders, time in force, idempotent
// client order ids, bad input, another tenant's orders. The market maker's reference price does
// not step during the suite (an hour per step), so the book only moves with the orders here.
let t: TestStack;
let alice: string;
let bob: string;

async function user(name: string): Promise<string> {
  return (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key;
}

const order = (key: string, body: Record<string, unknown>) => t.call('POST', '/trading/order', { key, body });
const account = async (key: string) => (await t.ok('POST', '/trading/account', key, { venue: 'paper' })).body;
const book = async (key: string, symbol: string) => (await t.ok('GET', `/trading/book?symbol=${encodeURIComponent(symbol)}&depth=10`, key)).body;
const cash = async (key: string) => (await account(key)).balances.find((b: any) => b.asset === 'USD');

beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_PAPER_CASH: '100000', SVC_TRADING_ALPACA_URL: 'off' });
  alice = await user('Alice');
  bob = await user('Bob');
}, 60_000);
afterAll(() => t?.stop());

test('venues are listed with their capabilities and instruments', async () => {
  const { venues } = (await t.ok('GET', '/trading/venues', alice)).body;
  expect(venues.map((v: any) => v.id)).toEqual(['paper']);
  const paper = venues[0];
  expect(paper.mode).toBe('paper');
  expect(paper.capabilities.orderTypes).toEqual(['market', 'limit', 'stop', 'stop_limit', 'trailing_stop']);
  expect(paper.capabilities.timeInForce).toEqual(['day', 'gtc', 'ioc', 'fok', 'opg', 'cls']);
  expect(paper.instruments.find((i: any) => i.symbol === 'BTC/USD')).toEqual({
    symbol: 'BTC/USD',
    base: 'BTC',
    quote: 'USD',
    tickSize: '0.01',
    lotSize: '0.000001',
  });
});

test('a new paper account starts with the configured cash', async () => {
  const a = await account(alice);
  expect(a.cash).toBe('100000');
  expect(a.equity).toBe('100000');
  expect(a.positions).toEqual([]);
  expect(a.openOrders).toEqual([]);
});

test('a market order pays the spread, and a large one walks the book in several fills', async () => {
  const b = await book(alice, 'ETH/USD');
  expect(b.asks.length).toBeGreaterThanOrEqual(5);
  expect(b.bids.length).toBeGreaterThanOrEqual(5);
  const bestAsk = Number(b.asks[0].price);
  const bestBid = Number(b.bids[0].price);
  expect(bestAsk).toBeGreaterThan(Number(b.reference));
  expect(bestBid).toBeLessThan(Number(b.reference));
  // More than the first two levels: fills at three prices or more.
  const qty = Number(b.asks[0].qty) + Number(b.asks[1].qty) + 0.5;
  const res = await order(alice, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: String(qty), clientOrderId: 'walk-1' });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'filled', filledQty: String(qty), type: 'market', venue: 'paper' });
  expect(Number(res.body.avgFillPrice)).toBeGreaterThan(bestAsk);
  const fills = (await t.ok('GET', `/trading/fills?orderId=${res.body.id}`, alice)).body.fills;
  expect(fills.length).toBeGreaterThanOrEqual(3);
  const prices = fills.map((f: any) => Number(f.price)).reverse();
  expect(prices[0]).toBe(bestAsk);
  expect(prices).toEqual([...prices].sort((x, y) => x - y));
  expect(fills.every((f: any) => f.liquidity === 'taker' && Number(f.fee) > 0)).toBe(true);
  // Cash went down by notional + fees exactly; the position is the quantity.
  const notional = fills.reduce((s: number, f: any) => s + Number(f.notional), 0);
  const fees = fills.reduce((s: number, f: any) => s + Number(f.fee), 0);
  const a = await account(alice);
  expect(Number(a.cash)).toBeCloseTo(100000 - notional - fees, 6);
  expect(a.positions).toEqual([expect.objectContaining({ symbol: 'ETH/USD', qty: String(qty) })]);
  // The book lost those levels.
  expect(Number((await book(alice, 'ETH/USD')).asks[0].price)).toBeGreaterThan(Number(b.asks[1].price));
});

test('a limit order rests, holds its cash, and is cancelled', async () => {
  const before = await cash(bob);
  const b = await book(bob, 'BTC/USD');
  const price = (Number(b.bids[0].price) - 100).toFixed(2);
  const res = await order(bob, { symbol: 'BTC/USD', side: 'buy', type: 'limit', qty: '0.1', price, timeInForce: 'gtc' });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'new', filledQty: '0' });
  expect(Number(res.body.price)).toBe(Number(price));
  const held = await cash(bob);
  expect(Number(held.held)).toBeCloseTo(Number(price) * 0.1 * 1.001, 6);
  expect(held.total).toBe(before.total);
  expect((await account(bob)).openOrders.map((o: any) => o.id)).toEqual([res.body.id]);
  // It rests in the book at its price.
  expect((await book(bob, 'BTC/USD')).bids.some((l: any) => Number(l.price) === Number(price))).toBe(true);
  const cancelled = await t.ok('POST', '/trading/cancel', bob, { orderId: res.body.id });
  expect(cancelled.body.orders).toEqual([expect.objectContaining({ id: res.body.id, status: 'cancelled', reason: 'cancelled_by_user' })]);
  expect(await cash(bob)).toEqual(before);
  expect((await t.ok('GET', `/trading/orders/${res.body.id}`, bob)).body.status).toBe('cancelled');
  // Cancelling again: it is no longer open.
  const again = await t.call('POST', '/trading/cancel', { key: bob, body: { orderId: res.body.id } });
  expect([again.status, again.body.error.code]).toEqual([409, 'order_not_open']);
});

test('ioc fills what it can now and expires the rest; fok fills all or nothing', async () => {
  const b = await book(bob, 'AAPL');
  const ask = b.asks[0];
  // ioc at the best ask for more than it holds: part filled, the rest expired.
  const ioc = await order(bob, {
    symbol: 'AAPL',
    side: 'buy',
    type: 'limit',
    price: ask.price,
    qty: String(Number(ask.qty) + 5),
    timeInForce: 'ioc',
  });
  expect(ioc.body).toMatchObject({ status: 'expired', filledQty: ask.qty, reason: 'ioc_remainder' });
  // ioc below the ask: nothing, expired.
  const none = await order(bob, { symbol: 'AAPL', side: 'buy', type: 'limit', price: b.bids[0].price, qty: '1', timeInForce: 'ioc' });
  expect(none.body).toMatchObject({ status: 'expired', filledQty: '0' });
  // fok for more than the book offers up to its price: nothing at all.
  const b2 = await book(bob, 'AAPL');
  const fokTooBig = await order(bob, {
    symbol: 'AAPL',
    side: 'buy',
    type: 'limit',
    price: b2.asks[0].price,
    qty: String(Number(b2.asks[0].qty) + 1),
    timeInForce: 'fok',
  });
  expect(fokTooBig.body).toMatchObject({ status: 'expired', filledQty: '0', reason: 'fok_not_filled' });
  expect((await t.ok('GET', `/trading/fills?orderId=${fokTooBig.body.id}`, bob)).body.fills).toEqual([]);
  // fok within the first level: filled.
  const fok = await order(bob, { symbol: 'AAPL', side: 'buy', type: 'limit', price: b2.asks[0].price, qty: '2', timeInForce: 'fok' });
  expect(fok.body).toMatchObject({ status: 'filled', filledQty: '2' });
});

test('a resting limit order is filled by a later crossing order (maker and taker)', async () => {
  const b = await book(alice, 'SPY');
  // Inside the spread, so it is the best ask.
  const price = (Number(b.asks[0].price) - 0.01).toFixed(2);
  const bobSells = await order(bob, { symbol: 'SPY', side: 'buy', type: 'market', qty: '3' });
  expect(bobSells.body.status).toBe('filled');
  const ask = await order(bob, { symbol: 'SPY', side: 'sell', type: 'limit', price, qty: '3' });
  expect(ask.body.status).toBe('new');
  const buy = await order(alice, { symbol: 'SPY', side: 'buy', type: 'limit', price, qty: '2' });
  expect(buy.body).toMatchObject({ status: 'filled', avgFillPrice: String(Number(price)) });
  const maker = (await t.ok('GET', `/trading/orders/${ask.body.id}`, bob)).body;
  expect(maker).toMatchObject({ status: 'partially_filled', filledQty: '2' });
  const makerFills = (await t.ok('GET', `/trading/fills?orderId=${ask.body.id}`, bob)).body.fills;
  expect(makerFills).toEqual([expect.objectContaining({ liquidity: 'maker', qty: '2', price: String(Number(price)) })]);
});

test('a stop order waits for its trigger, then trades', async () => {
  // Alice holds ETH from the market order above. A sell stop just below the last price…
  const b = await book(alice, 'ETH/USD');
  const stopPrice = (Number(b.last) - 1).toFixed(2);
  const stop = await order(alice, { symbol: 'ETH/USD', side: 'sell', type: 'stop', stopPrice, qty: '0.5' });
  expect(stop.body).toMatchObject({ status: 'new', stopPrice: String(Number(stopPrice)), filledQty: '0' });
  // …held (a sell holds its quantity)…
  const eth = (await account(alice)).balances.find((x: any) => x.asset === 'ETH');
  expect(eth.held).toBe('0.5');
  // …fires when Bob's market sell walks the bids below it.
  expect((await order(bob, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '8' })).body.status).toBe('filled');
  const dump = await order(bob, { symbol: 'ETH/USD', side: 'sell', type: 'market', qty: '8' });
  expect(dump.body.status).toBe('filled');
  const fired = (await t.ok('GET', `/trading/orders/${stop.body.id}`, alice)).body;
  expect(fired).toMatchObject({ status: 'filled', filledQty: '0.5' });
  expect(Number(fired.avgFillPrice)).toBeLessThanOrEqual(Number(stopPrice));
});

test('a retry with the same clientOrderId answers the original order; another order under it answers 409', async () => {
  const body = { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1', clientOrderId: 'retry-me-1' };
  const first = await order(alice, body);
  expect(first.status).toBe(201);
  const again = await order(alice, { ...body, qty: 1 }); // the same order, qty as a number
  expect(again.status).toBe(200);
  expect(again.body.id).toBe(first.body.id);
  const fills = (await t.ok('GET', `/trading/fills?orderId=${first.body.id}`, alice)).body.fills;
  expect(fills.length).toBe(1);
  const other = await order(alice, { ...body, qty: '2' });
  expect(other.status).toBe(409);
  expect(other.body).toEqual(ERROR_BODY);
  expect(other.body.error.code).toBe('client_order_id_conflict');
  // Concurrent retries of one new order: one order.
  const same = { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1', clientOrderId: 'burst-1' };
  const burst = await Promise.all(Array.from({ length: 8 }, () => order(alice, same)));
  expect(new Set(burst.map((r) => r.body.id)).size).toBe(1);
  expect(burst.filter((r) => r.status === 201).length).toBe(1);
  // Another account may use the same client order id.
  expect((await order(bob, same)).status).toBe(201);
});

test('bad input is a clear 4xx and writes nothing', async () => {
  const before = await account(bob);
  const ordersBefore = (await t.ok('GET', '/trading/orders?limit=200', bob)).body.orders.length;
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ symbol: 'DOGE/USD', side: 'buy', qty: '1' }, 400, 'unknown_symbol'],
    [{ venue: 'nasdaq', symbol: 'AAPL', side: 'buy', qty: '1' }, 400, 'unknown_venue'],
    [{ symbol: 'AAPL', side: 'buy', qty: '0' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '-1' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: -1 }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: 'NaN' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '1e3' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '1.0000005' }, 400, 'invalid_request'], // off the lot size (fractional shares to 6 decimals)
    [{ symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: '100.001' }, 400, 'invalid_request'], // off the tick
    [{ symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1' }, 400, 'invalid_request'], // no price
    [{ symbol: 'AAPL', side: 'buy', type: 'market', qty: '1', price: '100' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'sell', type: 'stop', qty: '1' }, 400, 'invalid_request'], // stop without stopPrice
    [{ symbol: 'AAPL', side: 'sell', type: 'stop_limit', qty: '1', price: '100' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'hold', qty: '1' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '1', timeInForce: 'forever' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '1', clientOrderId: 'has space' }, 400, 'invalid_request'],
    // Notional orders: exactly one of qty and notional, market orders only, cents, not fok.
    [{ symbol: 'AAPL', side: 'buy' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', qty: '1', notional: '100' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', type: 'limit', price: '100', notional: '100' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', notional: '100.001' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', notional: '0' }, 400, 'invalid_request'],
    [{ symbol: 'AAPL', side: 'buy', notional: '10', timeInForce: 'fok' }, 400, 'invalid_request'],
    [{ symbol: 'BTC/USD', side: 'buy', notional: '0.01' }, 422, 'notional_too_small'],
    [{ symbol: 'SPY', side: 'buy', notional: '100' }, 422, 'self_trade_prevented'], // Bob's own sell is the best ask
    [{ symbol: 'ETH/USD', side: 'sell', notional: '100' }, 422, 'insufficient_balance'],
    // Larger than the balance: rejected with the reason.
    [{ symbol: 'BTC/USD', side: 'buy', type: 'market', qty: '10' }, 422, 'insufficient_balance'],
    [{ symbol: 'BTC/USD', side: 'buy', type: 'limit', qty: '10', price: '59000.00' }, 422, 'insufficient_balance'],
    [{ symbol: 'AAPL', side: 'sell', type: 'market', qty: '100000' }, 422, 'insufficient_balance'],
  ];
  for (const [body, status, code] of cases) {
    const res = await order(bob, body);
    expect([body, res.status, res.body?.error?.code]).toEqual([body, status, code]);
    expect(res.body).toEqual(ERROR_BODY);
  }
  const rejected = await order(bob, { symbol: 'BTC/USD', side: 'buy', type: 'market', qty: '10' });
  expect(rejected.body.error.message).toMatch(/USD/);
  // A negative quantity is named as what it is, not as a malformed number.
  for (const qty of ['-1', -1, '0']) expect((await order(bob, { symbol: 'AAPL', side: 'buy', qty })).body.error.message).toMatch(/qty.*positive/);
  // Each message names the field and the rule.
  const message = async (body: Record<string, unknown>) => (await order(bob, { symbol: 'AAPL', side: 'buy', ...body })).body.error.message;
  expect(await message({})).toMatch(/^body\.qty: an order needs a quantity \(qty\), or, for a market order, an amount .* \(notional\)/);
  expect(await message({ qty: '1', notional: '5' })).toMatch(/^body\.notional: give either qty or notional, not both/);
  expect(await message({ type: 'stop', stopPrice: '1', notional: '5' })).toMatch(/^body\.notional: only a market order takes a notional/);
  expect(await message({ notional: '5', timeInForce: 'fok' })).toMatch(/^body\.timeInForce: a notional order cannot be fok/);
  expect(await message({ notional: '5.005' })).toMatch(/^notional: must be an amount of USD with at most 2 decimals \(cents\)/);
  expect(await message({ qty: '0.0000001' })).toMatch(/^qty: must be a multiple of the lot size 0\.000001/);
  expect((await order(bob, { symbol: 'BTC/USD', side: 'buy', notional: '0.05' })).body.error.message).toMatch(
    /^notional: 0\.05 USD does not pay for one lot \(0\.000001 BTC\) at the best ask, \d+(\.\d+)?\.$/,
  );
  // A JSON number that overflowed is refused before it reaches the service.
  expect((await t.call('POST', '/trading/order', { key: bob, body: '{"symbol":"AAPL","side":"buy","qty":1e999}' })).status).toBe(400);
  expect((await t.ok('GET', '/trading/orders?limit=200', bob)).body.orders.length).toBe(ordersBefore);
  const after = await account(bob);
  expect(after.balances).toEqual(before.balances);
});

test("another account's order answers 404, to get and to cancel", async () => {
  const b = await book(alice, 'AAPL');
  const mine = await order(alice, { symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: (Number(b.bids[0].price) - 5).toFixed(2) });
  expect(mine.body.status).toBe('new');
  for (const [method, path, body] of [
    ['GET', `/trading/orders/${mine.body.id}`, undefined],
    ['POST', '/trading/cancel', { orderId: mine.body.id }],
    ['POST', '/trading/cancel', { clientOrderId: mine.body.clientOrderId }],
  ] as const) {
    const res = await t.call(method, path, { key: bob, body });
    expect([path, res.status, res.body.error.code]).toEqual([path, 404, 'not_found']);
  }
  expect((await t.call('GET', '/trading/orders/ord_00000000000000000000000000', { key: alice })).status).toBe(404);
  // Still open, and not in Bob's lists.
  expect((await t.ok('GET', `/trading/orders/${mine.body.id}`, alice)).body.status).toBe('new');
  expect((await t.ok('GET', '/trading/orders?limit=200', bob)).body.orders.map((o: any) => o.id)).not.toContain(mine.body.id);
  // Cancel all cancels only Alice's.
  const all = await t.ok('POST', '/trading/cancel', alice, { venue: 'paper', all: true });
  expect(all.body.orders.map((o: any) => o.id)).toContain(mine.body.id);
  expect((await account(alice)).openOrders).toEqual([]);
});

test('orders list with filters and cursor pagination', async () => {
  const key = await user('Lister');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await order(key, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' })).body.id);
  const b = await book(key, 'AAPL');
  const resting = await order(key, { symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: (Number(b.bids[0].price) - 3).toFixed(2) });
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: any = (await t.ok('GET', `/trading/orders?limit=2${cursor ? `&cursor=${cursor}` : ''}`, key)).body;
    expect(res.orders.length).toBeLessThanOrEqual(2);
    seen.push(...res.orders.map((o: any) => o.id));
    cursor = res.nextCursor;
  } while (cursor);
  expect(seen).toEqual([resting.body.id, ...ids.reverse()]);
  expect((await t.ok('GET', '/trading/orders?status=open', key)).body.orders.map((o: any) => o.id)).toEqual([resting.body.id]);
  expect((await t.ok('GET', '/trading/orders?status=filled&symbol=AAPL', key)).body.orders.length).toBe(5);
  expect((await t.ok('GET', '/trading/orders?side=sell', key)).body.orders).toEqual([]);
  const fills = (await t.ok('GET', '/trading/fills?limit=3', key)).body;
  expect(fills.fills.length).toBe(3);
  expect(fills.nextCursor).toEqual(expect.any(String));
  expect((await t.call('GET', '/trading/orders?cursor=bogus', { key })).status).toBe(400);
});

test('reset cancels open paper orders and restores the starting cash; an agent may not reset', async () => {
  const key = await user('Resetter');
  await order(key, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '3' });
  const b = await book(key, 'AAPL');
  const resting = await order(key, { symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: (Number(b.bids[0].price) - 3).toFixed(2) });
  expect(Number((await account(key)).cash)).toBeLessThan(100000);
  const reset = (await t.ok('POST', '/trading/reset', key, { venue: 'paper' })).body;
  expect(reset).toMatchObject({ cash: '100000', equity: '100000', positions: [], openOrders: [] });
  expect(reset.balances).toEqual([{ asset: 'USD', total: '100000', held: '0', available: '100000' }]);
  expect((await t.ok('GET', `/trading/orders/${resting.body.id}`, key)).body.status).toBe('cancelled');
});
