'use strict';
// Shared benchmark pieces: a keep-alive HTTP load generator and a child-process target whose
// own CPU time is measured, so the generator's CPU never counts against the server.
const { fork } = require('node:child_process');
const fs = require('node:fs');

// A loopback port no other caller in this process was given (the faults harness's helper).
const { freePort } = require('../faults/backends.js');

const UNREACHED_LIMITS = 'read=1000000000/1,write=1000000000/1,compute=1000000000/1';

/**
 * Starts `target.js <kind>` and waits for it to listen; returns { port, pid, cpu(), stop() }. With
 * `root` (another checkout of svc, built), a stack target runs that checkout's code (its
 * `@svc/stack`, in its folder) under this checkout's target.js: an A/B differs in the product only.
 */
function startTarget(kind, env = {}, execArgv = [], root = undefined) {
  const child = fork(require.resolve('./target.js'), [kind], {
    // Rate limits high enough never to answer 429 (their cost is measured, not their refusals), unless set.
    env: {
      SVC_RATE_LIMITS: UNREACHED_LIMITS,
      SVC_RATE_LIMITS_ACCOUNT: UNREACHED_LIMITS,
      ...process.env,
      LOG_LEVEL: 'silent',
      ...(root ? { BENCH_ROOT: root } : {}),
      ...env,
    },
    ...(root ? { cwd: root } : {}),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv,
  });
  const pending = new Map();
  let seq = 0;
  child.on('message', (m) => {
    const p = pending.get(m.id);
    if (p) {
      pending.delete(m.id);
      p(m);
    }
  });
  const ask = (msg) =>
    new Promise((resolve) => {
      const id = ++seq;
      pending.set(id, resolve);
      child.send({ ...msg, id });
    });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`target ${kind} exited with ${code}`)));
    const onReady = (m) => {
      if (m.ready) {
        child.off('message', onReady);
        child.removeAllListeners('exit');
        resolve({
          ...m,
          pid: child.pid,
          cpu: async () => (await ask({ cpu: true })).cpu,
          stop: () =>
            new Promise((r) => {
              child.once('exit', r);
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.on('message', onReady);
  });
}

/**
 * Sends requests on `connections` keep-alive connections for `seconds`, one in flight per
 * connection; returns throughput, latencies and statuses. `path` and `body` may be arrays:
 * connection i sends the (i mod n)th. A small HTTP/1.1 client on raw sockets
 * (like wrk): on two cores the load generator shares the CPU with the servers it measures, and
 * node:http's client costs 45–55 µs of CPU per request here and this one 20–28, so more of the machine
 * goes to the servers under test. Every response is read whole (Content-Length or chunked).
 */
async function load({ port, path, headers = {}, connections = 32, seconds = 5, method = 'GET', body, okStatus = 200 }) {
  const net = require('node:net');
  // Host: 127.0.0.1 unless the headers name another (a site's custom domain).
  const headOf = (p) => [
    `${method} ${p} HTTP/1.1`,
    ...(Object.keys(headers).some((k) => k.toLowerCase() === 'host') ? [] : ['Host: 127.0.0.1']),
    'Connection: keep-alive',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  const requestOf = (p, b) => {
    const payload = b === undefined ? '' : JSON.stringify(b);
    const lines = b === undefined ? headOf(p) : [...headOf(p), 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`];
    return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${payload}`);
  };
  const paths = Array.isArray(path) ? path : [path];
  const bodies = Array.isArray(body) ? body : [body];
  const requests = Array.from({ length: Math.max(paths.length, bodies.length) }, (_, i) =>
    requestOf(paths[i % paths.length], bodies[i % bodies.length]),
  );
  const latencies = [];
  let errors = 0;
  const statusSeen = new Set();
  const deadline = Date.now() + seconds * 1000;
  const worker = (_, i) =>
    new Promise((resolve) => {
      const request = requests[i % requests.length];
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      let buf = Buffer.alloc(0);
      let started = 0n;
      const send = () => {
        if (Date.now() >= deadline) {
          socket.end();
          return resolve();
        }
        started = process.hrtime.bigint();
        socket.write(request);
      };
      socket.on('connect', send);
      socket.on('error', () => {
        errors++;
        resolve();
      });
      socket.on('data', (chunk) => {
        buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
        for (;;) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const headText = buf.toString('latin1', 0, end);
          const status = Number(headText.slice(9, 12));
          const len = /\r\ncontent-length: *(\d+)/i.exec(headText);
          let total;
          if (len) total = end + 4 + Number(len[1]);
          else if (/\r\ntransfer-encoding: *chunked/i.test(headText)) {
            const last = buf.indexOf('\r\n0\r\n\r\n', end + 4);
            if (last < 0) return;
            total = last + 7;
          } else total = end + 4;
          if (buf.length < total) return;
          buf = buf.subarray(total);
          statusSeen.add(status);
          if (status !== okStatus) errors++;
          latencies.push(Number(process.hrtime.bigint() - started) / 1000);
          send();
        }
      });
    });
  await Promise.all(Array.from({ length: connections }, worker));
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, statuses: [...statusSeen], rps: latencies.length / seconds, p50: q(0.5), p99: q(0.99) };
}

/** µs per clock tick of /proc's CPU counters (USER_HZ = 100). */
const TICK_US = 1e6 / 100;

/** A process's program name and CPU time so far in µs (user, system), from /proc/<pid>/stat; undefined if it is gone. */
function procStat(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The name is in parentheses and may hold spaces or parentheses itself: the fields follow the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), user: Number(f[11]) * TICK_US, system: Number(f[12]) * TICK_US };
}

