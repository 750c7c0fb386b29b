import { startTestStack, type TestStack } from '../support/stack';

// Market data, order tools and the portfolio of the paper venue (docs/trading.md). The market
// maker's reference price does not step during the suite (an hour per step), so prices move only
// with the orders here.
let t: TestStack;
let alice: string;
let bob: string;

async function user(name: string): Promise<string> {
  return (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key;
}
const order = async (key: string, body: Record<string, unknown>) => (await t.ok('POST', '/trading/order', key, body)).body;
const ETH = encodeURIComponent('ETH/USD');

beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_PAPER_CASH: '100000', SVC_TRADING_ALPACA_URL: 'off' });
  alice = await user('Alice');
  bob = await user('Bob');
}, 60_000);
afterAll(() => t?.stop());

test('symbols and their rules', async () => {
  const all = (await t.ok('GET', '/trading/symbols', alice)).body.symbols;
  expect(all.map((s: any) => s.symbol)).toEqual(['BTC/USD', 'ETH/USD', 'AAPL', 'SPY']);
  const equities = (await t.ok('GET', '/trading/symbols?assetClass=equity', alice)).body.symbols;
  expect(equities.map((s: any) => s.symbol)).toEqual(['AAPL', 'SPY']);
  expect((await t.ok('GET', '/trading/symbols?q=eth', alice)).body.symbols.map((s: any) => s.symbol)).toEqual(['ETH/USD']);
  const eth = (await t.ok('GET', `/trading/symbols/${ETH}`, alice)).body;
  expect(eth).toMatchObject({
    symbol: 'ETH/USD',
    base: 'ETH',
    quote: 'USD',
    assetClass: 'crypto',
    tickSize: '0.01',
    lotSize: '0.000001',
    minQty: '0.000001',
    minNotional: '0.01',
    fractional: true,
    makerFeeBps: 5,
    takerFeeBps: 10,
  });
  // Fractional shares too (docs/trading.md, "Notional orders").
  expect((await t.ok('GET', '/trading/symbols/AAPL', alice)).body).toMatchObject({ fractional: true, lotSize: '0.000001', minNotional: '0.01' });
  const bad = await t.call('GET', '/trading/symbols/NOPE', { key: alice });
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('unknown_symbol');
  expect((await t.call('GET', '/trading/symbols?venue=nowhere', { key: alice })).body.error.code).toBe('unknown_venue');
  expect((await t.call('GET', '/trading/symbols?assetClass=bonds', { key: alice })).status).toBe(400);
});

test('a quote, the clock and the fee schedule', async () => {
  const q = (await t.ok('GET', `/trading/quote?symbol=${ETH}`, alice)).body;
  expect(Number(q.ask)).toBeGreaterThan(Number(q.bid));
  expect(Number(q.spread)).toBeCloseTo(Number(q.ask) - Number(q.bid), 6);
  expect(q.spreadBps).toBeGreaterThan(0);
  expect(Number(q.mid)).toBeCloseTo((Number(q.ask) + Number(q.bid)) / 2, 6);
  expect((await t.call('GET', '/trading/quote', { key: alice })).status).toBe(400);
  const clock = (await t.ok('GET', '/trading/clock', alice)).body;
  expect(clock).toMatchObject({ venue: 'paper', isOpen: true, session: 'continuous', timezone: 'UTC' });
  expect(clock.nextDayRollover.endsWith('T00:00:00.000Z')).toBe(true);
  expect(Date.parse(clock.nextDayRollover)).toBeGreaterThan(Date.parse(clock.now));
  const fees = (await t.ok('GET', '/trading/fees', alice)).body;
  expect(fees).toMatchObject({ makerBps: 5, takerBps: 10, feesPaid30d: '0', fills30d: 0 });
});

