import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

import pg from 'pg';

import { createDatabase, randomName, REAL, tempDir } from '../support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';

// Two trading replicas (two platform processes on one PostgreSQL, each with its own gateway and
// trading service) under concurrent load on the same books: no order filled twice, no fill lost.
// Then one replica is killed with SIGKILL under load: every acknowledged order and fill is there,
// and the balances still add up; so do the accounts' order updates. Several processes need a shared database: real PostgreSQL only
// (CI sets DATABASE_URL; the embedded database belongs to one process).
const maybe = REAL.pg ? describe : describe.skip;

maybe('two trading replicas on one database', () => {
  let db: { url: string; drop(): Promise<void> };
  let client: pg.Client;
  const bootstrap = `svc_${randomBytes(32).toString('hex')}`;
  const namespace = randomName('t');
  const replicas: Array<{ port: number; dir: string; child: ReturnType<typeof spawnSvc> }> = [];

  async function start(i: number): Promise<void> {
    const port = replicas[i]?.port ?? (await freePort());
    const dir = replicas[i]?.dir ?? tempDir('svc-trading-rep-');
    const child = spawnSvc({
      SVC_SERVICE: 'all',
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_NAMESPACE: namespace,
      SVC_BOOTSTRAP_KEY: bootstrap,
      DATABASE_URL: db.url,
      ...(REAL.nats ? { NATS_URL: REAL.nats } : {}),
      SVC_TRADING_PAPER_TICK_MS: '200',
      SVC_TRADING_ALPACA_URL: 'off',
    });
    replicas[i] = { port, dir, child };
    await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/ready`)).ok ? true : undefined), 60_000, `replica ${i}`).catch((err) => {
      throw new Error(`${(err as Error).message}\n${child.output()}`);
    });
  }

  beforeAll(async () => {
    db = await createDatabase(REAL.pg!);
    await start(0);
    await start(1);
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    for (const r of replicas) {
      if (r.child.exitCode === null && r.child.signalCode === null) {
        r.child.kill('SIGTERM');
        await exitCode(r.child);
      }
      fs.rmSync(r.dir, { recursive: true, force: true });
    }
    await db?.drop();
  });

  async function call(i: number, method: string, path: string, key: string, body?: unknown) {
    const res = await fetch(`http://127.0.0.1:${replicas[i]!.port}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  const keys: string[] = [];
  /** Orders as acknowledged (201 or 200): they must all be there afterwards, with at least these fills. */
  const acked = new Map<string, { filledQty: number }>();

  /** Random orders against both replicas (or one), `n` of them, 8 at a time. */
  async function load(n: number, replicasToUse: number[], stopWhen?: () => boolean) {
    let i = 0;
    let failures = 0;
    const worker = async (w: number) => {
      while (i < n && !stopWhen?.()) {
        i++;
        const key = keys[(i + w) % keys.length]!;
        const symbol = ['ETH/USD', 'AAPL'][i % 2]!;
        const side = Math.random() < 0.5 ? 'buy' : 'sell';
        const market = Math.random() < 0.5;
        const ref = symbol === 'AAPL' ? 190 : 3000;
        const body = {
          symbol,
          side,
          type: market ? 'market' : 'limit',
          qty: symbol === 'AAPL' ? String(1 + Math.floor(Math.random() * 5)) : (0.05 + Math.floor(Math.random() * 20) / 100).toFixed(2),
          ...(market ? {} : { price: (ref * (1 + (Math.random() - 0.5) * 0.004)).toFixed(2) }),
          clientOrderId: `load-${randomBytes(6).toString('hex')}`,
        };
        const at = replicasToUse[(i + w) % replicasToUse.length]!;
        try {
          const res = await call(at, 'POST', '/trading/order', key, body);
          if (res.status === 201 || res.status === 200) acked.set(res.body.id, { filledQty: Number(res.body.filledQty) });
          else if (res.status !== 422) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
        } catch (err) {
          if (!stopWhen) throw err;
          failures++; // the replica died under it: not acknowledged
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
    return failures;
  }

  /** Every acknowledged order is there; fills are each recorded once; balances are the starting cash moved by fills and fees. */
  async function verify() {
    const dup = await client.query(
      `SELECT symbol, seq, liquidity, count(*) FROM trading.fills GROUP BY symbol, seq, liquidity, order_id HAVING count(*) > 1`,
    );
    expect(dup.rows).toEqual([]);
    const orders = new Map(
      (await client.query(`SELECT id, qty::float8 AS qty, filled_qty::float8 AS filled FROM trading.orders`)).rows.map((r) => [r.id, r]),
    );
    const filled = new Map(
      (await client.query(`SELECT order_id, sum(qty)::float8 AS q FROM trading.fills GROUP BY order_id`)).rows.map((r) => [r.order_id, r.q]),
    );
    for (const [id, a] of acked) {
      const o = orders.get(id);
      expect([id, o !== undefined]).toEqual([id, true]);
      expect(o.filled + 1e-9).toBeGreaterThanOrEqual(a.filledQty);
    }
    for (const [id, o] of orders) {
      expect([id, Math.abs((filled.get(id) ?? 0) - o.filled) < 1e-9]).toEqual([id, true]);
      expect(o.filled).toBeLessThanOrEqual(o.qty);
    }
    // Cash and positions: starting cash plus the fills' flows, to the unit (numeric arithmetic in SQL).
    const off = await client.query(`
      WITH flows AS (
        SELECT account_id, 'USD' AS asset, sum(CASE side WHEN 'buy' THEN -notional ELSE notional END - fee) AS amount FROM trading.fills GROUP BY account_id
        UNION ALL
        SELECT account_id, split_part(symbol, '/', 1), sum(CASE side WHEN 'buy' THEN qty ELSE -qty END) FROM trading.fills GROUP BY account_id, split_part(symbol, '/', 1)
      ), expected AS (
        SELECT f.account_id, f.asset, f.amount * 1000000000 + CASE f.asset WHEN 'USD' THEN p.starting_cash ELSE 0 END AS units
        FROM flows f JOIN trading.paper_accounts p ON p.account_id = f.account_id
      )
      SELECT e.account_id, e.asset, e.units, b.total FROM expected e LEFT JOIN trading.balances b ON b.account_id = e.account_id AND b.asset = e.asset
      WHERE b.total IS DISTINCT FROM e.units`);
    expect(off.rows).toEqual([]);
    const negative = await client.query(`SELECT * FROM trading.balances WHERE total < held OR held < 0`);
    expect(negative.rows).toEqual([]);
    // The order updates, written by both replicas: each account's numbered 1…n without a gap (n its last seq),
    // every fill once as an update, and each asset's latest update holding the account's balance.
    const gaps = await client.query(
      `SELECT e.account_id, count(*)::int AS n, min(e.seq)::int AS first, max(e.seq)::int AS last, s.last_seq::int AS counter
       FROM trading.events e JOIN trading.event_seqs s ON s.account_id = e.account_id GROUP BY e.account_id, s.last_seq
       HAVING count(*) <> max(e.seq) OR min(e.seq) <> 1 OR max(e.seq) <> s.last_seq`,
    );
    expect(gaps.rows).toEqual([]);
    const fillUpdates = await client.query(
      `WITH u AS (SELECT order_id, count(*) AS n, sum((data->'fill'->>'qty')::numeric) AS q FROM trading.events WHERE data ? 'fill' GROUP BY order_id),
         f AS (SELECT order_id, count(*) AS n, sum(qty) AS q FROM trading.fills GROUP BY order_id)
       SELECT * FROM f FULL JOIN u USING (order_id) WHERE f.n IS DISTINCT FROM u.n OR f.q IS DISTINCT FROM u.q`,
    );
    expect(fillUpdates.rows).toEqual([]);
    const stale = await client.query(
      `WITH b AS (SELECT e.account_id, e.seq, x->>'asset' AS asset, (x->>'total')::numeric AS total, (x->>'held')::numeric AS held
                  FROM trading.events e, jsonb_array_elements(e.balances) x WHERE e.balances IS NOT NULL),
         latest AS (SELECT DISTINCT ON (account_id, asset) * FROM b ORDER BY account_id, asset, seq DESC)
       SELECT l.*, r.total AS now_total, r.held AS now_held FROM latest l
       LEFT JOIN trading.balances r ON r.account_id = l.account_id AND r.venue = 'paper' AND r.asset = l.asset
       WHERE coalesce(r.total, 0) <> l.total OR coalesce(r.held, 0) <> l.held`,
    );
    expect(stale.rows).toEqual([]);
  }

  test('concurrent load through both replicas: no double fill, no lost fill', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await call(i % 2, 'POST', '/accounts', bootstrap, { kind: 'user', name: `Trader ${i}` });
      expect(res.status).toBe(201);
      keys.push(res.body.key);
    }
    await load(400, [0, 1]);
    expect(acked.size).toBeGreaterThan(200);
    await verify();
  }, 120_000);

  test('SIGKILL of one replica under load loses no acknowledged order or fill', async () => {
    const before = acked.size;
    let killed = false;
    const loadDone = load(100_000, [0, 1], () => killed && acked.size > before + 200);
    await waitFor(async () => (acked.size > before + 100 ? true : undefined), 60_000, 'orders under load');
    replicas[0]!.child.kill('SIGKILL');
    killed = true;
    await exitCode(replicas[0]!.child);
    await loadDone;
    await verify();
    // The killed replica comes back on the same database and takes orders on the same books.
    await start(0);
    const res = await call(0, 'POST', '/trading/order', keys[0]!, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' });
    expect(res.status).toBe(201);
    acked.set(res.body.id, { filledQty: Number(res.body.filledQty) });
    await verify();
  }, 180_000);

  // After verify's last use: a reset restores the cash, which its sums do not follow.
  test('an account reset through one replica: the other, which saw it before, trades it at its new epoch', async () => {
    const x = await call(0, 'POST', '/accounts', bootstrap, { kind: 'user', name: 'Reset elsewhere' });
    expect(x.status).toBe(201);
    const key = x.body.key as string;
    // Replica 0 sees the account (its USD and ETH), and holds the AAPL book as it is stored.
    expect((await call(0, 'POST', '/trading/order', key, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '0.05' })).status).toBe(201);
    expect((await call(0, 'POST', '/trading/order', keys[1]!, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' })).status).toBe(201);
    expect((await call(0, 'POST', '/trading/order', keys[1]!, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' })).status).toBe(201);
    // Replica 1 resets it (no open orders: no book is written), then replica 0 places its order.
    expect((await call(1, 'POST', '/trading/reset', key, { venue: 'paper' })).status).toBeLessThan(300);
    const res = await call(0, 'POST', '/trading/order', key, { symbol: 'AAPL', side: 'buy', type: 'market', qty: '2' });
    expect(res.status).toBe(201);
    const fills = await client.query(
      `SELECT f.epoch, p.epoch AS current FROM trading.fills f JOIN trading.paper_accounts p ON p.account_id = f.account_id AND p.venue = f.venue
       WHERE f.order_id = $1`,
      [res.body.id],
    );
    expect(fills.rows.length).toBeGreaterThan(0);
    for (const r of fills.rows) expect(r.epoch).toBe(r.current);
    // Its balances: the starting cash moved by the fills since the reset, to the unit.
    const off = await client.query(
      `WITH f AS (SELECT f.* FROM trading.fills f JOIN trading.paper_accounts p ON p.account_id = f.account_id AND f.epoch = p.epoch
                  WHERE f.account_id = $1),
         expected AS (
           SELECT 'USD' AS asset, (SELECT starting_cash FROM trading.paper_accounts WHERE account_id = $1)
             + coalesce((SELECT sum(CASE side WHEN 'buy' THEN -notional ELSE notional END - fee) FROM f), 0) * 1000000000 AS units
           UNION ALL
           SELECT 'AAPL', coalesce((SELECT sum(CASE side WHEN 'buy' THEN qty ELSE -qty END) FROM f WHERE symbol = 'AAPL'), 0) * 1000000000)
       SELECT e.asset, e.units, b.total FROM expected e LEFT JOIN trading.balances b ON b.account_id = $1 AND b.asset = e.asset
       WHERE b.total IS DISTINCT FROM e.units`,
      [(await client.query(`SELECT account_id FROM trading.orders WHERE id = $1`, [res.body.id])).rows[0].account_id],
    );
    expect(off.rows).toEqual([]);
  }, 60_000);
});
