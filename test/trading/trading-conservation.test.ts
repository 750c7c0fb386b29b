import { type BookOrder, MARKET_MAKER, newBookOrder, OrderBook, PAPER_INSTRUMENTS, requote, specOf } from '@svc/trading';

import { startTestStack, type TestStack } from '../support/stack';

/** A decimal string as integer units of 10⁻⁹ (exact). */
function units(s: string): bigint {
  const neg = s.startsWith('-');
  const [i, f = ''] = (neg ? s.slice(1) : s).split('.');
  const v = BigInt(i!) * 10n ** 9n + BigInt((f + '000000000').slice(0, 9));
  return neg ? -v : v;
}

/** A seeded PRNG (mulberry32), so a failure can be replayed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the matching engine alone', () => {
  test('50,000 random orders, linked and auction ones among them, through session cycles and limits that tighten: no fill lost or doubled, no OCO with both legs filled, the book never left crossed, quantities and cash conserved', () => {
    const spec = specOf(PAPER_INSTRUMENTS.find((i) => i.symbol === 'ETH/USD')!);
    const book = new OrderBook({ lastPrice: spec.params.startPrice });
    const maker = { step: 0, reference: spec.params.startPrice, quotes: [] as string[], placed: 0 };
    const r = rng(7);
    const owners = ['a', 'b', 'c', 'd', 'e'];
    const bought = new Map<string, number>();
    const orders: BookOrder[] = [];
    const problems: string[] = [];
    const pairs: Array<[BookOrder, BookOrder]> = [];
    const entries: Array<[BookOrder, BookOrder[]]> = [];
    // Every fill once (by its seq), and each order's fills as the fills report them; cash as the fills move it.
    const fillSeqs = new Set<number>();
    const filledBy = new Map<BookOrder, { qty: number; notional: number }>();
    const cash = new Map<string, number>();
    let inAuction = false;
    // An agent ('e' places as 'bot') whose cap is tightened for every other 1,000 orders: what waited and goes on over it is refused (MatchHooks.release).
    let tight = false;
    const cap = 10_000 * spec.params.startPrice;
    const hooks = {
      release: (o: BookOrder, notional: () => number) =>
        o.agent === 'bot' && tight && notional() > cap ? 'trading_limit_exceeded:maxNotionalPerOrder' : null,
    };
    const check = (fills: Array<{ seq: number; taker: BookOrder; maker: BookOrder; qty: number; price: number }>) => {
      for (const f of fills) {
        if (fillSeqs.has(f.seq)) problems.push(`fill ${f.seq} reported twice`);
        fillSeqs.add(f.seq);
        for (const [o, sign] of [
          [f.taker, f.taker.side === 'buy' ? -1 : 1],
          [f.maker, f.maker.side === 'buy' ? -1 : 1],
        ] as const) {
          const seen = filledBy.get(o) ?? { qty: 0, notional: 0 };
          filledBy.set(o, { qty: seen.qty + f.qty, notional: seen.notional + f.qty * f.price });
          cash.set(o.owner, (cash.get(o.owner) ?? 0) + sign * f.qty * f.price);
        }
        // An order for an auction trades at its auction only.
        if (!inAuction && (f.taker.tif === 'opg' || f.taker.tif === 'cls' || f.maker.tif === 'opg' || f.maker.tif === 'cls'))
          problems.push(`${f.taker.id} traded with an auction order outside its auction`);
        if (f.qty <= 0) problems.push(`empty fill of ${f.taker.id}`);
        const buyer = f.taker.side === 'buy' ? f.taker : f.maker;
        const seller = f.taker.side === 'buy' ? f.maker : f.taker;
        if (buyer.owner === seller.owner) problems.push(`self trade of ${buyer.owner}`);
        bought.set(buyer.owner, (bought.get(buyer.owner) ?? 0) + f.qty);
        bought.set(seller.owner, (bought.get(seller.owner) ?? 0) - f.qty);
        // A limit is never traded through.
        if (f.taker.price !== undefined && (f.taker.side === 'buy' ? f.price > f.taker.price : f.price < f.taker.price))
          problems.push(`${f.taker.id} traded through its limit`);
      }
    };
    let auctions = 0;
    for (let i = 0; i < 50_000; i++) {
      tight = Math.floor(i / 1000) % 2 === 1;
      if (i % 200 === 0) check(requote(book, maker, { seed: 1, symbol: spec.symbol, params: spec.params, step: i / 200, hooks })?.fills ?? []);
      // A session cycle: an opening auction, then a closing one, each 250 orders after the other; nothing waits for one after it.
      if (i % 250 === 125) {
        const kind = Math.floor(i / 250) % 2 === 0 ? 'opg' : 'cls';
        const a = book.auction(kind, hooks);
        inAuction = true;
        check(a.fills);
        inAuction = false;
        auctions += a.fills.length;
        for (const o of book.openOrders()) if (o.tif === kind) problems.push(`${o.id} (${kind}) still open after its auction`);
      }
      const ref = Math.round(maker.reference);
      const side = r() < 0.5 ? 'buy' : 'sell';
      const kind = r();
      const type = kind < 0.3 ? 'market' : kind < 0.85 ? 'limit' : kind < 0.93 ? 'stop' : 'stop_limit';
      const off = Math.round((r() - 0.5) * ref * 0.004);
      const o = newBookOrder({
        id: `o${i}`,
        owner: owners[Math.floor(r() * owners.length)]!,
        side,
        type,
        tif: (['gtc', 'day', 'ioc', 'fok'] as const)[Math.floor(r() * 4)]!,
        qty: 1 + Math.floor(r() * 20_000),
        price: type === 'limit' || type === 'stop_limit' ? Math.max(1, ref + off) : undefined,
        stopPrice: type === 'stop' || type === 'stop_limit' ? Math.max(1, ref + (side === 'buy' ? 1 : -1) * Math.abs(off)) : undefined,
      });
      if (o.owner === 'e') o.agent = 'bot';
      // One in twelve of the market and limit orders waits for the next opening or closing auction.
      if ((type === 'market' || type === 'limit') && r() < 1 / 12) o.tif = r() < 0.5 ? 'opg' : 'cls';
      // One in eight: a trailing stop, or linked (a bracket, an OTO or an OCO) with exits around the reference.
      const link = r();
      if (link < 0.04) {
        o.type = 'trailing_stop';
        o.price = o.stopPrice = undefined;
        o.tif = 'gtc';
        if (r() < 0.5) o.trailTicks = 1 + Math.floor(r() * ref * 0.003);
        else o.trailBps = 1 + Math.floor(r() * 50);
      } else if (link < 0.125) {
        const oco = link < 0.07;
        if (oco) Object.assign(o, { type: 'limit', price: undefined, stopPrice: undefined });
        else if (o.type !== 'market') Object.assign(o, { type: 'limit', stopPrice: undefined, price: o.price ?? Math.max(1, ref + off) });
        o.tif = 'gtc';
        // Exits of a long position sell: a buy entry's, or a sell OCO.
        const exitSide = oco ? o.side : o.side === 'buy' ? 'sell' : 'buy';
        const up = exitSide === 'sell' ? 1 : -1;
        const spread = Math.max(2, Math.round(ref * 0.001 * (1 + r() * 3)));
        const tp = newBookOrder({
          id: `${o.id}-tp`,
          owner: o.owner,
          agent: o.agent,
          side: exitSide,
          type: 'limit',
          tif: 'gtc',
          qty: o.qty,
          price: ref + up * spread,
        });
        const sl = newBookOrder({
          id: `${o.id}-sl`,
          owner: o.owner,
          agent: o.agent,
          side: exitSide,
          type: 'stop',
          tif: 'gtc',
          qty: o.qty,
          stopPrice: ref - up * spread,
        });
        if (oco) {
          o.price = tp.price;
          o.sibling = sl;
          sl.sibling = o;
          orders.push(sl);
          pairs.push([o, sl]);
        } else {
          const legs = link < 0.1 ? [tp, sl] : [r() < 0.5 ? tp : sl];
          for (const l of legs) l.status = 'held';
          if (legs.length === 2) {
            tp.sibling = sl;
            sl.sibling = tp;
            pairs.push([tp, sl]);
          }
          o.legs = legs;
          orders.push(...legs);
          entries.push([o, legs]);
        }
      }
      orders.push(o);
      check(book.submit(o, hooks).fills);
      if (r() < 0.1 && orders.length) check(book.cancel(orders[Math.floor(r() * orders.length)]!.id, undefined, undefined, hooks)?.fills ?? []);
      const bid = book.bestBid();
      const ask = book.bestAsk();
      if (bid !== undefined && ask !== undefined && bid >= ask) problems.push(`crossed after ${o.id}`);
    }
    let refused = 0;
    for (const o of orders) {
      if (o.filled > o.qty || (o.status === 'filled') !== (o.filled === o.qty)) problems.push(`${o.id} filled ${o.filled} of ${o.qty} (${o.status})`);
      // No fill lost or doubled: what the order says it filled is what its fills say.
      const seen = filledBy.get(o) ?? { qty: 0, notional: 0 };
      if (seen.qty !== o.filled || seen.notional !== o.notional)
        problems.push(`${o.id} filled ${o.filled} (${o.notional}), its fills ${seen.qty} (${seen.notional})`);
      // Refused when it went on: never executed.
      if (o.reason?.startsWith('trading_limit_exceeded')) {
        refused++;
        if (o.filled > 0 || o.status !== 'rejected' || o.agent !== 'bot')
          problems.push(`${o.id} refused by the limits, yet ${o.status} with ${o.filled} filled`);
      }
    }
    // Never both legs of an OCO; a bracket's legs never for more than the entry filled, and live only once it closed.
    for (const [a, b] of pairs) if (a.filled > 0 && b.filled > 0) problems.push(`both legs of ${a.id} / ${b.id} filled`);
    for (const [e, legs] of entries)
      for (const l of legs) {
        if (l.filled > e.filled) problems.push(`${l.id} filled ${l.filled}, its entry ${e.filled}`);
        const entryOpen = e.status === 'new' || e.status === 'partially_filled';
        if (entryOpen !== (l.status === 'held')) problems.push(`${l.id} is ${l.status} while its entry is ${e.status}`);
      }
    expect(pairs.length).toBeGreaterThan(500);
    // The auctions traded, and the limits refused orders that waited (legs, stops, auction orders) as they went on.
    expect(auctions).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(50);
    expect(
      new Set(
        orders
          .filter((o) => o.reason?.startsWith('trading_limit'))
          .map((o) => (o.parent ? 'leg' : o.tif === 'opg' || o.tif === 'cls' ? 'auction' : o.type)),
      ),
    ).toEqual(new Set(['leg', 'auction', 'stop', 'stop_limit', 'trailing_stop']));
    expect(pairs.some(([a, b]) => a.filled > 0 || b.filled > 0)).toBe(true);
    expect(problems).toEqual([]);
    // What the users bought, the market maker sold: quantities sum to zero.
    const total = [...bought.values()].reduce((s, v) => s + v, 0);
    expect(total).toBe(0);
    expect(bought.get(MARKET_MAKER)).toBeDefined();
    // What the users paid, the market maker received (tick·lots): cash sums to zero.
    expect([...cash.values()].reduce((s, v) => s + v, 0)).toBe(0);
  });
});

describe('through the API, on real storage', () => {
  let t: TestStack;
  beforeAll(async () => {
    // The reference steps every 40 ms, so the market maker requotes through resting orders as well.
    // A compressed trading day of 3 s: the equities' opening and closing auctions come every 1.5 s among the orders.
    t = await startTestStack({
      SVC_TRADING_PAPER_TICK_MS: '40',
      SVC_TRADING_PAPER_CASH: '50000',
      SVC_TRADING_ALPACA_URL: 'off',
      SVC_TRADING_PAPER_SESSION_CYCLE_MS: '3000',
    });
  }, 60_000);
  afterAll(() => t?.stop());

  test('after 2,000 random orders (notional, fractional, linked and auction ones among them), cash and positions changed only by fills and fees, holds match open orders, and the order updates account for every fill', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) keys.push((await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `Trader ${i}` })).body.key);
    const r = rng(11);
    const symbols = ['BTC/USD', 'ETH/USD', 'AAPL', 'SPY'];
    const ref: Record<string, number> = { 'BTC/USD': 60000, 'ETH/USD': 3000, AAPL: 190, SPY: 520 };
    // Quantities up to about $1,200 worth, with any of the 6 decimals the lot size (0.000001) allows: fractional shares too.
    const most: Record<string, number> = { 'BTC/USD': 0.02, 'ETH/USD': 0.4, AAPL: 6, SPY: 2.4 };
    const statuses = new Map<number, number>();
    const placed: Array<{ key: string; id: string }> = [];
    let n = 0;
    const worker = async () => {
      while (n < 2000) {
        n++;
        const key = keys[Math.floor(r() * keys.length)]!;
        const symbol = symbols[Math.floor(r() * symbols.length)]!;
        const side = r() < 0.5 ? 'buy' : 'sell';
        const kind = r();
        const type = kind < 0.35 ? 'market' : kind < 0.85 ? 'limit' : kind < 0.93 ? 'stop' : 'stop_limit';
        const px = (x: number) => (Math.round(x * 100) / 100).toFixed(2);
        const off = (r() - 0.5) * ref[symbol]! * 0.004;
        const body: Record<string, unknown> = {
          symbol,
          side,
          type,
          qty: Math.max(0.000001, r() * most[symbol]!).toFixed(6),
          timeInForce: (['gtc', 'day', 'ioc', 'fok'] as const)[Math.floor(r() * 4)],
        };
        // A market order for an amount of USD instead, one in three.
        if (type === 'market' && r() < 0.35) {
          delete body.qty;
          body.notional = (0.5 + r() * 1500).toFixed(2);
          body.timeInForce = (['gtc', 'day', 'ioc'] as const)[Math.floor(r() * 3)];
        }
        if (type === 'limit' || type === 'stop_limit') body.price = px(ref[symbol]! + off);
        if (type === 'stop' || type === 'stop_limit') body.stopPrice = px(ref[symbol]! + (side === 'buy' ? 1 : -1) * Math.abs(off));
        // One in six: a trailing stop, or a linked order (docs/trading.md, "Linked orders") with exits around the reference.
        const link = r();
        if (link < 1 / 6) linked(body, link * 6, ref[symbol]!, r, px);
        // One in ten of the equities' market and limit orders waits for the next opening or closing auction.
        else if (!symbol.includes('/') && (type === 'market' || type === 'limit') && body.qty !== undefined && r() < 0.1)
          body.timeInForce = r() < 0.5 ? 'opg' : 'cls';
        const res = await t.call('POST', '/trading/order', { key, body });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 201) placed.push({ key, id: res.body.id }, ...res.body.legs.map((l: any) => ({ key, id: l.id })));
        else expect([422]).toContain(res.status);
        if (res.status === 422) expect(['insufficient_balance', 'notional_too_small', 'self_trade_prevented']).toContain(res.body.error.code);
        if (r() < 0.08 && placed.length) {
          const victim = placed[Math.floor(r() * placed.length)]!;
          const c = await t.call('POST', '/trading/cancel', { key: victim.key, body: { orderId: victim.id } });
          expect([200, 409]).toContain(c.status);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(statuses.get(201)).toBeGreaterThan(1000);

    const fees = { taker: 10n, maker: 5n };
    let linkedSeen = 0;
    let auctionFilled = 0;
    for (const key of keys) {
      const fills: any[] = [];
      let cursor: string | null = null;
      do {
        const page: any = (await t.ok('GET', `/trading/fills?limit=200${cursor ? `&cursor=${cursor}` : ''}`, key)).body;
        fills.push(...page.fills);
        cursor = page.nextCursor;
      } while (cursor);
      const orders: any[] = [];
      cursor = null;
      do {
        const page: any = (await t.ok('GET', `/trading/orders?limit=200${cursor ? `&cursor=${cursor}` : ''}`, key)).body;
        orders.push(...page.orders);
        cursor = page.nextCursor;
      } while (cursor);
      const acct = (await t.ok('POST', '/trading/account', key, { venue: 'paper' })).body;
      const bal = (asset: string) => acct.balances.find((b: any) => b.asset === asset) ?? { total: '0', held: '0' };

      // Cash: the starting cash, minus what was bought, plus what was sold, minus every fee.
      let cash = units('50000');
      const position = new Map<string, bigint>();
      const filledByOrder = new Map<string, bigint>();
      for (const f of fills) {
        const base = f.symbol.split('/')[0];
        const sign = f.side === 'buy' ? 1n : -1n;
        cash += -sign * units(f.notional) - units(f.fee);
        position.set(base, (position.get(base) ?? 0n) + sign * units(f.qty));
        filledByOrder.set(f.orderId, (filledByOrder.get(f.orderId) ?? 0n) + units(f.qty));
        // Each fee is the fill's rate on its notional, rounded up to a unit.
        const rate = f.liquidity === 'taker' ? fees.taker : fees.maker;
        expect(units(f.fee)).toBe((units(f.notional) * rate + 9999n) / 10000n);
      }
      expect(units(bal('USD').total)).toBe(cash);
      for (const base of ['BTC', 'ETH', 'AAPL', 'SPY']) expect([base, units(bal(base).total)]).toEqual([base, position.get(base) ?? 0n]);

      // Every order's filled quantity is the sum of its fills, never more than its quantity.
      let heldUsd = 0n;
      const heldBase = new Map<string, bigint>();
      const worstPrice = new Map<string, bigint>();
      for (const f of fills) if (units(f.price) > (worstPrice.get(f.orderId) ?? 0n)) worstPrice.set(f.orderId, units(f.price));
      for (const o of orders) {
        expect([o.id, units(o.filledQty)]).toEqual([o.id, filledByOrder.get(o.id) ?? 0n]);
        if ((o.timeInForce === 'opg' || o.timeInForce === 'cls') && units(o.filledQty) > 0n) auctionFilled++;
        expect(units(o.filledQty) <= units(o.qty)).toBe(true);
        if (o.notional !== null) {
          // Never over its notional; filled, what is left would not pay for one more lot (0.000001) at the highest price it paid.
          expect([o.id, units(o.filledNotional) <= units(o.notional)]).toEqual([o.id, true]);
          expect(o.qty).toBe(o.filledQty);
          if (o.status === 'filled')
            expect([o.id, units(o.notional) - units(o.filledNotional) < worstPrice.get(o.id)! / 10n ** 6n]).toEqual([o.id, true]);
          else expect([o.id, o.status, o.reason]).toEqual([o.id, 'expired', expect.stringMatching(/^(no_liquidity|self_trade_prevented)$/)]);
        }
        if (o.status !== 'new' && o.status !== 'partially_filled') continue;
        // An OCO's waiting stop leg holds nothing while its other leg is open (that one holds).
        const partner = o.linkedOrderId && orders.find((x) => x.id === o.linkedOrderId);
        if (partner && /stop/.test(o.type) && ['new', 'partially_filled'].includes(partner.status)) continue;
        const left = units(o.qty) - units(o.filledQty);
        if (o.side === 'sell') heldBase.set(o.symbol.split('/')[0], (heldBase.get(o.symbol.split('/')[0]) ?? 0n) + left);
        else if (o.price !== null) {
          const cost = (left * units(o.price)) / 10n ** 9n;
          heldUsd += cost + (cost * fees.taker + 9999n) / 10000n;
        }
      }
      // Never both legs of an OCO filled; a leg never for more than its entry filled, held exactly while the entry is open.
      const byId = new Map(orders.map((o) => [o.id, o]));
      for (const o of orders) {
        const partner = o.linkedOrderId ? byId.get(o.linkedOrderId) : undefined;
        if (partner) expect([o.id, units(o.filledQty) > 0n && units(partner.filledQty) > 0n]).toEqual([o.id, false]);
        const entry = o.parentOrderId ? byId.get(o.parentOrderId) : undefined;
        if (entry && entry.orderClass !== 'oco') {
          linkedSeen++;
          expect([o.id, units(o.filledQty) <= units(entry.filledQty)]).toEqual([o.id, true]);
          expect([o.id, o.status === 'held']).toEqual([o.id, ['new', 'partially_filled'].includes(entry.status)]);
        }
      }
      // Holds are exactly what the open orders need.
      expect(units(bal('USD').held)).toBe(heldUsd);
      for (const base of ['BTC', 'ETH', 'AAPL', 'SPY']) expect([base, units(bal(base).held)]).toEqual([base, heldBase.get(base) ?? 0n]);
      expect(units(bal('USD').total) >= units(bal('USD').held)).toBe(true);

      // The order updates: numbered 1, 2, 3, … without a gap; every fill once, as a fill event.
      const events: any[] = [];
      let after = 0;
      for (;;) {
        const page: any = (await t.ok('GET', `/trading/events?after=${after}&limit=200`, key)).body;
        events.push(...page.events);
        if (page.nextAfter === null) break;
        after = page.nextAfter;
      }
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const fillEvents = events.filter((e) => e.fill !== null);
      expect(fillEvents.length).toBe(fills.length);
      expect(fillEvents.map((e) => [e.order.id, e.fill.qty, e.fill.notional, e.fill.fee]).sort()).toEqual(
        fills.map((f) => [f.orderId, f.qty, f.notional, f.fee]).sort(),
      );
      // Each update's balances: the starting cash moved by every fill up to the end of its step (the
      // updates that follow it with the same balances), to the unit; the last ones are the account's.
      const running: Array<Map<string, bigint>> = [];
      const totals = new Map<string, bigint>([['USD', units('50000')]]);
      for (const e of events) {
        if (e.fill) {
          const base = e.symbol.split('/')[0];
          const sign = e.order.side === 'buy' ? 1n : -1n;
          totals.set('USD', totals.get('USD')! - sign * units(e.fill.notional) - units(e.fill.fee));
          totals.set(base, (totals.get(base) ?? 0n) + sign * units(e.fill.qty));
        }
        running.push(new Map(totals));
      }
      for (let i = 0; i < events.length; i++) {
        let j = i;
        while (
          j + 1 < events.length &&
          events[j + 1].symbol === events[i].symbol &&
          JSON.stringify(events[j + 1].balances) === JSON.stringify(events[i].balances)
        )
          j++;
        for (const b of events[i].balances)
          expect([events[i].seq, b.asset, units(b.total)]).toEqual([events[i].seq, b.asset, running[j]!.get(b.asset) ?? 0n]);
      }
      const last = new Map<string, any>();
      for (const e of events) for (const b of e.balances) last.set(b.asset, b);
      for (const [asset, b] of last) expect([asset, b.total, b.held]).toEqual([asset, bal(asset).total, bal(asset).held]);
    }
    expect(linkedSeen).toBeGreaterThan(50);
    expect(auctionFilled).toBeGreaterThan(10);
  }, 300_000);
});

/**
 * Makes a random order body a trailing stop or a linked order whose prices fit together: a long
 * position's exits (a buy entry's legs, a sell OCO) take profit above the reference and stop below it.
 */
