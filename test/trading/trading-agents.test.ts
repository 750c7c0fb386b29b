import { type FakeAlpaca, startFakeAlpaca } from '../support/alpaca-fake';
import { startTestStack, type TestStack } from '../support/stack';

// Alpaca through its Trading API (a loopback fake that speaks it), venue credentials, and agents'
// trading limits.
let t: TestStack;
let alpaca: FakeAlpaca;
let key: string;
let agentId: string;
let agentKey: string;
const CREDS = { keyId: 'PKTEST1234567890ABCD', secretKey: 'secretsecretsecretsecretsecretWXYZ' };

beforeAll(async () => {
  alpaca = await startFakeAlpaca({ ...CREDS, cash: 10_000, price: 100 });
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_ALPACA_URL: alpaca.url, SVC_TRADING_ALPACA_MODE: 'live' });
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Trader' })).body.key;
  agentId = (await t.ok('POST', '/agents', key, { name: 'bot' })).body.id;
  agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, key, { name: 'bot key' })).body.key;
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await alpaca?.close();
});

const order = (k: string, body: Record<string, unknown>) => t.call('POST', '/trading/order', { key: k, body });

describe('alpaca', () => {
  test('listed as a live venue with its capabilities', async () => {
    const venues = (await t.ok('GET', '/trading/venues', key)).body.venues;
    expect(venues.map((v: any) => [v.id, v.mode])).toEqual([
      ['paper', 'paper'],
      ['alpaca', 'live'],
    ]);
    expect(venues[1].capabilities).toMatchObject({ orderTypes: ['market', 'limit', 'stop', 'stop_limit'], orderBook: false, reset: false });
    expect(venues[1].instruments).toBeNull();
  });

  test('without stored credentials an order answers 412 and reaches nothing', async () => {
    const res = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', qty: '1' });
    expect([res.status, res.body.error.code]).toEqual([412, 'venue_credentials_missing']);
    expect(alpaca.requests).toEqual([]);
  });

  test('credentials are set by a person, sealed, never returned; an agent cannot set them', async () => {
    const denied = await t.call('PUT', '/trading/credentials/alpaca', { key: agentKey, body: CREDS });
    expect([denied.status, denied.body.error.code]).toEqual([403, 'human_principal_required']);
    const set = await t.ok('PUT', '/trading/credentials/alpaca', key, CREDS);
    expect(set.body).toMatchObject({ venue: 'alpaca', keyId: '…ABCD', secretLast4: 'WXYZ' });
    const listed = JSON.stringify((await t.ok('GET', '/trading/credentials', key)).body);
    expect(listed).not.toContain(CREDS.secretKey);
    expect(listed).not.toContain(CREDS.keyId);
    // Sealed at rest: the secret is nowhere in the table.
    const pg = await import('pg');
    if (t.env.DATABASE_URL) {
      const c = new pg.default.Client({ connectionString: t.env.DATABASE_URL });
      await c.connect();
      const rows = (await c.query('SELECT * FROM trading.credentials')).rows;
      await c.end();
      expect(JSON.stringify(rows)).not.toContain(CREDS.secretKey);
      expect(rows).toHaveLength(1);
    }
    expect((await t.call('PUT', '/trading/credentials/paper', { key, body: CREDS })).status).toBe(400);
  });

  test('a market order goes to Alpaca with its headers and comes back filled; the account is Alpaca’s', async () => {
    const res = await order(key, {
      venue: 'alpaca',
      symbol: 'AAPL',
      side: 'buy',
      type: 'market',
      qty: '3',
      timeInForce: 'day',
      clientOrderId: 'alp-1',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ venue: 'alpaca', status: 'filled', filledQty: '3', avgFillPrice: '100', clientOrderId: 'alp-1' });
    const sent = alpaca.requests.find((r) => r.method === 'POST')!;
    expect(sent.keyId).toBe(CREDS.keyId);
    expect(sent.body).toEqual({ symbol: 'AAPL', qty: '3', side: 'buy', type: 'market', time_in_force: 'day', client_order_id: 'alp-1' });
    expect(res.body.externalId).toBe(alpaca.orders.values().next().value.id);
    const acct = (await t.ok('POST', '/trading/account', key, { venue: 'alpaca' })).body;
    expect(acct).toMatchObject({ venue: 'alpaca', currency: 'USD', cash: '9700.00' });
    expect(acct.positions).toEqual([{ symbol: 'AAPL', qty: '3', markPrice: '100', marketValue: '300.00' }]);
  });

  test('a retry with the same clientOrderId answers the original without a second order at Alpaca', async () => {
    const posts = () => alpaca.requests.filter((r) => r.method === 'POST').length;
    const before = posts();
    const again = await order(key, {
      venue: 'alpaca',
      symbol: 'AAPL',
      side: 'buy',
      type: 'market',
      qty: '3',
      timeInForce: 'day',
      clientOrderId: 'alp-1',
    });
    expect(again.status).toBe(200);
    expect(posts()).toBe(before);
    const other = await order(key, {
      venue: 'alpaca',
      symbol: 'MSFT',
      side: 'buy',
      type: 'market',
      qty: '3',
      timeInForce: 'day',
      clientOrderId: 'alp-1',
    });
    expect([other.status, other.body.error.code]).toEqual([409, 'client_order_id_conflict']);
  });

  test('a limit order rests at Alpaca and is cancelled there', async () => {
    const res = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1', price: '90', timeInForce: 'gtc' });
    expect(res.body).toMatchObject({ status: 'new', price: '90' });
    const cancelled = await t.ok('POST', '/trading/cancel', key, { orderId: res.body.id });
    expect(cancelled.body.orders[0]).toMatchObject({ id: res.body.id, status: 'cancelled' });
    expect(alpaca.requests.some((r) => r.method === 'DELETE' && r.path === `/v2/orders/${res.body.externalId}`)).toBe(true);
    expect(alpaca.orders.get(res.body.externalId).status).toBe('canceled');
  });

  test('a notional order goes to Alpaca as its notional (no qty) and is kept with the quantity it bought', async () => {
    const res = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', notional: '250', clientOrderId: 'alp-notional' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ venue: 'alpaca', status: 'filled', notional: '250', qty: '2.5', filledQty: '2.5', avgFillPrice: '100' });
    const sent = alpaca.requests.filter((r) => r.method === 'POST').at(-1)!;
    expect(sent.body).toMatchObject({ symbol: 'AAPL', notional: '250', side: 'buy', type: 'market', client_order_id: 'alp-notional' });
    expect(sent.body.qty).toBeUndefined();
    // A retry answers the original; the same id with another notional is another order: 409.
    const again = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', notional: '250', clientOrderId: 'alp-notional' });
    expect([again.status, again.body.id]).toEqual([200, res.body.id]);
    const other = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', notional: '251', clientOrderId: 'alp-notional' });
    expect([other.status, other.body.error.code]).toEqual([409, 'client_order_id_conflict']);
    // Its updates: accepted, then filled, without balances (Alpaca keeps them).
    const events = (await t.ok('GET', '/trading/events?limit=200', key)).body.events.filter((e: any) => e.order?.id === res.body.id);
    expect(events.map((e: any) => [e.type, e.venue, e.order.status, e.balances])).toEqual([
      ['accepted', 'alpaca', 'new', null],
      ['filled', 'alpaca', 'filled', null],
    ]);
  });

  test("Alpaca's refusals become clear errors: buying power, bad credentials", async () => {
    const poor = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', type: 'limit', qty: '1000', price: '100' });
    expect([poor.status, poor.body.error.code]).toEqual([422, 'insufficient_balance']);
    expect(poor.body.error.message).toMatch(/insufficient buying power/);
    await t.ok('PUT', '/trading/credentials/alpaca', key, { keyId: 'PKWRONG', secretKey: 'nope' });
    const wrong = await order(key, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', qty: '1' });
    expect([wrong.status, wrong.body.error.code]).toEqual([422, 'venue_credentials_rejected']);
    await t.ok('PUT', '/trading/credentials/alpaca', key, CREDS);
  });
});

describe('agent limits', () => {
  test('an agent trades on paper by default, never live', async () => {
    expect((await order(agentKey, { symbol: 'AAPL', side: 'buy', qty: '1' })).status).toBe(201);
    const live = await order(agentKey, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', type: 'limit', price: '90', qty: '1' });
    expect([live.status, live.body.error.code]).toEqual([403, 'trading_limit_exceeded']);
    expect(live.body.error.message).toMatch(/paperOnly/);
  });

  test('an agent cannot set or raise its own limits', async () => {
    const res = await t.call('PUT', `/trading/limits/${agentId}`, { key: agentKey, body: { maxNotionalPerOrder: null, paperOnly: false } });
    expect([res.status, res.body.error.code]).toEqual([403, 'human_principal_required']);
  });

  test('a person sets limits; an order outside them answers 403 naming the limit', async () => {
    const set = await t.ok('PUT', `/trading/limits/${agentId}`, key, {
      maxNotionalPerOrder: '1000',
      maxNotionalPerDay: '1500',
      symbols: ['AAPL', 'SPY'],
      paperOnly: true,
    });
    expect(set.body).toMatchObject({ agentId, maxNotionalPerOrder: '1000', maxNotionalPerDay: '1500', symbols: ['AAPL', 'SPY'], paperOnly: true });
    expect(set.body.setBy.kind).toBe('human');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ symbol: 'BTC/USD', side: 'buy', qty: '0.001' }, 'symbols'],
      [{ symbol: 'AAPL', side: 'buy', type: 'limit', price: '200.00', qty: '6' }, 'maxNotionalPerOrder'],
      [{ symbol: 'SPY', side: 'buy', type: 'market', qty: '3' }, 'maxNotionalPerOrder'],
    ];
    for (const [body, limit] of cases) {
      const res = await order(agentKey, body);
      expect([body, res.status, res.body.error.code]).toEqual([body, 403, 'trading_limit_exceeded']);
      expect(res.body.error.message).toContain(limit);
    }
    // Within the order cap, until the day's cap: 4 × ~190 fits under 1000, twice would pass 1500.
    expect((await order(agentKey, { symbol: 'AAPL', side: 'buy', type: 'limit', price: '150.00', qty: '4' })).status).toBe(201);
    // The day's usage counts every order of the day, the paper market order before the limits too.
    const used = (await t.ok('GET', '/trading/limits', agentKey)).body.limits;
    expect(used).toEqual([expect.objectContaining({ agentId })]);
    const usedToday = Number(used[0].usedToday);
    expect(usedToday).toBeGreaterThan(600);
    const day = await order(agentKey, { symbol: 'AAPL', side: 'buy', type: 'limit', price: '240.00', qty: '4' });
    expect([day.status, day.body.error.code]).toEqual([403, 'trading_limit_exceeded']);
    expect(day.body.error.message).toContain('maxNotionalPerDay');
    // Refused orders count nothing.
    expect(Number((await t.ok('GET', '/trading/limits', agentKey)).body.limits[0].usedToday)).toBe(usedToday);
    // A person is not limited.
    expect((await order(key, { symbol: 'BTC/USD', side: 'buy', qty: '0.001' })).status).toBe(201);
  });

  test('a notional order counts its notional against the limits, at the paper venue and at Alpaca', async () => {
    await t.ok('PUT', `/trading/limits/${agentId}`, key, { maxNotionalPerOrder: '500', maxNotionalPerDay: null, symbols: null, paperOnly: false });
    const over = await order(agentKey, { symbol: 'AAPL', side: 'buy', notional: '600' });
    expect([over.status, over.body.error.code]).toEqual([403, 'trading_limit_exceeded']);
    expect(over.body.error.message).toMatch(/maxNotionalPerOrder.*600 USD is over 500 USD/);
    const before = Number((await t.ok('GET', '/trading/limits', agentKey)).body.limits[0].usedToday);
    const placed = await order(agentKey, { symbol: 'AAPL', side: 'buy', notional: '100' });
    expect([placed.status, placed.body.status, placed.body.notional]).toEqual([201, 'filled', '100']);
    // What it may spend is what counts (its fill came to a little less).
    expect(Number(placed.body.filledNotional)).toBeLessThanOrEqual(100);
    expect(Number((await t.ok('GET', '/trading/limits', agentKey)).body.limits[0].usedToday)).toBeCloseTo(before + 100, 9);
    // At Alpaca there is no book here to bound a market order by quantity, but a notional bounds itself.
    const qtyMarket = await order(agentKey, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', qty: '1' });
    expect([qtyMarket.status, qtyMarket.body.error.code]).toEqual([403, 'trading_limit_exceeded']);
    const notional = await order(agentKey, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', notional: '50' });
    expect([notional.status, notional.body.status, notional.body.qty]).toEqual([201, 'filled', '0.5']);
    const tooMuch = await order(agentKey, { venue: 'alpaca', symbol: 'AAPL', side: 'buy', notional: '500.01' });
    expect([tooMuch.status, tooMuch.body.error.code]).toEqual([403, 'trading_limit_exceeded']);
  });

  test("limits for another account's agent answer 404", async () => {
    const other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Other' })).body.key;
    const res = await t.call('PUT', `/trading/limits/${agentId}`, { key: other, body: { paperOnly: false } });
    expect(res.status).toBe(404);
  });
});