test('a preview walks the book and places nothing; buying power is what the cash buys', async () => {
  const book = (await t.ok('GET', `/trading/book?symbol=${ETH}&depth=10`, alice)).body;
  const qty = Number(book.asks[0].qty) + 0.5;
  const p = (await t.ok('POST', '/trading/orders/preview', alice, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: String(qty) })).body;
  expect(p.fillableQty).toBe(String(qty));
  expect(p.restingQty).toBe('0');
  expect(Number(p.avgPrice)).toBeGreaterThan(Number(book.asks[0].price));
  expect(p.worstPrice).toBe(book.asks[1].price);
  expect(Number(p.fees)).toBeCloseTo(Number(p.notional) * 0.001, 6);
  expect(p.balanceOk).toBe(true);
  expect((await t.ok('GET', '/trading/orders', alice)).body.orders).toEqual([]);
  const tooBig = (await t.ok('POST', '/trading/orders/preview', alice, { symbol: 'BTC/USD', side: 'buy', type: 'limit', qty: '5', price: '60000' }))
    .body;
  expect(tooBig.balanceOk).toBe(false);
  expect(tooBig.warnings.join(' ')).toMatch(/does not cover/);
  const sell = (await t.ok('POST', '/trading/orders/preview', alice, { symbol: 'ETH/USD', side: 'sell', type: 'market', qty: '1' })).body;
  expect(sell.balanceOk).toBe(false);
  const off = await t.call('POST', '/trading/orders/preview', {
    key: alice,
    body: { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '0.0000001' },
  });
  expect(off.status).toBe(400);
  expect(off.body.error.message).toMatch(/lot size/);
  const bp = (await t.ok('GET', `/trading/buying-power?symbol=AAPL&side=buy&price=100`, alice)).body;
  expect(bp.maxQty).toBe('999.000999'); // 100000 / (100 × 1.001), to the lot
  expect((await t.ok('GET', `/trading/buying-power?symbol=AAPL&side=sell`, alice)).body.maxQty).toBe('0');
  expect((await t.call('GET', `/trading/buying-power?symbol=AAPL&price=0.001`, { key: alice })).status).toBe(400);
});

test('positions, P&L, activities, stats, trades, tickers and candles follow the fills', async () => {
  await order(bob, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '10' });
  const sold = await order(bob, { symbol: 'AAPL', side: 'sell', type: 'market', qty: '4' });
  expect(sold.status).toBe('filled');
  const positions = (await t.ok('GET', '/trading/positions', bob)).body.positions;
  expect(positions).toHaveLength(1);
  const pos = positions[0];
  expect(pos.symbol).toBe('AAPL');
  expect(pos.qty).toBe('6');
  expect(Number(pos.costBasis)).toBeCloseTo(Number(pos.avgCost) * 6, 4);
  expect(Number(pos.realizedPnl)).toBeLessThan(0); // bought at the ask, sold at the bid
  expect((await t.ok('GET', '/trading/positions/AAPL', bob)).body).toEqual(pos);
  const none = await t.call('GET', '/trading/positions/SPY', { key: bob });
  expect(none.status).toBe(404);
  expect(none.body.error.code).toBe('position_not_found');
  expect((await t.call('GET', '/trading/positions/AAPL', { key: alice })).status).toBe(404);

  const pnl = (await t.ok('GET', '/trading/pnl', bob)).body;
  expect(pnl.symbols).toHaveLength(1);
  expect(pnl.symbols[0]).toMatchObject({ symbol: 'AAPL', boughtQty: '10', soldQty: '4' });
  expect(Number(pnl.total)).toBeCloseTo(Number(pnl.realized) + Number(pnl.unrealized) - Number(pnl.fees), 6);
  const acct = (await t.ok('POST', '/trading/account', bob, { venue: 'paper' })).body;
  expect(Number(acct.equity) - 100000).toBeCloseTo(Number(pnl.total), 6);

  const acts = (await t.ok('GET', '/trading/activities?limit=1', bob)).body;
  expect(acts.activities[0]).toMatchObject({ kind: 'fill', side: 'sell', symbol: 'AAPL', qty: '4' });
  const rest = (await t.ok('GET', `/trading/activities?cursor=${acts.nextCursor}`, bob)).body;
  expect(rest.activities.every((a: any) => a.side === 'buy')).toBe(true);
  const moved = [...acts.activities, ...rest.activities].reduce((s: number, a: any) => s + Number(a.cashDelta), 0);
  expect(100000 + moved).toBeCloseTo(Number(acct.cash), 6);
  expect((await t.call('GET', '/trading/activities?cursor=nope', { key: bob })).status).toBe(400);

  const stats = (await t.ok('GET', '/trading/stats', bob)).body;
  expect(stats.totals).toMatchObject({ ordersPlaced: 2, ordersFilled: 2 });
  expect(stats.days).toHaveLength(1);
  expect((await t.call('GET', '/trading/stats?start=2030-01-01T00:00:00Z&end=2029-01-01T00:00:00Z', { key: bob })).status).toBe(400);

  const tape = (await t.ok('GET', '/trading/trades?symbol=AAPL&limit=1', alice)).body;
  expect(tape.trades[0].takerSide).toBe('sell');
  expect(tape.nextCursor).not.toBeNull();
  const older = (await t.ok('GET', `/trading/trades?symbol=AAPL&cursor=${tape.nextCursor}`, alice)).body;
  expect(older.trades[0].takerSide).toBe('buy');
  expect(older.trades[0].id).not.toBe(tape.trades[0].id);
  const tickers = (await t.ok('GET', '/trading/tickers', alice)).body.tickers;
  const aapl = tickers.find((x: any) => x.symbol === 'AAPL');
  expect(aapl.volume).toBe('14');
  expect(aapl.trades).toBeGreaterThanOrEqual(2);
  expect(Number(aapl.high)).toBeGreaterThanOrEqual(Number(aapl.low));
  const candles = (await t.ok('GET', '/trading/candles?symbol=AAPL&interval=1d', alice)).body.candles;
  expect(candles).toHaveLength(1);
  expect(candles[0].volume).toBe('14');
  expect((await t.call('GET', '/trading/candles?symbol=AAPL&interval=2m', { key: alice })).status).toBe(400);

  const hist = (await t.ok('GET', '/trading/portfolio/history?interval=1m', bob)).body;
  expect(hist.points.length).toBeGreaterThanOrEqual(2);
  expect(hist.startingCash).toBe('100000');
  for (const p of hist.points) expect(Number(p.equity)).toBeCloseTo(Number(p.cash) + Number(p.positionsValue), 6);
  expect(Number(hist.points[hist.points.length - 1].equity)).toBeCloseTo(Number(acct.equity), 6);
});

