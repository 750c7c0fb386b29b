'use strict';
// The core operations that `npm run bench` (run.js) and the regression guard `npm run bench:check`
// (check.js) measure on a stack target (lib.startTarget('stack', STACK_ENV)): each `prepare`s what
// it needs on the target (accounts, files, threads) and returns a runner: `run(seconds)` keeps the
// target busy with the operation and resolves with { requests (operations completed), errors,
// statuses }; `reset()`, when there is one, runs before each measurement (not timed).
const http = require('node:http');
const { randomBytes } = require('node:crypto');

const { load } = require('./lib.js');

const MiB = 1024 * 1024;

/** The stack's settings for these operations (the same on both sides of an A/B). */
const STACK_ENV = {
  // Paper orders never run out of cash, on a venue whose market maker keeps the book liquid.
  SVC_TRADING_PAPER_CASH: '100000000000',
  SVC_TRADING_PAPER_TICK_MS: '100',
  SVC_TRADING_ALPACA_URL: 'off',
  // A replaced file's content is collected within a second, so 64 MiB round trips do not fill the disk.
  SVC_DRIVE_GRACE_SECONDS: '0',
  SVC_DRIVE_COLLECT_INTERVAL_MS: '1000',
};

/** A JSON request to the target with `key`; throws on a status of 300 or more. */
async function api(target, key, method, p, body, headers = {}) {
  const res = await fetch(`http://127.0.0.1:${target.port}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** A runner of one request, sent by lib.load on `connections` keep-alive connections. */
const requests =
  (connections, request) =>
  ({ port }) =>
  (seconds) =>
    load({ port, connections, seconds, ...request });

/** One file's upload (replacing the last one: If-Match: *) and download, on a keep-alive agent. */
function roundTrip(target, key, agent, name, content, replace) {
  const send = (options, body) =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: target.port, agent, ...options }, (res) => {
        const chunks = [];
        let size = 0;
        res.on('data', (d) => {
          size += d.length;
          if (res.statusCode >= 300 || options.method === 'POST') chunks.push(d);
        });
        res.on('end', () => resolve({ status: res.statusCode, size, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  const auth = { authorization: `Bearer ${key}` };
  return (async () => {
    const up = await send(
      {
        method: 'POST',
        path: `/v1/drive/upload?name=${encodeURIComponent(name)}`,
        headers: {
          ...auth,
          'content-type': 'application/octet-stream',
          'content-length': String(content.length),
          ...(replace ? { 'if-match': '*' } : {}),
        },
      },
      content,
    );
    if (up.status !== 201 && up.status !== 200) return { status: up.status, text: up.text };
    const item = JSON.parse(up.text);
    const down = await send({ method: 'GET', path: `/v1/drive/${item.id}/content`, headers: auth });
    if (down.status !== 200 || down.size !== content.length)
      return { status: down.status, text: `downloaded ${down.size} of ${content.length} bytes` };
    return { status: 200 };
  })();
}

/** Drive round trips of `size` bytes: each connection replaces a file of its own and reads it back. */
const driveRoundTrips = (size, connections) => async (target) => {
  const content = randomBytes(size);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const names = Array.from({ length: connections }, (_, w) => `bench-${size}-${w}.bin`);
  // Each connection's file exists before the first measurement (so every timed upload replaces one).
  for (const name of names) {
    const r = await roundTrip(target, target.key, agent, name, content, false);
    if (r.status !== 200) throw new Error(`drive round trip: ${r.status} ${r.text}`);
  }
  return {
    run: async (seconds) => {
      const deadline = Date.now() + seconds * 1000;
      let done = 0;
      let errors = 0;
      const statuses = new Set();
      await Promise.all(
        names.map(async (name) => {
          while (Date.now() < deadline) {
            const r = await roundTrip(target, target.key, agent, name, content, true).catch((err) => ({ status: 0, text: String(err) }));
            statuses.add(r.status);
            if (r.status === 200) done++;
            else errors++;
          }
        }),
      );
      return { requests: done, errors, statuses: [...statuses] };
    },
  };
};

/** Thread round trips: each connection asks a thread of its own (POST /threads/:id/ask) and gets the development model's reply. */
const threadAsks = (connections) => async (target) => {
  const person = await api(target, target.key, 'POST', '/accounts', { kind: 'user', name: 'bench' });
  const agent = await api(target, person.key, 'POST', '/agents', { name: 'bench' });
  const body = { content: 'hello', timeoutMs: 20000 };
  const first = await api(
    target,
    person.key,
    'POST',
    `/threads/${(await api(target, person.key, 'POST', '/threads', { agentId: agent.id })).id}/ask`,
    body,
  );
  if (first.timedOut || !first.reply) throw new Error(`thread ask: no reply ${JSON.stringify(first).slice(0, 300)}`);
  let paths = [];
  return {
    // Fresh threads for each measurement: a thread's history grows with each ask, and a faster side
    // must not be measured on longer histories than a slower one.
    reset: async () => {
      paths = [];
      for (let i = 0; i < connections; i++)
        paths.push(`/threads/${(await api(target, person.key, 'POST', '/threads', { agentId: agent.id })).id}/ask`);
    },
    run: (seconds) =>
      load({ port: target.port, connections, seconds, method: 'POST', path: paths, body, headers: { authorization: `Bearer ${person.key}` } }),
  };
};

/** An MCP tools/call (list_drive) as a 2025-11-25 client sends it, checked once. */
const mcpCall = (connections) => async (target) => {
  const headers = { authorization: `Bearer ${target.key}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_drive', arguments: {} } };
  const first = await api(target, target.key, 'POST', '/mcp', body, headers);
  if (!first.result || first.result.isError) throw new Error(`tools/call list_drive: ${JSON.stringify(first).slice(0, 300)}`);
  return { run: requests(connections, { method: 'POST', path: '/mcp', headers, body })(target) };
};

/** A request runner whose headers carry the target's key. */
const authed = (connections, request) => async (target) => ({
  run: requests(connections, { ...request, headers: { authorization: `Bearer ${target.key}` } })(target),
});

/** The core set, in the order they are measured. `seconds`: a measurement's length when not the caller's. */
const OPS = {
  me: { title: 'GET /me', prepare: authed(32, { path: '/me' }) },
  'list-keys': { title: 'GET /api/api-keys?limit=10', prepare: authed(32, { path: '/api/api-keys?limit=10' }) },
  'drive-1m': { title: 'drive 1 MiB upload + download', prepare: driveRoundTrips(MiB, 4) },
  'drive-64m': { title: 'drive 64 MiB upload + download', seconds: 4, prepare: driveRoundTrips(64 * MiB, 2) },
  'thread-ask': { title: 'thread message + reply (ask, development model)', prepare: threadAsks(8) },
  'paper-order': {
    title: 'POST /trading/order (paper, market)',
    prepare: authed(64, { method: 'POST', path: '/trading/order', body: { symbol: 'AAPL', side: 'buy', type: 'market', qty: '1' }, okStatus: 201 }),
  },
  'mcp-call': { title: 'MCP tools/call list_drive', prepare: mcpCall(16) },
};

/** The operations named in `only` (comma-separated; all when empty), or an error naming the unknown ones. */
function selectOps(only) {
  const names = only
    ? only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : Object.keys(OPS);
  const unknown = names.filter((n) => !OPS[n]);
  if (unknown.length) throw new Error(`unknown operation(s) ${unknown.join(', ')}; known: ${Object.keys(OPS).join(', ')}`);
  return names.map((name) => ({ name, ...OPS[name] }));
}

module.exports = { OPS, STACK_ENV, selectOps };
