'use strict';
// The platform as Kubernetes runs it: every service its own process (SVC_SERVICE=<name>) on the
// harness's backends, each gRPC service on a loopback port of its own, found by SVC_<NAME>_ADDR.
// A process can be killed (SIGKILL, as the kernel's OOM killer or a node failure does), started
// again (as the kubelet restarts a container), frozen and thawed (SIGSTOP/SIGCONT: a slow service).
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const { freePort } = require('./backends.js');

const ROOT = path.resolve(__dirname, '..', '..');
const { GRPC_SERVICE_NAMES, SERVICE_NAMES } = require(path.join(ROOT, 'packages/kit/dist/catalogue.js'));

async function startPlatform(backends, { deadlineMs = 3000, extraEnv = {} } = {}) {
  const bootstrapKey = `svc_${crypto.randomBytes(32).toString('hex')}`;
  const grpcPorts = {};
  for (const name of GRPC_SERVICE_NAMES) grpcPorts[name] = await freePort();
  const httpPorts = {};
  for (const name of SERVICE_NAMES) httpPorts[name] = await freePort();
  const dataDir = fs.mkdtempSync(path.join(backends.root, 'data-'));
  const common = {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    HOST: '127.0.0.1',
    GRPC_HOST: '127.0.0.1',
    DATABASE_URL: backends.pg.url,
    REDIS_URL: backends.redis.url,
    NATS_URL: backends.nats.url,
    S3_ENDPOINT: backends.s3.endpoint,
    S3_ACCESS_KEY: backends.s3.accessKey,
    S3_SECRET_KEY: backends.s3.secretKey,
    S3_BUCKET: 'faults',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: 'faults',
    SVC_BOOTSTRAP_KEY: bootstrapKey,
    SVC_INTERNAL_SECRET: crypto.randomBytes(32).toString('hex'),
    SVC_MODELS_KEK: `k1:${crypto.randomBytes(32).toString('base64')}`,
    SVC_TRADING_KEK: `k1:${crypto.randomBytes(32).toString('base64')}`,
    SVC_GRPC_DEADLINE_MS: String(deadlineMs),
    SVC_RATE_LIMITS: 'off',
    SVC_RATE_LIMITS_ACCOUNT: 'off',
    SVC_TRADING_ALPACA_URL: 'off',
    SVC_SHUTDOWN_GRACE_MS: '2000',
    ...Object.fromEntries(GRPC_SERVICE_NAMES.map((n) => [`SVC_${n.toUpperCase()}_ADDR`, `127.0.0.1:${grpcPorts[n]}`])),
    ...extraEnv,
  };
  const procs = {};
  const logs = {};

  const spawnOne = (name) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'apps/stack/dist/main.js')], {
      cwd: ROOT,
      env: { ...common, SVC_SERVICE: name, PORT: String(httpPorts[name]), ...(grpcPorts[name] ? { GRPC_PORT: String(grpcPorts[name]) } : {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    logs[name] ??= '';
    const keep = (d) => (logs[name] = (logs[name] + d).slice(-20_000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    procs[name] = child;
    return child;
  };

  const gatewayUrl = `http://127.0.0.1:${httpPorts.gateway}`;
  const ready = async (ms) => {
    const until = Date.now() + ms;
    for (;;) {
      const ok = await fetch(`${gatewayUrl}/ready`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return;
      if (Date.now() > until) {
        const tail = Object.entries(logs)
          .map(([n, l]) => `--- ${n}\n${l.slice(-2000)}`)
          .join('\n');
        throw new Error(`the platform is not ready after ${ms} ms\n${tail}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  // In start order (the catalogue's): a service after those it calls, each migrating its schema.
  for (const name of SERVICE_NAMES) spawnOne(name);
  try {
    await ready(120_000);
  } catch (err) {
    // Nothing is left behind: the processes would outlive the harness (and its backends).
    for (const child of Object.values(procs)) child.kill('SIGKILL');
    throw err;
  }

  return {
    url: gatewayUrl,
    bootstrapKey,
    names: SERVICE_NAMES,
    ready,
    logs: (name) => logs[name] ?? '',
    async kill(name) {
      const child = procs[name];
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    },
    start(name) {
      spawnOne(name);
    },
    freeze(name) {
      procs[name].kill('SIGSTOP');
    },
    thaw(name) {
      procs[name].kill('SIGCONT');
    },
    async close() {
      await Promise.all(
        Object.values(procs).map(
          (child) =>
            new Promise((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', resolve);
              child.kill('SIGCONT');
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 5000).unref();
            }),
        ),
      );
    },
  };
}

module.exports = { startPlatform };