test('performance, allocation and one fill', async () => {
  // Bob (above) bought 10 AAPL at the ask and sold 4 at the bid: one losing closing trade.
  const perf = (await t.ok('GET', '/trading/performance', bob)).body;
  expect(perf).toMatchObject({ startingCash: '100000', closingTrades: 1, winningTrades: 0, losingTrades: 1, winRate: 0 });
  expect(Number(perf.totalReturn)).toBeLessThan(0);
  expect(Number(perf.equity) - 100000).toBeCloseTo(Number(perf.totalReturn), 6);
  expect(Number(perf.maxDrawdown)).toBeGreaterThan(0);
  expect(Number(perf.bestTrade)).toBe(Number(perf.worstTrade));
  expect(Number(perf.turnover)).toBeGreaterThan(0);
  const fresh = (await t.ok('GET', '/trading/performance', alice)).body;
  expect(fresh).toMatchObject({ closingTrades: 0, totalReturn: '0', maxDrawdown: '0' });
  expect(fresh.winRate).toBeUndefined();
  expect((await t.call('GET', '/trading/performance?venue=nowhere', { key: bob })).status).toBe(400);

  const alloc = (await t.ok('GET', '/trading/portfolio/allocation', bob)).body;
  expect(alloc.rows.map((r: any) => r.asset)).toEqual(['USD', 'AAPL']);
  expect(alloc.largest).toBe('AAPL');
  expect(alloc.rows.reduce((s: number, r: any) => s + r.weightPct, 0)).toBeCloseTo(100, 2);
  expect(Number(alloc.rows[0].value) + Number(alloc.rows[1].value)).toBeCloseTo(Number(alloc.equity), 6);
  expect((await t.ok('GET', '/trading/portfolio/allocation', alice)).body).toMatchObject({ cashPct: 100, largestPct: 0 });

  const fills = (await t.ok('GET', '/trading/fills?limit=1', bob)).body.fills;
  expect((await t.ok('GET', `/trading/fills/${fills[0].id}`, bob)).body).toEqual(fills[0]);
  expect((await t.call('GET', `/trading/fills/${fills[0].id}`, { key: alice })).status).toBe(404);
  expect((await t.call('GET', '/trading/fills/nope', { key: bob })).status).toBe(400);
});

