import { startTestStack, type TestStack } from '../support/stack';

// Watchlists, price alerts and the journal (docs/trading.md): CRUD, bad input, another tenant's
// 404, conflicts; alerts trigger against the paper market's reference price.
let t: TestStack;
let alice: string;
let bob: string;

async function user(name: string): Promise<string> {
  return (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key;
}
const Z = 'z'.repeat(26);

beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '3600000', SVC_TRADING_ALPACA_URL: 'off' });
  alice = await user('Alice');
  bob = await user('Bob');
}, 60_000);
afterAll(() => t?.stop());

test('watchlists: create, list, rename, add and remove symbols, quotes, delete', async () => {
  const w = (await t.ok('POST', '/trading/watchlists', alice, { name: 'crypto', symbols: ['BTC/USD', 'BTC/USD'] })).body;
  expect(w).toMatchObject({ name: 'crypto', symbols: ['BTC/USD'] });
  const dup = await t.call('POST', '/trading/watchlists', { key: alice, body: { name: 'crypto' } });
  expect(dup.status).toBe(409);
  expect(dup.body.error.code).toBe('watchlist_name_taken');
  expect((await t.call('POST', '/trading/watchlists', { key: alice, body: { name: 'x', symbols: ['NOPE'] } })).body.error.code).toBe(
    'unknown_symbol',
  );
  expect((await t.call('POST', '/trading/watchlists', { key: alice, body: { name: '' } })).status).toBe(400);
  // Bob may use the same name; Alice's list is not his.
  await t.ok('POST', '/trading/watchlists', bob, { name: 'crypto' });
  expect((await t.call('GET', `/trading/watchlists/${w.id}`, { key: bob })).status).toBe(404);
  expect((await t.call('DELETE', `/trading/watchlists/${w.id}`, { key: bob })).status).toBe(404);

  const added = (await t.ok('POST', `/trading/watchlists/${w.id}/symbols`, alice, { symbol: 'ETH/USD' })).body;
  expect(added.symbols).toEqual(['BTC/USD', 'ETH/USD']);
  expect((await t.ok('POST', `/trading/watchlists/${w.id}/symbols`, alice, { symbol: 'ETH/USD' })).body.symbols).toEqual(['BTC/USD', 'ETH/USD']);
  const quotes = (await t.ok('GET', `/trading/watchlists/${w.id}/quotes`, alice)).body.quotes;
  expect(quotes.map((q: any) => q.symbol)).toEqual(['BTC/USD', 'ETH/USD']);
  expect(Number(quotes[0].ask)).toBeGreaterThan(Number(quotes[0].bid));
  const removed = (await t.ok('DELETE', `/trading/watchlists/${w.id}/symbols/${encodeURIComponent('BTC/USD')}`, alice)).body;
  expect(removed.symbols).toEqual(['ETH/USD']);
  const gone = await t.call('DELETE', `/trading/watchlists/${w.id}/symbols/AAPL`, { key: alice });
  expect(gone.status).toBe(404);
  expect(gone.body.error.code).toBe('symbol_not_in_watchlist');

  const other = (await t.ok('POST', '/trading/watchlists', alice, { name: 'stocks', symbols: ['AAPL', 'SPY'] })).body;
  expect((await t.call('PATCH', `/trading/watchlists/${other.id}`, { key: alice, body: { name: 'crypto' } })).status).toBe(409);
  expect((await t.ok('PATCH', `/trading/watchlists/${other.id}`, alice, { name: 'equities' })).body.name).toBe('equities');
  const page1 = (await t.ok('GET', '/trading/watchlists?limit=1', alice)).body;
  expect(page1.watchlists.map((x: any) => x.name)).toEqual(['equities']);
  const page2 = (await t.ok('GET', `/trading/watchlists?limit=1&cursor=${page1.nextCursor}`, alice)).body;
  expect(page2.watchlists.map((x: any) => x.name)).toEqual(['crypto']);
  expect(page2.nextCursor).toBeNull();

  expect((await t.ok('DELETE', `/trading/watchlists/${w.id}`, alice)).body).toEqual({ success: true });
  expect((await t.call('GET', `/trading/watchlists/${w.id}`, { key: alice })).status).toBe(404);
  expect((await t.call('GET', `/trading/watchlists/wl_${Z}`, { key: alice })).status).toBe(404);
  expect((await t.call('GET', '/trading/watchlists/nope', { key: alice })).status).toBe(400);
});

