#!/usr/bin/env node
// Idempotency-Key cost: sequential POST /code/run {"code":"1"} without a key, with a fresh key
// (claim + record at the keys service, two gRPC calls and two SQL statements), and replays of one
// key (one gRPC call, one SQL read, no operation), interleaved in rounds; median latency of each.
//
//   npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node scripts/bench/idempotency.js
//
// Options (environment): BENCH_ROUNDS (10), BENCH_PER_ROUND (30). With DATABASE_URL the benchmark
// creates (and drops) a database of its own on that server; otherwise it runs on PGlite.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { freshDatabase, UNREACHED_LIMITS } = require('./lib.js');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 30);

async function main() {
  const { startStack } = require('@svc/stack');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-idem-'));
  const db = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : null;
  const env = {
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
    // Limits it never reaches: the benchmark measures replays, not the limiter's refusals.
    SVC_RATE_LIMITS: UNREACHED_LIMITS,
    SVC_RATE_LIMITS_ACCOUNT: UNREACHED_LIMITS,
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  };
  const stack = await startStack(env);
  try {
    const key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
    const url = `http://127.0.0.1:${stack.port}/code/run`;
    const body = JSON.stringify({ code: '1' });
    const post = async (idem) => {
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      if (idem) headers['idempotency-key'] = idem;
      const t0 = process.hrtime.bigint();
      const res = await fetch(url, { method: 'POST', headers, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`POST /code/run -> ${res.status}`);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    const replayKey = `bench-replay-${randomBytes(4).toString('hex')}`;
    for (let i = 0; i < 20; i++) {
      await post();
      await post(`warm-${i}-${randomBytes(4).toString('hex')}`);
      await post(replayKey);
    }
    const samples = { none: [], fresh: [], replay: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < PER_ROUND; i++) samples.none.push(await post());
      for (let i = 0; i < PER_ROUND; i++) samples.fresh.push(await post(`b-${r}-${i}-${randomBytes(4).toString('hex')}`));
      for (let i = 0; i < PER_ROUND; i++) samples.replay.push(await post(replayKey));
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];
    for (const [k, xs] of Object.entries(samples)) {
      console.log(`${k.padEnd(7)} n=${xs.length} median ${median(xs).toFixed(2)} ms  p95 ${p95(xs).toFixed(2)} ms`);
    }
    console.log(`fresh key vs none: +${(median(samples.fresh) - median(samples.none)).toFixed(2)} ms median`);
  } finally {
    await stack.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