test('an order is replaced, found by client order id, and its history told', async () => {
  const o = await order(alice, { symbol: 'SPY', side: 'buy', type: 'limit', qty: '3', price: '400', clientOrderId: 'spy-1' });
  expect((await t.ok('GET', '/trading/client-orders/spy-1', alice)).body.id).toBe(o.id);
  expect((await t.call('GET', '/trading/client-orders/spy-1', { key: bob })).status).toBe(404);
  const r = (await t.ok('POST', `/trading/orders/${o.id}/replace`, alice, { price: '401', clientOrderId: 'spy-2' })).body;
  expect(r.replaced).toMatchObject({ id: o.id, status: 'cancelled' });
  expect(r.order).toMatchObject({ clientOrderId: 'spy-2', qty: '3', price: '401', status: 'new', side: 'buy' });
  const again = await t.call('POST', `/trading/orders/${o.id}/replace`, { key: alice, body: { price: '402' } });
  expect(again.status).toBe(409);
  expect(again.body.error.code).toBe('order_not_open');
  expect((await t.call('POST', `/trading/orders/${r.order.id}/replace`, { key: alice, body: {} })).status).toBe(400);
  expect((await t.call('POST', `/trading/orders/${r.order.id}/replace`, { key: alice, body: { price: '401.001' } })).status).toBe(400);
  expect((await t.call('POST', `/trading/orders/${r.order.id}/replace`, { key: bob, body: { price: '402' } })).status).toBe(404);
  const hist = (await t.ok('GET', `/trading/orders/${o.id}/history`, alice)).body;
  expect(hist.events.map((e: any) => e.kind)).toEqual(['placed', 'cancelled']);
  const filled = await order(alice, { symbol: 'SPY', side: 'buy', type: 'market', qty: '2' });
  const h2 = (await t.ok('GET', `/trading/orders/${filled.id}/history`, alice)).body;
  expect(h2.events[0].kind).toBe('placed');
  expect(h2.events[h2.events.length - 1]).toMatchObject({ kind: 'fill', status: 'filled', filledQty: '2' });
  expect((await t.call('GET', `/trading/orders/${filled.id}/history`, { key: bob })).status).toBe(404);
});

test('a replace is one transaction: the old hold counts for the new order, and a refused new order leaves the old one open', async () => {
  const carol = await user('Carol');
  const usd = async () => (await t.ok('POST', '/trading/account', carol, { venue: 'paper' })).body.balances.find((b: any) => b.asset === 'USD');
  // 150 × 300 held of 100,000: the new order (200 × 300) fits only with the old order's hold given back.
  const o = await order(carol, { symbol: 'SPY', side: 'buy', type: 'limit', qty: '150', price: '300' });
  const held = (await usd()).held;
  expect(Number(held)).toBeGreaterThan(45_000);
  const r = (await t.ok('POST', `/trading/orders/${o.id}/replace`, carol, { qty: '200' })).body;
  expect(r.replaced).toMatchObject({ id: o.id, status: 'cancelled' });
  expect(r.order).toMatchObject({ qty: '200', price: '300', status: 'new' });
  const heldNow = (await usd()).held;
  expect(Number(heldNow)).toBeCloseTo((Number(held) * 200) / 150, 2);

  // 1,000 × 300 is more than the account has: refused, and nothing changed.
  const refused = await t.call('POST', `/trading/orders/${r.order.id}/replace`, { key: carol, body: { qty: '1000' } });
  expect([refused.status, refused.body.error.code]).toEqual([422, 'insufficient_balance']);
  expect((await t.ok('GET', `/trading/orders/${r.order.id}`, carol)).body).toMatchObject({ status: 'new', qty: '200' });
  expect((await usd()).held).toBe(heldNow);
  const open = (await t.ok('GET', '/trading/orders?status=open', carol)).body.orders;
  expect(open.map((x: any) => x.id)).toEqual([r.order.id]);
});

test('closing a position and flattening the account', async () => {
  await order(alice, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '1' });
  const part = (await t.ok('POST', `/trading/positions/${ETH}/close`, alice, { qty: '0.4' })).body;
  expect(part).toMatchObject({ side: 'sell', type: 'market', qty: '0.4', status: 'filled' });
  expect((await t.ok('GET', `/trading/positions/${ETH}`, alice)).body.qty).toBe('0.6');
  const none = await t.call('POST', '/trading/positions/BTC%2FUSD/close', { key: alice, body: {} });
  expect(none.status).toBe(404);
  expect(none.body.error.code).toBe('position_not_found');
  const flat = (await t.ok('POST', '/trading/positions/close-all', alice, {})).body;
  expect(flat.cancelled.length).toBeGreaterThanOrEqual(1); // the SPY limit order left open above
  expect(flat.orders.map((o: any) => o.symbol).sort()).toEqual(['ETH/USD', 'SPY']);
  expect((await t.ok('GET', '/trading/positions', alice)).body.positions).toEqual([]);
});
