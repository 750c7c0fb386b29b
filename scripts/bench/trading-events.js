#!/usr/bin/env node
// Order updates to a live stream (docs/trading.md, "Order updates"): how long after its commit an
// order's update reaches a client of `GET /trading/events` as text/event-stream (issue 39's target:
// p99 ≤ 20 ms). The stack runs as its own process; one client holds the stream open and places
// BENCH_ORDERS (300) paper limit orders one at a time, resting below the market (each an
// `accepted` update). The commit happens between the request being sent and its answer, so each
// order's delay is given three ways: from the answer (a lower bound of the delay after the commit),
// from the update's createdAt (the time its book's group took for it, before the write and the
// commit: an upper bound) and from the request (a looser upper bound).
//
//   npm run build && node scripts/bench/trading-events.js       # embedded backends
//   DATABASE_URL=… REDIS_URL=… NATS_URL=… node scripts/bench/trading-events.js
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { api, freePort, freshDatabase, readEvents } = require('./lib.js');

const ROOT = path.resolve(__dirname, '..', '..');
const ORDERS = Number(process.env.BENCH_ORDERS ?? 300);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function main() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-trading-events-'));
  const bootstrap = `svc_${randomBytes(32).toString('hex')}`;
  const db = await freshDatabase();
  const child = spawn(process.execPath, ['./apps/stack/dist/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: 'warn',
      SVC_TRADING_ALPACA_URL: 'off',
      SVC_SERVICE: 'all',
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
      SVC_BOOTSTRAP_KEY: bootstrap,
      SVC_RATE_LIMITS: 'off',
      SVC_RATE_LIMITS_ACCOUNT: 'off',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}/v1`;
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/ready`)).ok) break;
      } catch {
        // not yet
      }
      if (i > 600) throw new Error('the stack did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const key = (await api(base, bootstrap, 'POST', '/accounts', { kind: 'user', name: 'bench' })).key;
    const book = await api(base, key, 'GET', '/trading/book?symbol=ETH%2FUSD');
    const price = (Number(book.bids[0].price) * 0.5).toFixed(2);

    const res = await fetch(`${base}/trading/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
    const arrived = new Map();
    const stream = readEvents(res, (e) => {
      if (e.type === 'accepted' && e.order) {
        arrived.set(e.order.id, { at: performance.now(), wall: performance.timeOrigin + performance.now(), createdAt: Date.parse(e.createdAt) });
      }
    });
    // Warm-up (not counted).
    for (let n = 0; n < 20; n++)
      await api(base, key, 'POST', '/trading/order', { symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '0.01', price });
    const placed = [];
    for (let n = 0; n < ORDERS; n++) {
      const t0 = performance.now();
      const o = await api(base, key, 'POST', '/trading/order', { symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '0.01', price });
      placed.push({ id: o.id, t0, t1: performance.now() });
    }
    const deadline = Date.now() + 10_000;
    while (placed.some((p) => !arrived.has(p.id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await stream.stop();
    const got = placed.filter((p) => arrived.has(p.id));
    const afterAnswer = got.map((p) => arrived.get(p.id).at - p.t1);
    const afterRequest = got.map((p) => arrived.get(p.id).at - p.t0);
    // The update's createdAt is the time its book's group took for it, before the group's write and
    // commit (the same machine's clock): a tighter upper bound than the request's start.
    const afterGroup = got.map((p) => arrived.get(p.id).wall - arrived.get(p.id).createdAt);
    const f = (xs) => `p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms, max ${Math.max(...xs).toFixed(2)} ms`;
    console.log(
      `trading events bench: node ${process.version}, ${os.cpus().length} CPUs, load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}; backends: ${db.url ? 'PostgreSQL' : 'embedded'}${process.env.NATS_URL ? ', NATS' : ''}`,
    );
    console.log(`${got.length} of ${ORDERS} orders' accepted updates received on the stream`);
    console.log(`  after the order's answer (lower bound of the delay after its commit): ${f(afterAnswer)}`);
    console.log(`  after the update's createdAt, its group's time before the commit (upper bound): ${f(afterGroup)}`);
    console.log(`  after the order was sent (a looser upper bound):                     ${f(afterRequest)}`);
    console.log(
      `  the order's own round trip: p50 ${pct(
        got.map((p) => p.t1 - p.t0),
        50,
      ).toFixed(2)} ms`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