/** The backend servers' program names, as /proc/<pid>/stat gives them. */
const BACKEND_PROGRAMS = ['postgres', 'nats-server', 'redis-server'];

/**
 * CPU time (µs) used so far by this machine's backend servers: the PostgreSQL, NATS and Redis
 * processes running now, by process id (Linux only; elsewhere none). Compare two readings with
 * `backendDelta`.
 */
function backendCpu() {
  const out = new Map();
  let pids = [];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    const st = procStat(pid);
    if (st && BACKEND_PROGRAMS.includes(st.name)) out.set(pid, { name: st.name, cpu: st.user + st.system });
  }
  return out;
}

/**
 * The CPU (µs) each program's processes spent between two readings of `backendCpu`: a process
 * started in between counts from zero; one that ended in between (a PostgreSQL backend whose
 * connection closed) is left out, an undercount rather than the negative a sum would give.
 */
function backendDelta(before, after) {
  const out = Object.fromEntries(BACKEND_PROGRAMS.map((p) => [p, 0]));
  for (const [pid, { name, cpu }] of after) out[name] += cpu - (before.get(pid)?.cpu ?? 0);
  return out;
}

/**
 * The machine's CPU counters so far (Linux, from /proc/stat; elsewhere undefined): ticks in all and
 * ticks stolen by the hypervisor for other guests, which slow every target alike but not evenly.
 */
function machineTicks() {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
  } catch {
    return undefined;
  }
}

/** The share (%) of the machine's CPU time the hypervisor gave to other guests since `ticks` (machineTicks()). */
function stolenSince(ticks) {
  const now = machineTicks();
  return ticks && now ? (100 * (now.steal - ticks.steal)) / Math.max(1, now.total - ticks.total) : undefined;
}

/**
 * One run of `run(seconds)`, which keeps the target busy and resolves with { requests, errors,
 * statuses } (requests: operations completed, of one request or several): the rate over the time it
 * really took (the last operations finish after `seconds`) and the target's CPU per operation; on a
 * real PostgreSQL (DATABASE_URL), also the CPU its server processes spent per operation
 * (`dbCpuPerRequestUs`): work a change moves into SQL does not show in the target's own CPU.
 */
