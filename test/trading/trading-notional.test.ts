import { startTestStack, type TestStack } from '../support/stack';

// Notional orders (an amount of the quote asset instead of a quantity) and fractional quantities on
// the paper venue, from outside (docs/trading.md, "Notional orders"). The market maker's reference
// does not step during the suite, so the book only moves with the orders here.
let t: TestStack;
let alice: string;
let bob: string;

/** A decimal string as integer units of 10⁻⁹ (exact). */
function units(s: string): bigint {
  const neg = s.startsWith('-');
  const [i, f = ''] = (neg ? s.slice(1) : s).split('.');
  const v = BigInt(i!) * 10n ** 9n + BigInt((f + '000000000').slice(0, 9));
  return neg ? -v : v;
}

const order = (key: string, body: Record<string, unknown>) => t.call('POST', '/trading/order', { key, body });
const book = async (key: string, symbol: string) => (await t.ok('GET', `/trading/book?symbol=${encodeURIComponent(symbol)}&depth=10`, key)).body;
const balance = async (key: string, asset: string) =>
  (await t.ok('POST', '/trading/account', key, { venue: 'paper' })).body.balances.find((b: any) => b.asset === asset) ?? { total: '0', held: '0' };
const fillsOf = async (key: string, orderId: string) => (await t.ok('GET', `/trading/fills?orderId=${orderId}&limit=200`, key)).body.fills;
const LOT = units('0.000001');

beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_PAPER_CASH: '100000', SVC_TRADING_ALPACA_URL: 'off' });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

test('a notional buy spends at most its notional, to less than one lot at the last price; fees come on top', async () => {
  const cashBefore = units((await balance(alice, 'USD')).total);
  const res = await order(alice, { symbol: 'BTC/USD', side: 'buy', notional: '1234.56', clientOrderId: 'n-1' });
  expect(res.status).toBe(201);
  const o = res.body;
  expect(o).toMatchObject({ type: 'market', status: 'filled', notional: '1234.56', reason: null });
  expect(o.qty).toBe(o.filledQty);
  const fills = await fillsOf(alice, o.id);
  const spent = fills.reduce((s: bigint, f: any) => s + units(f.notional), 0n);
  const fees = fills.reduce((s: bigint, f: any) => s + units(f.fee), 0n);
  expect(units(o.filledNotional)).toBe(spent);
  expect(spent <= units('1234.56')).toBe(true);
  // What is left would not buy one more lot at the highest price it paid.
  const worst = fills.reduce((m: bigint, f: any) => (units(f.price) > m ? units(f.price) : m), 0n);
  expect(units('1234.56') - spent < (worst * LOT) / 10n ** 9n).toBe(true);
  expect(units(o.fees)).toBe(fees);
  expect(units((await balance(alice, 'USD')).total)).toBe(cashBefore - spent - fees);
  expect(units((await balance(alice, 'BTC')).total)).toBe(units(o.filledQty));
});

test('a large notional walks the book level by level and stops within a lot of its amount', async () => {
  const b = await book(alice, 'ETH/USD');
  // More than the best two levels are worth.
  const two = b.asks.slice(0, 2).reduce((s: number, l: any) => s + Number(l.price) * Number(l.qty), 0);
  const notional = (Math.ceil(two) + 500).toFixed(2);
  const o = (await t.ok('POST', '/trading/order', alice, { symbol: 'ETH/USD', side: 'buy', notional })).body;
  expect(o.status).toBe('filled');
  const fills = await fillsOf(alice, o.id);
  expect(new Set(fills.map((f: any) => f.price)).size).toBeGreaterThanOrEqual(3);
  const spent = units(o.filledNotional);
  const last = units(fills[0].price); // newest first: the highest price reached
  expect(spent <= units(notional)).toBe(true);
  expect(units(notional) - spent < (last * LOT) / 10n ** 9n).toBe(true);
});

test('a notional the book cannot absorb buys what the book has and expires (no_liquidity), its qty what it bought', async () => {
  const asks = (await book(alice, 'BTC/USD')).asks;
  const all = asks.reduce((s: number, l: any) => s + Number(l.price) * Number(l.qty), 0);
  const o = (await t.ok('POST', '/trading/order', alice, { symbol: 'BTC/USD', side: 'buy', notional: (Math.ceil(all) + 1000).toFixed(2) })).body;
  expect(o).toMatchObject({ status: 'expired', reason: 'no_liquidity' });
  expect(o.qty).toBe(o.filledQty);
  expect(units(o.filledQty)).toBe(asks.reduce((s: bigint, l: any) => s + units(l.qty), 0n));
  expect(Number(o.filledNotional)).toBeLessThan(all + 1);
});