test('price alerts trigger against the reference price, are changed (armed again) and deleted', async () => {
  const ref = Number((await t.ok('GET', '/trading/quote?symbol=AAPL', alice)).body.reference);
  const hit = (await t.ok('POST', '/trading/alerts', alice, { symbol: 'AAPL', condition: 'above', price: '1', note: 'sure' })).body;
  expect(hit).toMatchObject({ status: 'triggered', triggeredPrice: String(ref), note: 'sure' });
  expect(hit.triggeredAt).toEqual(expect.any(String));
  const wait = (await t.ok('POST', '/trading/alerts', alice, { symbol: 'AAPL', condition: 'above', price: String(ref * 10) })).body;
  expect(wait.status).toBe('active');
  expect((await t.ok('GET', `/trading/alerts/${wait.id}`, alice)).body.status).toBe('active');
  expect((await t.ok('GET', '/trading/alerts?status=active', alice)).body.alerts.map((a: any) => a.id)).toEqual([wait.id]);
  expect((await t.ok('GET', '/trading/alerts?status=triggered', alice)).body.alerts.map((a: any) => a.id)).toEqual([hit.id]);

  const below = (await t.ok('PATCH', `/trading/alerts/${wait.id}`, alice, { condition: 'below' })).body;
  expect(below).toMatchObject({ condition: 'below', status: 'triggered' });
  const rearmed = (await t.ok('PATCH', `/trading/alerts/${wait.id}`, alice, { price: '1', note: null })).body;
  expect(rearmed).toMatchObject({ condition: 'below', price: '1', status: 'active' });
  expect(rearmed.note).toBeUndefined();

  expect((await t.call('POST', '/trading/alerts', { key: alice, body: { symbol: 'AAPL', condition: 'near', price: '1' } })).status).toBe(400);
  expect((await t.call('POST', '/trading/alerts', { key: alice, body: { symbol: 'AAPL', condition: 'above', price: '1.001' } })).status).toBe(400);
  expect((await t.call('POST', '/trading/alerts', { key: alice, body: { symbol: 'NOPE', condition: 'above', price: '1' } })).body.error.code).toBe(
    'unknown_symbol',
  );
  expect((await t.call('PATCH', `/trading/alerts/${wait.id}`, { key: alice, body: {} })).status).toBe(400);
  expect((await t.call('GET', `/trading/alerts/${wait.id}`, { key: bob })).status).toBe(404);
  expect((await t.call('PATCH', `/trading/alerts/${wait.id}`, { key: bob, body: { price: '2' } })).status).toBe(404);
  expect((await t.call('DELETE', `/trading/alerts/${wait.id}`, { key: bob })).status).toBe(404);
  expect((await t.ok('DELETE', `/trading/alerts/${wait.id}`, alice)).body).toEqual({ success: true });
  expect((await t.call('DELETE', `/trading/alerts/${wait.id}`, { key: alice })).status).toBe(404);
});

test('journal entries: written, tied to an order, found by tag, edited, deleted', async () => {
  const o = (await t.ok('POST', '/trading/order', alice, { symbol: 'SPY', side: 'buy', type: 'limit', qty: '1', price: '100' })).body;
  const e = (await t.ok('POST', '/trading/journal', alice, { title: 'Why SPY', body: 'cheap bid', orderId: o.id, tags: ['plan', 'spy'] })).body;
  expect(e).toMatchObject({ title: 'Why SPY', symbol: 'SPY', orderId: o.id, tags: ['plan', 'spy'], createdBy: { kind: 'human' } });
  const n = (await t.ok('POST', '/trading/journal', alice, { title: 'Review', tags: ['review'] })).body;
  expect(n.body).toBe('');
  expect((await t.ok('GET', '/trading/journal?tag=plan', alice)).body.entries.map((x: any) => x.id)).toEqual([e.id]);
  expect((await t.ok('GET', `/trading/journal?orderId=${o.id}`, alice)).body.entries.map((x: any) => x.id)).toEqual([e.id]);
  expect((await t.ok('GET', '/trading/journal', alice)).body.entries.map((x: any) => x.id)).toEqual([n.id, e.id]);
  expect((await t.ok('GET', '/trading/journal', bob)).body.entries).toEqual([]);
  // Another account's order is not found.
  expect((await t.call('POST', '/trading/journal', { key: bob, body: { title: 'x', orderId: o.id } })).status).toBe(404);
  expect((await t.call('POST', '/trading/journal', { key: alice, body: { title: '' } })).status).toBe(400);
  expect((await t.call('POST', '/trading/journal', { key: alice, body: { title: 'x', tags: ['Bad Tag'] } })).status).toBe(400);
  const edited = (await t.ok('PATCH', `/trading/journal/${e.id}`, alice, { body: 'filled later', tags: ['done'] })).body;
  expect(edited).toMatchObject({ title: 'Why SPY', body: 'filled later', tags: ['done'] });
  expect((await t.call('PATCH', `/trading/journal/${e.id}`, { key: alice, body: {} })).status).toBe(400);
  expect((await t.call('PATCH', `/trading/journal/${e.id}`, { key: bob, body: { title: 'mine' } })).status).toBe(404);
  expect((await t.ok('GET', `/trading/journal/${e.id}`, alice)).body.body).toBe('filled later');
  await t.ok('POST', '/trading/journal', alice, { title: 'Another review', tags: ['review', 'spy'] });
  const tags = (await t.ok('GET', '/trading/journal/tags', alice)).body.tags;
  expect(tags.map((x: any) => [x.tag, x.entries])).toEqual([
    ['review', 2],
    ['done', 1],
    ['spy', 1],
  ]);
  expect((await t.ok('GET', '/trading/journal/tags', bob)).body.tags).toEqual([]);
  expect((await t.call('GET', `/trading/journal/${e.id}`, { key: bob })).status).toBe(404);
  expect((await t.ok('DELETE', `/trading/journal/${e.id}`, alice)).body).toEqual({ success: true });
  expect((await t.call('DELETE', `/trading/journal/${e.id}`, { key: alice })).status).toBe(404);
});
