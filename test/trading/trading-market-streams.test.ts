import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

// The paper venue's market data as lists and live streams (docs/trading.md, "Market data streams"):
// quotes (the market maker's, moving with its reference), the tape resumed after a seq, bars. The
// reference steps every 300 ms here, so quotes move by themselves; no account order rests, so the
// market maker's requotes trade with nothing and the tape holds only the orders placed here.
let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack({ SVC_TRADING_PAPER_TICK_MS: '300', SVC_TRADING_PAPER_CASH: '100000', SVC_TRADING_ALPACA_URL: 'off' });
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Quant' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

type SseEvent = { id?: string; event?: string; data: any };
async function stream(path: string, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  const res = await fetch(`${t.url}${path}`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  });
  const out = { status: res.status, events: [] as SseEvent[], close: () => ac.abort() };
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
    } catch {
      // dropped by the client
    }
  })();
  return out;
}
const order = async (body: Record<string, unknown>) => (await t.ok('POST', '/trading/order', key, body)).body;

test('quotes of every symbol, or of some; an unknown symbol is a 400', async () => {
  const all = (await t.ok('GET', '/trading/quotes', key)).body.quotes;
  expect(all.map((q: any) => q.symbol)).toEqual(['BTC/USD', 'ETH/USD', 'AAPL', 'SPY']);
  for (const q of all) expect(Number(q.ask)).toBeGreaterThan(Number(q.bid));
  const some = (await t.ok('GET', `/trading/quotes?symbols=${encodeURIComponent('SPY,BTC/USD')}`, key)).body.quotes;
  expect(some.map((q: any) => q.symbol)).toEqual(['SPY', 'BTC/USD']);
  const unknown = await t.call('GET', '/trading/quotes?symbols=NOPE', { key });
  expect([unknown.status, unknown.body.error.code]).toEqual([400, 'unknown_symbol']);
  const bad = await t.call('GET', '/trading/quotes?symbols=A%20B', { key });
  expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_request']);
});

test('a quote stream shows the market maker moving its quotes, and a trade', async () => {
  const s = await stream(`/trading/quotes?symbols=${encodeURIComponent('ETH/USD')}`);
  expect(s.status).toBe(200);
  await until(() => s.events.length >= 1, 10_000, { what: 'the first quote' });
  expect(s.events[0]).toMatchObject({ event: 'quote', data: { symbol: 'ETH/USD' } });
  // The reference steps every 300 ms: the quotes move with it, with nobody trading.
  await until(() => new Set(s.events.map((e) => e.data.reference)).size >= 3, 15_000, { what: 'three reference prices' });
  await order({ symbol: 'ETH/USD', side: 'buy', qty: '0.5' });
  const fills = (await t.ok('GET', '/trading/fills?symbol=ETH%2FUSD&limit=1', key)).body.fills;
  await until(() => s.events.some((e) => e.data.last === fills[0].price), 10_000, { what: 'a quote after the trade' });
  s.close();
  for (const e of s.events) expect(Number(e.data.ask)).toBeGreaterThan(Number(e.data.bid));
});

test('the tape as a stream: live trades in order, resumed after Last-Event-ID or `after`, as the list has them', async () => {
  const live = await stream('/trading/trades?symbol=SPY');
  expect(live.status).toBe(200);
  await order({ symbol: 'SPY', side: 'buy', qty: '70' }); // 20 + 40 + 10 at the first three levels: three trades
  await order({ symbol: 'SPY', side: 'sell', qty: '0.5' });
  const listed = (await t.ok('GET', '/trading/trades?symbol=SPY&limit=200', key)).body.trades.reverse();
  expect(listed.length).toBeGreaterThanOrEqual(4);
  await until(() => live.events.length >= listed.length, 10_000, { what: 'the live trades' });
  live.close();
  expect(live.events.map((e) => e.data)).toEqual(listed);
  expect(live.events.map((e) => [e.event, Number(e.id)])).toEqual(listed.map((x: any) => ['trade', x.seq]));
  expect(listed.map((x: any) => x.seq)).toEqual([...listed.map((x: any) => x.seq)].sort((a, b) => a - b));
  // Resumed after the first trade: the others, and nothing before.
  const resumed = await stream('/trading/trades?symbol=SPY', { 'last-event-id': String(listed[0].seq) });
  await until(() => resumed.events.length >= listed.length - 1, 10_000, { what: 'the trades after the first' });
  await order({ symbol: 'SPY', side: 'sell', qty: '0.25' });
  await until(() => resumed.events.length >= listed.length, 10_000, { what: 'a live trade after the resume' });
  resumed.close();
  expect(resumed.events.slice(0, listed.length - 1).map((e) => e.data)).toEqual(listed.slice(1));
  const from = await stream('/trading/trades?symbol=SPY&after=0');
  await until(() => from.events.length >= listed.length + 1, 10_000, { what: 'the whole tape' });
  from.close();
  expect(from.events.slice(0, listed.length).map((e) => e.data)).toEqual(listed);
});

test('bars: the candles oldest first, and a stream that sends the latest bar again when a trade changes it', async () => {
  await order({ symbol: 'AAPL', side: 'buy', qty: '2' });
  const bars = (await t.ok('GET', '/trading/bars?symbol=AAPL&interval=1m', key)).body;
  const candles = (await t.ok('GET', '/trading/candles?symbol=AAPL&interval=1m', key)).body.candles;
  expect(bars).toMatchObject({ symbol: 'AAPL', interval: '1m' });
  expect(bars.bars).toEqual(candles);
  const s = await stream('/trading/bars?symbol=AAPL&interval=1d');
  await until(() => s.events.length >= 1, 10_000, { what: 'the day bar' });
  const before = s.events.at(-1)!.data;
  await order({ symbol: 'AAPL', side: 'sell', qty: '1' });
  await until(() => s.events.length >= 2, 10_000, { what: 'the day bar again' });
  s.close();
  const after = s.events.at(-1)!;
  expect(after.event).toBe('bar');
  expect(after.id).toBe(String(Date.parse(before.start)));
  expect(after.data.start).toBe(before.start);
  expect(after.data.trades).toBeGreaterThan(before.trades);
  expect(Number(after.data.volume)).toBeGreaterThan(Number(before.volume));
});