function linked(body: Record<string, unknown>, u: number, ref: number, r: () => number, px: (x: number) => string): void {
  const tif = r() < 0.5 ? 'gtc' : 'day';
  body.timeInForce = tif;
  if (body.notional !== undefined) {
    body.qty = '0.01';
    delete body.notional;
  }
  delete body.price;
  delete body.stopPrice;
  if (u < 0.25) {
    body.type = 'trailing_stop';
    if (r() < 0.5) body.trailPrice = px(ref * (0.0005 + r() * 0.003));
    else body.trailPercent = (0.05 + r() * 0.4).toFixed(2);
    return;
  }
  const orderClass = u < 0.5 ? 'oco' : u < 0.8 ? 'bracket' : 'oto';
  body.orderClass = orderClass;
  const long = orderClass === 'oco' ? body.side === 'sell' : body.side === 'buy';
  const up = long ? 1 : -1;
  const spread = ref * (0.001 + r() * 0.003);
  body.takeProfit = { price: px(ref + up * spread) };
  // A stop, a stop limit, or a trailing stop-loss (its trail about the spread).
  const sl = r();
  body.stopLoss =
    sl < 0.55
      ? { stopPrice: px(ref - up * spread) }
      : sl < 0.8
        ? { stopPrice: px(ref - up * spread), price: px(ref - up * spread * 1.5) }
        : { trailPrice: px(spread) };
  if (orderClass === 'oco') body.type = 'limit';
  else {
    body.type = r() < 0.5 ? 'market' : 'limit';
    if (body.type === 'limit') body.price = px(ref + up * spread * (r() - 0.5));
    if (orderClass === 'oto') delete body[r() < 0.5 ? 'takeProfit' : 'stopLoss'];
  }
}
