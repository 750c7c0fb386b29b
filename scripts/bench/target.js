'use strict';
// A benchmark target in its own process: `node target.js <kind>`; reports { ready, port, ... }
// over IPC and answers CPU-usage questions, so only the server's own CPU is counted.
const http = require('node:http');

const { dropStream, freePort, freshDatabase, procStat } = require('./lib.js');

/** The CPU to report: this process's own, unless a target replaces it (split topology). */
let cpuOf = () => process.cpuUsage();
process.on('message', (m) => {
  if (m.cpu) process.send({ id: m.id, cpu: cpuOf() });
});

async function main(kind) {
  if (kind === 'node-http') {
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    server.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
    return;
  }
  if (kind === 'express' || kind === 'express-preset') {
    const express = require('express');
    const app = express();
    app.get('/x', (req, res) => res.json({ ok: true }));
    // express-preset: node builds requests with express's prototypes, as the gateway's server does.
    const options = kind === 'express-preset' ? require('@svc/gateway').expressServerOptions(app) : {};
    const server = http.createServer(options, app);
    server.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
    return;
  }
  if (kind === 'express-static') {
    // A bare express app serving a folder (BENCH_STATIC_DIR) with express.static: a static site without the platform.
    const express = require('express');
    const app = express();
    app.use(express.static(process.env.BENCH_STATIC_DIR));
    const server = http.createServer(app);
    server.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
    return;
  }
  if (kind === 'express-json') {
    // A bare express app that parses a JSON body and answers 201 with JSON: what a POST costs without the platform.
    const express = require('express');
    const app = express();
    app.post('/x', express.json(), (req, res) => res.status(201).json({ ok: true, order: req.body }));
    const server = http.createServer(app);
    server.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
    return;
  }
  if (kind === 'stack') {
    const fs = require('node:fs');
    const os = require('node:os');
    const path = require('node:path');
    // BENCH_ROOT: another checkout's stack (an A/B against a base commit, lib.startTarget's `root`).
    const { startStack } = require(process.env.BENCH_ROOT ? require.resolve('@svc/stack', { paths: [process.env.BENCH_ROOT] }) : '@svc/stack');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
    const key = `svc_${require('node:crypto').randomBytes(32).toString('hex')}`;
    // A fresh database per run on a real server, so the bootstrap key is this run's.
    const db = await freshDatabase();
    const stack = await startStack({
      ...process.env,
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      SVC_SERVICE: 'all',
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_BOOTSTRAP_KEY: key,
      SVC_NAMESPACE: `bench${process.pid}`,
    });
    process.once('SIGTERM', async () => {
      await stack.stop();
      await db.drop();
      await dropStream(`bench${process.pid}`);
      fs.rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
    process.send({
      ready: true,
      port: stack.port,
      key,
      backends: {
        sql: stack.backends.describe('sql'),
        cache: stack.backends.describe('cache'),
        bus: stack.backends.describe('bus'),
      },
    });
    return;
  }
  if (kind === 'split') {
    // The cluster's shape: the gateway and services (BENCH_SPLIT, default keys,accounts) as separate
    // processes talking gRPC over loopback TCP. CPU is the sum over the processes (from /proc, 10 ms
    // resolution).
    const { spawn } = require('node:child_process');
    const fs = require('node:fs');
    const os = require('node:os');
    const path = require('node:path');
    // BENCH_ROOT: another checkout's processes (an A/B against a base commit), as for `stack`.
    const root = process.env.BENCH_ROOT ?? path.resolve(__dirname, '../..');
    const key = `svc_${require('node:crypto').randomBytes(32).toString('hex')}`;
    const secret = require('node:crypto').randomBytes(32).toString('hex');
    const db = await freshDatabase();
    const services = (process.env.BENCH_SPLIT ?? 'keys,accounts').split(',');
    const ports = {};
    for (const name of services) ports[name] = await freePort();
    const gwPort = await freePort();
    const common = {
      ...process.env,
      SVC_INTERNAL_SECRET: secret,
      SVC_BOOTSTRAP_KEY: key,
      SVC_NAMESPACE: `bench${process.pid}`,
      ...Object.fromEntries(services.map((name) => [`SVC_${name.toUpperCase()}_ADDR`, `127.0.0.1:${ports[name]}`])),
      LOG_LEVEL: 'warn',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
    };
    const layout = [...services.map((name) => [name, { GRPC_PORT: String(ports[name]) }]), ['gateway', { PORT: String(gwPort), HOST: '127.0.0.1' }]];
    const names = layout.map(([name]) => name);
    const procs = layout.map(([name, env]) =>
      spawn(
        process.execPath,
        [...(process.env.BENCH_PROFILE === name ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), 'apps/stack/dist/main.js'],
        {
          cwd: root,
          env: { ...common, ...env, SVC_SERVICE: name, SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), `svc-bench-${name}-`)) },
          stdio: ['ignore', 'ignore', 'inherit'],
        },
      ),
    );
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${gwPort}/me`, { headers: { authorization: `Bearer ${key}` } });
        if (r.ok) break;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    cpuOf = () => {
      let user = 0;
      let system = 0;
      const perProcess = {};
      for (const [i, p] of procs.entries()) {
        const st = procStat(p.pid) ?? { user: 0, system: 0 };
        user += st.user;
        system += st.system;
        perProcess[names[i]] = st.user + st.system;
      }
      return { user, system, perProcess };
    };
    process.once('SIGTERM', async () => {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r() : p.once('exit', r)))));
      await db.drop();
      await dropStream(`bench${process.pid}`);
      process.exit(0);
    });
    process.send({
      ready: true,
      port: gwPort,
      key,
      backends: { topology: `${names.join(', ')} in ${names.length} processes`, sql: db.url ? 'postgresql' : 'pglite' },
    });
    return;
  }
  throw new Error(`unknown target ${kind}`);
}

main(process.argv[2]).catch((err) => {
  console.error(err);
  process.exit(1);
});
