#!/usr/bin/env node
'use strict';
// Trading (docs/trading.md), measured in one run on one machine:
//   1. the matching engine alone, in this process on one core: orders per second and the p99 time
//      of one submission, on a book the seeded market maker keeps liquid, with a mix of market,
//      limit (resting and crossing), ioc/fok and stop orders and cancels; and the same mix with
//      linked orders (a fifth of the submissions brackets, OCOs and trailing stops, their legs
//      triggered, activated and cancelled by the engine), interleaved with it, as a ratio to it;
//   2. order placement through the gateway (POST /trading/order: auth, validation, gRPC, one
//      PostgreSQL transaction with the book's lock, fills and balances, events in the outbox)
//      against a bare express app that parses the same JSON body, with p50/p99: the whole platform
//      in one process, and (on real backends) the gateway, keys, accounts and trading as four
//      processes, the cluster's shape; with the CPU that PostgreSQL and NATS spend per order.
// Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
// Usage: node scripts/bench/trading.js [seconds=5] [rounds=3] [engineOrders=300000]
// TRADING_BENCH_CONNECTIONS (16,64,128): keep-alive connections, one order in flight on each, for
//   every target; a list runs every target at each count and also compares each target's peak rate
//   (bare express peaks with few connections; a book's group commit needs more orders in flight).
// TRADING_BENCH_SYMBOLS=all: orders over the paper venue's four symbols (default: all to AAPL).
// TRADING_BENCH_BASELINE=<another checkout, built> adds that checkout's stack to the same rounds
// (interleaved), for a before/after on a machine whose load moves.
// TRADING_BENCH_NODE_FLAGS="--flag ...": adds this checkout's stack run with those node flags to the
// same rounds (interleaved), e.g. a V8 heap setting; the stacks' peak resident memory is printed.
// TRADING_BENCH_ENGINE_ONLY=1: the engine's part only.
const { performance } = require('node:perf_hooks');

const { load, measure, startTarget } = require('./lib.js');

/** `linked`: a fifth of the submissions are brackets (8%), OCOs (8%) and trailing stops (4%). */
function engine(n, linked = false) {
  const { newBookOrder, OrderBook, PAPER_INSTRUMENTS, requote, specOf } = require('@svc/trading');
  const spec = specOf(PAPER_INSTRUMENTS.find((i) => i.symbol === 'ETH/USD'));
  const book = new OrderBook({ lastPrice: spec.params.startPrice });
  const maker = { step: 0, reference: spec.params.startPrice, quotes: [], placed: 0 };
  let a = 12345;
  const r = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  // Orders prepared first, so only the engine is timed.
  const orders = [];
  const owners = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const tifs = ['gtc', 'gtc', 'day', 'ioc', 'fok'];
  for (let i = 0; i < n; i++) {
    const side = r() < 0.5 ? 'buy' : 'sell';
    const k = r();
    const type = k < 0.25 ? 'market' : k < 0.95 ? 'limit' : k < 0.98 ? 'stop' : 'stop_limit';
    orders.push({
      side,
      type,
      k: r(),
      off: (r() - 0.5) * 0.003,
      qty: 1 + Math.floor(r() * 3000),
      owner: owners[i % owners.length],
      tif: tifs[Math.floor(r() * tifs.length)],
      cancel: r() < 0.1 ? Math.floor(r() * (i + 1)) : -1,
      link: linked ? r() : 1,
    });
  }
  let legs = 0;
  const times = new Float64Array(n);
  let fills = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const p = orders[i];
    const s = performance.now();
    if (i % 500 === 0) requote(book, maker, { seed: 1, symbol: spec.symbol, params: spec.params, step: i / 500 });
    const ref = maker.reference;
    const price = Math.max(1, Math.round(ref * (1 + p.off)));
    const o = newBookOrder({
      id: `o${i}`,
      owner: p.owner,
      side: p.side,
      type: p.type,
      tif: p.tif,
      qty: p.qty,
      price: p.type === 'limit' || p.type === 'stop_limit' ? price : undefined,
      stopPrice:
        p.type === 'stop' || p.type === 'stop_limit' ? Math.max(1, Math.round(ref * (1 + (p.side === 'buy' ? 1 : -1) * Math.abs(p.off)))) : undefined,
    });
    if (p.link < 0.2) legs += link(o, p, ref);
    fills += book.submit(o).fills.length;
    if (p.cancel >= 0) book.cancel(`o${p.cancel}`);
    times[i] = performance.now() - s;
  }
  const total = performance.now() - t0;
  times.sort();
  return {
    orders: n,
    legs,
    fills,
    perSecond: n / (total / 1000),
    p50us: times[Math.floor(n * 0.5)] * 1000,
    p99us: times[Math.floor(n * 0.99)] * 1000,
    resting: [...book.openOrders()].length,
  };
}

