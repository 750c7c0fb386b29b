'use strict';
// A benchmark target in its own process: `node target.js <kind>`; reports { ready, port, ... }
// over IPC and answers CPU-usage questions, so only the server's own CPU is counted.
const http = require('node:http');

process.on('message', (m) => {
  if (m.cpu) process.send({ id: m.id, cpu: process.cpuUsage() });
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
  if (kind === 'express') {
    const express = require('express');
    const app = express();
    app.get('/x', (req, res) => res.json({ ok: true }));
    const server = app.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
    return;
  }
  if (kind === 'stack') {
    const fs = require('node:fs');
    const os = require('node:os');
    const path = require('node:path');
    const { startStack } = require('@svc/stack');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
    const key = `svc_${require('node:crypto').randomBytes(32).toString('hex')}`;
    // A fresh database per run on a real server, so the bootstrap key is this run's.
    let databaseUrl = process.env.DATABASE_URL;
    let dropDb = async () => {};
    if (databaseUrl) {
      const pg = require('pg');
      const name = `svc_bench_${process.pid}`;
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const base = databaseUrl;
      const u = new URL(base);
      u.pathname = `/${name}`;
      databaseUrl = u.toString();
      dropDb = async () => {
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      };
    }
    const stack = await startStack({
      ...process.env,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      SVC_SERVICE: 'all',
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_BOOTSTRAP_KEY: key,
      SVC_NAMESPACE: `bench${process.pid}`,
    });
    process.once('SIGTERM', async () => {
      await stack.stop();
      await dropDb();
      fs.rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
    process.send({ ready: true, port: stack.port, key, backends: {
      sql: stack.backends.describe('sql'), cache: stack.backends.describe('cache'), bus: stack.backends.describe('bus'),
    } });
    return;
  }
  throw new Error(`unknown target ${kind}`);
}

main(process.argv[2]).catch((err) => {
  console.error(err);
  process.exit(1);
});
