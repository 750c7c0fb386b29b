'use strict';
// The harness's own backends, on loopback ports of their own, so that stopping one never touches
// the machine's: a PostgreSQL cluster (initdb in a temporary folder), a Redis server, a NATS
// server with JetStream (its store in a folder that survives a restart) and s3rver for S3.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

/** Ports freePort handed out in this process: the kernel may offer a port again once it is closed. */
const handedOut = new Set();

/**
 * A loopback port free now and not handed out before by this process: two services given the same
 * port, the second cannot bind it and the gateway's calls for it reach the first (UNIMPLEMENTED, a 501).
 */
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
      s.on('error', reject);
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

async function waitPort(port, ms) {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function pgBin(name) {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const p = path.join(root, v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  try {
    return execFileSync('which', [name]).toString().trim();
  } catch {
    throw new Error(`${name} not found: the fault harness runs a PostgreSQL server of its own (Debian: apt-get install postgresql)`);
  }
}

/** Runs a PostgreSQL program as the postgres user when we are root (PostgreSQL refuses root). */
function asPostgres(file, args, opts = {}) {
  if (process.getuid?.() === 0) return execFileSync('runuser', ['-u', 'postgres', '--', file, ...args], { stdio: 'pipe', ...opts });
  return execFileSync(file, args, { stdio: 'pipe', ...opts });
}

async function startPostgres(root) {
  const dir = path.join(root, 'pg');
  fs.mkdirSync(dir, { recursive: true });
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres', root]);
  const port = await freePort();
  asPostgres(pgBin('initdb'), ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const ctl = (cmd, extra = []) =>
    asPostgres(pgBin('pg_ctl'), [
      '-D',
      dir,
      '-l',
      path.join(root, 'pg.log'),
      '-o',
      `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c max_connections=300`,
      '-w',
      ...extra,
      cmd,
    ]);
  ctl('start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /** A restart as an operator does it: running transactions are cut, connections dropped. */
    restart: () => ctl('restart', ['-m', 'fast']),
    stop: () => ctl('stop', ['-m', 'fast']),
    start: () => ctl('start'),
    close: () => {
      try {
        ctl('stop', ['-m', 'immediate']);
      } catch {
        // already stopped
      }
    },
  };
}

/** A server process that can be killed and started again on the same port (and store). */
async function restartable(name, file, argsOf) {
  const port = await freePort();
  let child;
  const up = async () => {
    child = spawn(file, argsOf(port), { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', (err) => console.error(`${name}: ${err.message}`));
    await waitPort(port, 10_000);
  };
  const down = async () => {
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  await up();
  return { port, up, down, close: down };
}

async function startBackends() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-faults-'));
  fs.chmodSync(root, 0o777);
  const pg = await startPostgres(root);
  const redis = await restartable('redis', 'redis-server', (port) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  const natsDir = path.join(root, 'nats');
  const nats = await restartable('nats', fs.existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server', (port) => [
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
    '-js',
    '-sd',
    natsDir,
  ]);
  const s3dir = path.join(root, 's3');
  fs.mkdirSync(s3dir);
  const s3 = await restartable('s3rver', process.execPath, (port) => [path.join(__dirname, 's3.js'), s3dir, String(port)]);
  return {
    root,
    pg,
    redis: { ...redis, url: `redis://127.0.0.1:${redis.port}` },
    nats: { ...nats, url: `nats://127.0.0.1:${nats.port}` },
    s3: { endpoint: `http://127.0.0.1:${s3.port}`, accessKey: 'S3RVER', secretKey: 'S3RVER' },
    async close() {
      await redis.close();
      await nats.close();
      await s3.close();
      pg.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

module.exports = { startBackends, freePort, waitPort };
