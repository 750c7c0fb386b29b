'use strict';
// Shared benchmark pieces: a keep-alive HTTP load generator and a child-process target whose
// own CPU time is measured, so the generator's CPU never counts against the server.
const { fork } = require('node:child_process');
const http = require('node:http');

/** Starts `target.js <kind>` and waits for it to listen; returns { port, cpu(), stop() }. */
function startTarget(kind, env = {}, execArgv = []) {
  const child = fork(require.resolve('./target.js'), [kind], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
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

/** Sends requests on `connections` keep-alive connections for `seconds`; returns latencies (µs). */
async function load({ port, path, headers = {}, connections = 32, seconds = 5 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies = [];
  let errors = 0;
  let statusSeen = new Set();
  const deadline = Date.now() + seconds * 1000;
  const one = () =>
    new Promise((resolve) => {
      const started = process.hrtime.bigint();
      const req = http.request({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          statusSeen.add(res.statusCode);
          if (res.statusCode !== 200) errors++;
          latencies.push(Number(process.hrtime.bigint() - started) / 1000);
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end();
    });
  const worker = async () => {
    while (Date.now() < deadline) await one();
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, statuses: [...statusSeen], rps: latencies.length / seconds, p50: q(0.5), p99: q(0.99) };
}

/** Warms up, then measures throughput, latency and the target's CPU per request. */
async function measure(target, path, headers, seconds) {
  await load({ port: target.port, path, headers, seconds: 1 });
  const before = await target.cpu();
  const r = await load({ port: target.port, path, headers, seconds });
  const after = await target.cpu();
  const cpuUs = after.user + after.system - before.user - before.system;
  return { ...r, cpuPerRequestUs: cpuUs / Math.max(1, r.requests) };
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

module.exports = { startTarget, load, measure, freshDatabase, dropStream };