/**
 * Makes a prepared order linked (engine/book.ts, docs/trading.md "Linked orders"): a bracket (its
 * exits held, an OCO once live), an OCO (a take-profit with a stop leg) or a trailing stop; the
 * exits 0.2% either side of the reference. Answers the number of legs made.
 */
function link(o, p, ref) {
  const { newBookOrder } = require('@svc/trading');
  o.tif = 'gtc';
  if (p.link >= 0.16) {
    Object.assign(o, { type: 'trailing_stop', price: undefined, stopPrice: undefined, trailBps: 20 });
    return 0;
  }
  const oco = p.link < 0.08;
  if (oco || o.type !== 'market') Object.assign(o, { type: 'limit', stopPrice: undefined, price: o.price ?? Math.round(ref) });
  // Exits of a long position sell: a buy entry's, or a sell OCO.
  const exitSide = oco ? o.side : o.side === 'buy' ? 'sell' : 'buy';
  const up = exitSide === 'sell' ? 1 : -1;
  const leg = (suffix, type, at) =>
    newBookOrder({
      id: `${o.id}-${suffix}`,
      owner: o.owner,
      side: exitSide,
      type,
      tif: 'gtc',
      qty: o.qty,
      [type === 'limit' ? 'price' : 'stopPrice']: at,
    });
  const sl = leg('sl', 'stop', Math.round(ref * (1 - up * 0.002)));
  if (oco) {
    o.price = Math.round(ref * (1 + up * 0.002));
    o.sibling = sl;
    sl.sibling = o;
    return 1;
  }
  const tp = leg('tp', 'limit', Math.round(ref * (1 + up * 0.002)));
  tp.status = sl.status = 'held';
  tp.sibling = sl;
  sl.sibling = tp;
  o.legs = [tp, sl];
  return 2;
}