test('a notional sell sells what its notional is worth at the bids, never more', async () => {
  const held = units((await balance(alice, 'BTC')).total);
  const o = (await t.ok('POST', '/trading/order', alice, { symbol: 'BTC/USD', side: 'sell', notional: '300' })).body;
  expect(o).toMatchObject({ side: 'sell', status: 'filled', notional: '300' });
  expect(units(o.filledNotional) <= units('300')).toBe(true);
  expect(units(o.filledNotional) > units('299')).toBe(true);
  expect(units((await balance(alice, 'BTC')).total)).toBe(held - units(o.filledQty));
});

test('fractional shares: a market buy of 0.5 AAPL, a resting limit of 0.25 SPY holding exactly its cost', async () => {
  const o = (await t.ok('POST', '/trading/order', bob, { symbol: 'AAPL', side: 'buy', qty: '0.5' })).body;
  expect(o).toMatchObject({ qty: '0.5', filledQty: '0.5', status: 'filled', notional: null });
  expect((await balance(bob, 'AAPL')).total).toBe('0.5');
  const before = units((await balance(bob, 'USD')).held);
  const rest = (await t.ok('POST', '/trading/order', bob, { symbol: 'SPY', side: 'buy', type: 'limit', qty: '0.25', price: '400.00' })).body;
  expect(rest).toMatchObject({ status: 'new', qty: '0.25' });
  // 0.25 × 400 = 100, plus the larger fee (10 bps).
  expect(units((await balance(bob, 'USD')).held) - before).toBe(units('100.1'));
  expect((await t.ok('POST', '/trading/cancel', bob, { orderId: rest.id })).body.orders[0].status).toBe('cancelled');
  // A notional buy of an equity: fractional too.
  const n = (await t.ok('POST', '/trading/order', bob, { symbol: 'AAPL', side: 'buy', notional: '50' })).body;
  expect(n.status).toBe('filled');
  expect(n.qty).toMatch(/^0\.\d{1,6}$/);
});

test('a retry with the same clientOrderId and notional answers the original; another notional under it answers 409', async () => {
  const first = await order(bob, { symbol: 'ETH/USD', side: 'buy', notional: '75.5', clientOrderId: 'n-retry' });
  expect(first.status).toBe(201);
  const again = await order(bob, { symbol: 'ETH/USD', side: 'buy', notional: 75.5, clientOrderId: 'n-retry' });
  expect([again.status, again.body.id, again.body.filledQty]).toEqual([200, first.body.id, first.body.filledQty]);
  const other = await order(bob, { symbol: 'ETH/USD', side: 'buy', notional: '75.51', clientOrderId: 'n-retry' });
  expect([other.status, other.body.error.code]).toEqual([409, 'client_order_id_conflict']);
  // A quantity order under the same id is another order too, even for the quantity the notional bought.
  const qty = await order(bob, { symbol: 'ETH/USD', side: 'buy', qty: first.body.qty, clientOrderId: 'n-retry' });
  expect([qty.status, qty.body.error.code]).toEqual([409, 'client_order_id_conflict']);
});

test('previewing a notional order shows the quantity it would buy now, and places nothing', async () => {
  const orders = (await t.ok('GET', '/trading/orders?limit=200', bob)).body.orders.length;
  const p = (await t.ok('POST', '/trading/orders/preview', bob, { symbol: 'SPY', side: 'buy', notional: '1000' })).body;
  expect(Number(p.notional)).toBeLessThanOrEqual(1000);
  expect(Number(p.notional)).toBeGreaterThan(999);
  expect(Number(p.qty)).toBeGreaterThan(1);
  expect(p.balanceOk).toBe(true);
  const bad = await t.call('POST', '/trading/orders/preview', {
    key: bob,
    body: { symbol: 'SPY', side: 'buy', type: 'limit', price: '1', notional: '5' },
  });
  expect([bad.status, bad.body.error.message]).toEqual([400, expect.stringMatching(/^body\.notional: only a market order takes a notional/)]);
  expect((await t.ok('GET', '/trading/orders?limit=200', bob)).body.orders.length).toBe(orders);
});