async function measureRun(target, run, seconds) {
  const before = await target.cpu();
  const servers = process.env.DATABASE_URL ? backendCpu() : undefined;
  const ticks = machineTicks();
  const started = process.hrtime.bigint();
  const r = await run(seconds);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const stealPct = stolenSince(ticks);
  const serversAfter = servers ? backendCpu() : undefined;
  const after = await target.cpu();
  const n = Math.max(1, r.requests);
  return {
    ...r,
    seconds: elapsed,
    rps: r.requests / elapsed,
    cpuPerRequestUs: (after.user + after.system - before.user - before.system) / n,
    ...(servers && serversAfter ? { dbCpuPerRequestUs: backendDelta(servers, serversAfter).postgres / n } : {}),
    stealPct,
  };
}

/**
 * Warms up, then measures throughput, latency and the target's CPU per request (and, with
 * `extra.backends`, the CPU per request of the machine's PostgreSQL, NATS and Redis processes).
 */
async function measure(target, path, headers, seconds, { backends = false, ...extra } = {}) {
  await load({ port: target.port, path, headers, seconds: 1, ...extra });
  const before = await target.cpu();
  const servers = backends ? backendCpu() : undefined;
  const ticks = machineTicks();
  const mine = process.cpuUsage();
  const r = await load({ port: target.port, path, headers, seconds, ...extra });
  const loadCpu = process.cpuUsage(mine);
  const serversAfter = backends ? backendCpu() : undefined;
  const stealPct = stolenSince(ticks);
  const after = await target.cpu();
  const cpuUs = after.user + after.system - before.user - before.system;
  const n = Math.max(1, r.requests);
  const perProcessUs = after.perProcess
    ? Object.fromEntries(Object.keys(after.perProcess).map((k) => [k, (after.perProcess[k] - before.perProcess[k]) / n]))
    : undefined;
  const backendUs =
    servers && serversAfter ? Object.fromEntries(Object.entries(backendDelta(servers, serversAfter)).map(([k, v]) => [k, v / n])) : undefined;
  return { ...r, cpuPerRequestUs: cpuUs / n, loadCpuPerRequestUs: (loadCpu.user + loadCpu.system) / n, perProcessUs, backendUs, stealPct };
}

/** Deletes this run's JetStream stream (the namespace's), when NATS is real. */
async function dropStream(namespace) {
  if (!process.env.NATS_URL) return;
  const { connect } = require('nats');
  const nc = await connect({ servers: process.env.NATS_URL });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(namespace.toUpperCase()).catch(() => false);
  await nc.close();
}

/** A fresh database on the real server named by DATABASE_URL, or nothing (embedded). */
async function freshDatabase(base = process.env.DATABASE_URL) {
  if (!base) return { url: undefined, drop: async () => {} };
  const pg = require('pg');
  const name = `svc_bench_${require('node:crypto').randomBytes(5).toString('hex')}`;
  const run = async (sql) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    await c.query(sql);
    await c.end();
  };
  await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await run(`CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * Reads a text/event-stream response (fetch's) and calls `onData` with each event's data, parsed;
 * `stop()` ends the reading (and cancels the body).
 */
function readEvents(res, onData) {
  const { TextDecoder } = require('node:util');
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let stopped = false;
  const reading = (async () => {
    while (!stopped) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (data) onData(JSON.parse(data.slice(6)));
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await reader.cancel().catch(() => {});
      await reading.catch(() => {});
    },
  };
}

/** A JSON request with a key; the parsed answer, or an Error naming the status and body. */
async function api(base, key, method, p, body) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${p} -> ${res.status} ${JSON.stringify(json)}`);
  return json;
}

module.exports = { api, readEvents, startTarget, load, measure, measureRun, freshDatabase, dropStream, freePort, procStat, UNREACHED_LIMITS };