async function main() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 3);
  const engineOrders = Number(process.argv[4] ?? 300_000);
  // Orders in flight (one per keep-alive connection): a book's orders commit in groups, so more in flight fill bigger groups.
  const counts = (process.env.TRADING_BENCH_CONNECTIONS ?? '16,64,128').split(',').map(Number);
  if (!counts.length || counts.some((c) => !Number.isInteger(c) || c < 1))
    throw new Error('TRADING_BENCH_CONNECTIONS: positive integers, comma-separated');

  engine(50_000); // warm-up
  engine(50_000, true);
  // Plain and linked interleaved, so that a change in the machine's load falls on both alike.
  const plain = [];
  const withLinks = [];
  for (let i = 0; i < 3; i++) {
    plain.push(engine(engineOrders));
    withLinks.push(engine(engineOrders, true));
  }
  const mid = (runs) => runs.sort((x, y) => x.perSecond - y.perSecond)[1];
  const e = mid(plain);
  const l = mid(withLinks);
  console.log('## Matching engine alone (one core, in process)');
  console.log(`${e.orders} orders, ${e.fills} fills, ${e.resting} resting at the end (median of 3 runs)`);
  console.log(`orders/s: ${e.perSecond.toFixed(0)}   p50: ${e.p50us.toFixed(2)} µs   p99: ${e.p99us.toFixed(2)} µs per order`);
  console.log(`\n## The same with linked orders (a fifth brackets, OCOs and trailing stops; median of 3 runs, interleaved)`);
  console.log(`${l.orders} orders with ${l.legs} legs, ${l.fills} fills, ${l.resting} resting at the end`);
  console.log(
    `orders/s: ${l.perSecond.toFixed(0)} (${((l.perSecond / e.perSecond) * 100).toFixed(0)}% of the plain mix)   p50: ${l.p50us.toFixed(2)} µs   p99: ${l.p99us.toFixed(2)} µs per order`,
  );
  if (process.env.TRADING_BENCH_ENGINE_ONLY) return;

  const env = { SVC_TRADING_PAPER_CASH: '100000000000', SVC_TRADING_PAPER_TICK_MS: '100', SVC_TRADING_ALPACA_URL: 'off' };
  const bare = await startTarget('express-json');
  const stack = await startTarget('stack', env);
  const order = { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' };
  // TRADING_BENCH_SYMBOLS=all: each connection's orders go to one of the paper venue's symbols in
  // turn (its books commit in parallel); by default every order goes to one book, AAPL's.
  const allSymbols = process.env.TRADING_BENCH_SYMBOLS === 'all';
  const body = allSymbols
    ? ['AAPL', 'SPY', 'BTC/USD', 'ETH/USD'].map((symbol) => ({ ...order, symbol, qty: symbol.includes('/') ? '0.01' : '1' }))
    : order;
  // The cluster's shape: the gateway and the services an order reaches as separate processes,
  // gRPC over loopback TCP (on real backends only: embedded ones live in one process).
  const split = process.env.DATABASE_URL ? await startTarget('split', { ...env, BENCH_SPLIT: 'keys,accounts,trading' }) : undefined;
  const specs = [
    ['express (bare, parses the same JSON, 201)', bare, '/x', {}],
    ['gateway POST /trading/order (market order, paper venue)', stack, '/trading/order', { authorization: `Bearer ${stack.key}` }],
    ...(split ? [['the same, gateway/keys/accounts/trading as 4 processes', split, '/trading/order', { authorization: `Bearer ${split.key}` }]] : []),
  ];
  const baselineDir = process.env.TRADING_BENCH_BASELINE;
  if (baselineDir) {
    const base = await require(require('node:path').resolve(baselineDir, 'scripts/bench/lib.js')).startTarget('stack', env);
    specs.push([`the same, ${baselineDir}'s stack`, base, '/trading/order', { authorization: `Bearer ${base.key}` }]);
  }
  const nodeFlags = process.env.TRADING_BENCH_NODE_FLAGS;
  if (nodeFlags) {
    const flagged = await startTarget('stack', env, nodeFlags.split(' '));
    specs.push([`the same, node ${nodeFlags}`, flagged, '/trading/order', { authorization: `Bearer ${flagged.key}` }]);
  }
  // Peak resident memory (VmHWM) of each one-process target, read before it stops.
  const peakRss = (pid) => {
    try {
      return Number(/VmHWM:\s+(\d+)/.exec(require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
    } catch {
      return undefined;
    }
  };
  const peakMemory = new Map();
  // results[count][target]: every target at every count in each round (interleaved, so a change in
  // the machine's load falls on all of them alike).
  const results = counts.map(() => specs.map(() => []));
  try {
    for (const [, t, path, headers] of specs) await load({ port: t.port, path, headers, seconds: 2, method: 'POST', body, okStatus: 201 });
    for (let round = 0; round < rounds; round++) {
      for (const [c, connections] of counts.entries()) {
        for (let i = 0; i < specs.length; i++) {
          const [name, t, path, headers] = specs[i];
          const r = await measure(t, path, headers, seconds, { method: 'POST', body, okStatus: 201, connections, backends: i > 0 });
          if (r.errors) throw new Error(`${name}: ${r.errors} failed requests (statuses ${r.statuses})`);
          results[c][i].push(r);
        }
      }
    }
  } finally {
    for (const [name, t] of specs) {
      if (t !== split && t !== bare) peakMemory.set(name, peakRss(t.pid));
      await t.stop();
    }
  }
  const median = (rs) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)];
  const backendCell = (b) => (b ? `${b.postgres.toFixed(0)}, ${b['nats-server'].toFixed(0)}` : ''); // none off Linux
  const table = counts.map((connections, c) => ({ connections, rows: specs.map(([name], i) => ({ name, ...median(results[c][i]) })) }));
  for (const { connections, rows } of table) {
    console.log(
      `\n## Order placement, ${connections} connections (median of ${rounds} rounds of ${seconds}s, ${allSymbols ? 'orders over 4 symbols' : 'one symbol'}; backends: ${JSON.stringify(stack.backends)})`,
    );
    console.log('| target | orders/s | p50 ms | p99 ms | CPU µs/req | PostgreSQL, NATS µs/req | CPU stolen | vs express |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows)
      console.log(
        `| ${r.name} | ${r.rps.toFixed(0)} | ${(r.p50 / 1000).toFixed(2)} | ${(r.p99 / 1000).toFixed(2)} | ${r.cpuPerRequestUs.toFixed(0)} | ${backendCell(r.backendUs)} | ${r.stealPct === undefined ? '' : `${r.stealPct.toFixed(0)}%`} | ${((r.rps / rows[0].rps) * 100).toFixed(0)}% |`,
      );
    const perProcess = rows.find((r) => r.perProcessUs)?.perProcessUs;
    if (perProcess)
      console.log(
        `\n4 processes, CPU µs per order by process: ${Object.entries(perProcess)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(', ')}`,
      );
  }
  if (peakMemory.size)
    console.log(
      `\npeak resident memory: ${[...peakMemory]
        .filter(([, mib]) => mib !== undefined)
        .map(([name, mib]) => `${name} ${mib.toFixed(0)} MiB`)
        .join('; ')}`,
    );
  if (counts.length > 1) {
    // Each target at the count where its median rate was highest: a server's rate is what it
    // sustains when kept busy, and the two reach theirs at different depths.
    const peaks = specs.map(([name], i) => {
      const best = table.reduce((a, b) => (b.rows[i].rps > a.rows[i].rps ? b : a));
      return { name, connections: best.connections, ...best.rows[i] };
    });
    console.log(`\n## Peak rates (each target's best median over ${counts.join(', ')} connections)`);
    console.log('| target | connections | orders/s | p50 ms | p99 ms | vs express peak |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const p of peaks)
      console.log(
        `| ${p.name} | ${p.connections} | ${p.rps.toFixed(0)} | ${(p.p50 / 1000).toFixed(2)} | ${(p.p99 / 1000).toFixed(2)} | ${((p.rps / peaks[0].rps) * 100).toFixed(0)}% |`,
      );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
