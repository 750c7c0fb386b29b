#!/usr/bin/env node
// Threads benchmark (docs/threads.md, "Performance"), measured in one run on one machine:
//   1. live event latency: a client holds GET /threads/:id/events as text/event-stream on the
//      gateway while another connection appends events (PATCH /threads/:id, one event each, the
//      same commit → signal → watcher → gRPC stream → SSE path a worker's events take); for each,
//      the time from sending the PATCH to the event arriving on the stream, p50/p99, beside the
//      PATCH's own round trip. Target: p99 ≤ 20 ms on loopback.
//   2. fan-out: SUBSCRIBERS (1000) streams of one thread held open on one gateway: the stack's
//      resident memory per subscriber, then FANOUT_EVENTS (20) events appended and the deliveries
//      per second until every subscriber has every event.
//   3. runs per second with the development model and one tool call each (`/tool whoami {}`): one
//      platform process, then a second process that is only a runtime (SVC_SERVICE=runtime) on the
//      same PostgreSQL and NATS; target: the second worker adds ≥ 60%. Needs DATABASE_URL and
//      NATS_URL (two processes share them); skipped with the embedded backends.
//   4. cancel with a tool running: BENCH_CANCELS (20) runs, each busy in a 20 s run_code script;
//      the time from sending POST /threads/:id/cancel to the thread being idle (the run ended
//      cancelled, its script's process killed), p50/p99. Target: p99 ≤ 1 s. The baseline of 5:
//      the time from the message posted to the tool starting (its tool call's row, written just
//      before it runs: `createdAt` of GET …/tool-calls, the server's clock on this machine).
//   5. approval round trip: the same runs with an agent whose run_code calls need approval; the
//      time from sending POST …/approve to the tool starting (the decision's commit, the run back
//      on the work queue, a worker's claim and resume from the checkpoint, the call's row), p50/p99,
//      targets p50 ≤ 50 ms and p99 ≤ 200 ms; then the cancel of the approved script as in 4
//      (p99 ≤ 1 s), a run a worker resumed after its pause.
//
//   npm run build && node scripts/bench/threads.js
//
// Options (environment): BENCH_EVENTS (2000), BENCH_RUNS (120 per round), BENCH_CONCURRENCY (16),
// BENCH_CANCELS (20); BENCH_ONLY=cancel measures 4 and 5 alone.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { api, dropStream, freePort, freshDatabase, readEvents } = require('./lib.js');

const ROOT = path.resolve(__dirname, '..', '..');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const RUNS = Number(process.env.BENCH_RUNS ?? 120);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const FANOUT_EVENTS = Number(process.env.BENCH_FANOUT_EVENTS ?? 20);
const CANCELS = Number(process.env.BENCH_CANCELS ?? 20);
const ONLY = process.env.BENCH_ONLY;

/**
 * Starts a stack process. Its log is read for where each of its services listens ("service
 * started": the all-in-one process serves them on Unix sockets in a folder of its own), so that a
 * runtime-only process started next to it can be told (SVC_<NAME>_ADDR); warnings and errors are
 * passed on to this process's stderr.
 */
function spawnStack(env) {
  const child = spawn(process.execPath, ['./apps/stack/dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', SVC_TRADING_ALPACA_URL: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.addresses = {};
  let rest = '';
  child.stdout.on('data', (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      if (entry.msg === 'service started' && entry.component && entry.address) child.addresses[entry.component] = entry.address;
      if (['warn', 'error', 'fatal'].includes(entry.level)) process.stderr.write(`${line}\n`);
    }
  });
  return child;
}

async function ready(port) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/ready`)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing ready on ${port}`);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => `${x.toFixed(2)} ms`;

async function latency(base, key, agentId) {
  const thread = await api(base, key, 'POST', '/threads', { agentId });
  const res = await fetch(`${base}/threads/${thread.id}/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
  const arrived = new Map();
  const stream = readEvents(res, (e) => {
    if (e.type === 'thread.updated') arrived.set(e.data.title, performance.now());
  });
  const sent = [];
  const roundTrips = [];
  for (let n = 0; n < EVENTS; n++) {
    const title = `t${n}`;
    const t0 = performance.now();
    sent.push([title, t0]);
    await api(base, key, 'PATCH', `/threads/${thread.id}`, { title });
    roundTrips.push(performance.now() - t0);
  }
  const deadline = Date.now() + 10_000;
  while (arrived.size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await stream.stop();
  const lat = sent.filter(([t]) => arrived.has(t)).map(([t, t0]) => arrived.get(t) - t0);
  return { received: lat.length, lat, roundTrips };
}

const rssMiB = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function fanOut(base, key, agentId, pid) {
  const http = require('node:http');
  const thread = await api(base, key, 'POST', '/threads', { agentId });
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  await new Promise((r) => setTimeout(r, 500));
  const before = rssMiB(pid);
  const counts = new Array(SUBSCRIBERS).fill(0);
  let delivered = 0;
  let lastAt = 0;
  const requests = [];
  const url = new URL(`${base}/threads/${thread.id}/events?after=1`);
  await Promise.all(
    Array.from(
      { length: SUBSCRIBERS },
      (_, i) =>
        new Promise((resolve, reject) => {
          const req = http.get(url, { agent, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
            res.on('data', (chunk) => {
              const n = (chunk.toString().match(/event: thread\.updated/g) ?? []).length;
              counts[i] += n;
              delivered += n;
              if (n) lastAt = performance.now();
            });
            res.on('error', () => {});
            resolve();
          });
          req.on('error', reject);
          requests.push(req);
        }),
    ),
  );
  await new Promise((r) => setTimeout(r, 1000));
  const after = rssMiB(pid);
  const t0 = performance.now();
  for (let n = 0; n < FANOUT_EVENTS; n++) await api(base, key, 'PATCH', `/threads/${thread.id}`, { title: `f${n}` });
  const want = SUBSCRIBERS * FANOUT_EVENTS;
  const deadline = Date.now() + 60_000;
  while (delivered < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  for (const r of requests) r.destroy();
  agent.destroy();
  return { before, after, delivered, want, seconds: (lastAt - t0) / 1000, full: counts.filter((c) => c >= FANOUT_EVENTS).length };
}

async function runsPerSecond(base, key, agentId) {
  const threads = [];
  for (let i = 0; i < CONCURRENCY; i++) threads.push((await api(base, key, 'POST', '/threads', { agentId })).id);
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    threads.map(async (id) => {
      while (done < RUNS) {
        done++;
        const r = await api(base, key, 'POST', `/threads/${id}/inject`, { content: '/tool whoami {}' });
        for (;;) {
          const t = await api(base, key, 'GET', `/threads/${id}`);
          if (t.status === 'idle' && t.currentRunId === null) break;
          await new Promise((res) => setTimeout(res, 5));
        }
        void r;
      }
    }),
  );
  return (done / (performance.now() - t0)) * 1000;
}

const untilEvent = async (base, key, threadId, type) => {
  for (;;) {
    const { events } = await api(base, key, 'GET', `/threads/${threadId}/events?limit=200`);
    if (events.some((e) => e.type === type)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** When the run's first tool call began (its row, written just before the tool runs), by the server's clock. */
async function toolStarted(base, key, threadId, runId) {
  for (;;) {
    const { toolCalls } = await api(base, key, 'GET', `/threads/${threadId}/runs/${runId}/tool-calls`);
    if (toolCalls.length) return Date.parse(toolCalls[0].createdAt);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Runs busy in a slow script, then cancelled: the time from the message posted (or, for an agent
 * whose run_code calls need approval, from the approval posted) to the tool starting, and from the
 * cancel to the thread being idle.
 */
async function slowRuns(base, key, agentId, gated) {
  const slow = '/tool run_code {"code":"const end = Date.now() + 20000; while (Date.now() < end) {} 1","timeoutMs":25000}';
  const start = [];
  const took = [];
  // Where an approval's time goes: the POST's round trip, then (by the events' createdAt) the decision's commit → run.resumed → the tool's row.
  const parts = { post: [], toResumed: [], resumedToTool: [] };
  for (let n = 0; n < CANCELS; n++) {
    let t0 = Date.now();
    const thread = await api(base, key, 'POST', '/threads', { agentId, message: slow });
    if (gated) {
      await untilEvent(base, key, thread.id, 'approval.requested');
      const { approvals } = await api(base, key, 'GET', `/threads/${thread.id}/approvals?status=pending`);
      t0 = Date.now();
      await api(base, key, 'POST', `/threads/${thread.id}/approvals/${approvals[0].id}/approve`, {});
      parts.post.push(Date.now() - t0);
    }
    const began = await toolStarted(base, key, thread.id, thread.runId);
    start.push(Math.max(0, began - t0));
    if (gated) {
      const { events } = await api(base, key, 'GET', `/threads/${thread.id}/events?limit=200`);
      const at = (type) => Date.parse(events.find((e) => e.type === type).createdAt);
      parts.toResumed.push(at('run.resumed') - at('approval.approved'));
      parts.resumedToTool.push(began - at('run.resumed'));
    }
    // The script is under way in the sandbox by now.
    await new Promise((r) => setTimeout(r, 300));
    const t1 = performance.now();
    await api(base, key, 'POST', `/threads/${thread.id}/cancel`);
    for (;;) {
      const t = await api(base, key, 'GET', `/threads/${thread.id}`);
      if (t.status === 'idle') break;
      await new Promise((r) => setTimeout(r, 5));
    }
    took.push(performance.now() - t1);
    const { events } = await api(base, key, 'GET', `/threads/${thread.id}/events?limit=200`);
    const result = events.find((e) => e.type === 'tool.result');
    if (!result?.data.aborted || events[events.length - 1].type !== 'run.cancelled')
      throw new Error(`cancel ${n}: the run did not end as an aborted call`);
    if (gated && !events.some((e) => e.type === 'approval.approved')) throw new Error(`run ${n}: no approval`);
  }
  return { start, took, parts };
}

async function main() {
  const bootstrap = `svc_${randomBytes(32).toString('hex')}`;
  const secret = randomBytes(32).toString('hex');
  const namespace = `bench${randomBytes(4).toString('hex')}`;
  const db = await freshDatabase();
  const dirs = [];
  const children = [];
  const start = async (env) => {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-threads-'));
    dirs.push(dir);
    const child = spawnStack({
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_NAMESPACE: namespace,
      SVC_BOOTSTRAP_KEY: bootstrap,
      SVC_INTERNAL_SECRET: secret,
      // One key holds every subscriber's stream here.
      SVC_SSE_MAX_STREAMS_PER_KEY: String(SUBSCRIBERS + 10),
      // Measured without the rate limiter's refusals (its cost is measured by scripts/bench/rate-limit.js).
      SVC_RATE_LIMITS: 'off',
      SVC_RATE_LIMITS_ACCOUNT: 'off',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
      ...env,
    });
    children.push(child);
    await ready(port);
    return port;
  };
  try {
    const port = await start({ SVC_SERVICE: 'all' });
    const base = `http://127.0.0.1:${port}`;
    const person = await api(base, bootstrap, 'POST', '/accounts', { kind: 'user', name: 'bench' });
    const key = person.key;
    const agent = await api(base, key, 'POST', '/agents', { name: 'bench' });
    const backends = db.url ? 'PostgreSQL + NATS' : 'embedded';
    console.log(`threads bench (${backends}; ${os.cpus().length} cores)`);

    const plain = await slowRuns(base, key, agent.id, false);
    const c = plain.took;
    console.log(`cancel with a tool running (${c.length} runs): p50 ${ms(pct(c, 50))}, p99 ${ms(pct(c, 99))}; target p99 ≤ 1 s`);
    const careful = await api(base, key, 'POST', '/agents', { name: 'bench careful' });
    await api(base, key, 'PUT', `/agents/${careful.id}/approval-policy`, { tools: ['run_code'] });
    const gated = await slowRuns(base, key, careful.id, true);
    const [a, b] = [gated.start, plain.start];
    console.log(
      `approval posted → tool starting (${a.length} runs): p50 ${ms(pct(a, 50))}, p99 ${ms(pct(a, 99))}; targets p50 ≤ 50 ms, p99 ≤ 200 ms ` +
        `(baseline, message posted → tool starting without approval: p50 ${ms(pct(b, 50))}, p99 ${ms(pct(b, 99))})`,
    );
    const p50 = (xs) => ms(pct(xs, 50));
    const { post, toResumed, resumedToTool } = gated.parts;
    console.log(
      `  p50 of its parts: the approve POST's round trip ${p50(post)}; approval.approved → run.resumed ${p50(toResumed)}; ` +
        `run.resumed → the tool's row ${p50(resumedToTool)}`,
    );
    const g = gated.took;
    console.log(`cancel with an approved tool running (${g.length} runs): p50 ${ms(pct(g, 50))}, p99 ${ms(pct(g, 99))}; target p99 ≤ 1 s`);
    if (ONLY === 'cancel') return;

    const l = await latency(base, key, agent.id);
    console.log(
      `live event latency over ${l.received}/${EVENTS} events: p50 ${ms(pct(l.lat, 50))}, p99 ${ms(pct(l.lat, 99))} ` +
        `(PATCH round trip p50 ${ms(pct(l.roundTrips, 50))}, p99 ${ms(pct(l.roundTrips, 99))}); target p99 ≤ 20 ms`,
    );

    const f = await fanOut(base, key, agent.id, children[0].pid);
    console.log(
      `fan-out: ${SUBSCRIBERS} streams took the stack from ${f.before.toFixed(0)} to ${f.after.toFixed(0)} MiB ` +
        `(${(((f.after - f.before) * 1024) / SUBSCRIBERS).toFixed(1)} KiB per subscriber); ${FANOUT_EVENTS} events reached ` +
        `${f.full}/${SUBSCRIBERS} subscribers whole, ${f.delivered}/${f.want} deliveries in ${f.seconds.toFixed(2)} s ` +
        `(${(f.delivered / f.seconds).toFixed(0)} deliveries/s)`,
    );

    if (!db.url || !process.env.NATS_URL) {
      console.log('runs per second: skipped (needs DATABASE_URL and NATS_URL: two processes share them)');
      return;
    }
    const one = await runsPerSecond(base, key, agent.id);
    console.log(`runs/s, one process (gateway, services, runtime): ${one.toFixed(1)}`);
    // The second process reaches the first one's services where they listen, as a runtime Deployment reaches the services by name.
    const addresses = Object.entries(children[0].addresses).map(([name, address]) => [`SVC_${name.toUpperCase()}_ADDR`, address]);
    if (!addresses.length) throw new Error('the first process logged no service addresses');
    await start({ SVC_SERVICE: 'runtime', ...Object.fromEntries(addresses) });
    const two = await runsPerSecond(base, key, agent.id);
    console.log(`runs/s, plus a runtime-only process: ${two.toFixed(1)} (${(((two - one) / one) * 100).toFixed(0)}% more; target ≥ 60%)`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await db.drop().catch(() => {});
    await dropStream(namespace).catch(() => {});
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
