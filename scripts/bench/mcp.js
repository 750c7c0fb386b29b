#!/usr/bin/env node
// MCP benchmark (docs/mcp.md), in one run on an embedded stack:
// 1. a read operation as a tool against the same operation over REST, same client, same
//    keep-alive connections, alternating rounds: tools/call list_drive (POST /mcp, JSON-RPC, as a
//    2025-11-25 client and as a 2026-07-28 one) vs GET /drive; and whoami vs GET /me. The target:
//    the tool's rate is at least 70% of the REST rate.
// 2. tools/list: the server's time per call (the endpoint in process, no HTTP),
//    and through the gateway.
// 3. code mode (docs/run-code.md, "Calling tools"): ten tools/call list_drive, one after the
//    other, against one tools/call run_code whose script makes the same ten calls (one after the
//    other, and all at once), end to end from the client, interleaved, one caller (BENCH_CODE_MODE
//    repetitions of each, default 40).
// 4. search_tools over the search evaluation's requests (packages/tools/test/search-eval.json):
//    the ranking in process, and tools/call search_tools through the gateway against tools/call
//    whoami interleaved (the same hop with no work behind it), p50 and p99 (BENCH_SEARCH_REPEAT
//    passes, default 5).
//
//   npm run build && node scripts/bench/mcp.js
//
// Options (environment): BENCH_SECONDS (2 per round), BENCH_ROUNDS (2 rounds each), BENCH_CONCURRENCY (8).
'use strict';
/* global Headers */
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** CPU time this process used for each call of the last sustained() run (ms; client, gateway and services together). */
let lastCpuPerCall = 0;

/** `concurrency` callers in a loop for `seconds`; calls per second. */
async function sustained(seconds, concurrency, call) {
  const end = Date.now() + seconds * 1000;
  const cpu = process.cpuUsage();
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await call();
        done++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  lastCpuPerCall = (used.user + used.system) / 1000 / done;
  return done / seconds;
}

function httpClient(port, key) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const request = (method, p, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const payload = body ? Buffer.from(JSON.stringify(body)) : undefined;
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: p,
          agent,
          headers: {
            authorization: `Bearer ${key}`,
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 200)}`));
            resolve(JSON.parse(text));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { request, close: () => agent.destroy() };
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A tools/call as a client of either generation sends it. */
function toolCall(client, era, name, args = {}) {
  let id = 0;
  const accept = { accept: 'application/json, text/event-stream' };
  const headers =
    era === 'modern'
      ? { ...accept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name }
      : { ...accept, 'mcp-protocol-version': '2025-11-25' };
  return async () => {
    const params = { name, arguments: args, ...(era === 'modern' ? { _meta: MODERN_META } : {}) };
    const res = await client.request('POST', '/mcp', { jsonrpc: '2.0', id: ++id, method: 'tools/call', params }, headers);
    if (!res.result || res.result.isError) throw new Error(`tools/call ${name}: ${JSON.stringify(res).slice(0, 300)}`);
    return res.result.structuredContent;
  };
}

/** Alternating rounds of each call; the rate of each (calls/s, the mean of its rounds). */
async function compare(calls) {
  const rates = Object.fromEntries(Object.keys(calls).map((k) => [k, []]));
  const cpu = Object.fromEntries(Object.keys(calls).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, call] of Object.entries(calls)) {
      rates[k].push(await sustained(SECONDS, CONCURRENCY, call));
      cpu[k].push(lastCpuPerCall);
    }
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const out = Object.fromEntries(Object.entries(rates).map(([k, xs]) => [k, mean(xs)]));
  out.rounds = rates;
  out.cpu = Object.fromEntries(Object.entries(cpu).map(([k, xs]) => [k, mean(xs)]));
  return out;
}

/** Each round's rate of `k` as a share of the same round's `of` (%). */
const perRound = (r, k, of) => r.rounds[k].map((x, i) => ((100 * x) / r.rounds[of][i]).toFixed(0)).join(', ');

/** tools/list in the endpoint itself (@svc/tools' McpEndpoint): the server's time per call, no HTTP, no gateway. */
async function listServerTime(pageSize) {
  const { routes } = require('@svc/api');
  const { McpEndpoint, ToolCatalogue } = require('@svc/tools');
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const built = performance.now();
  const catalogue = ToolCatalogue.fromRoutes(routes);
  const buildMs = performance.now() - built;
  const endpoint = new McpEndpoint({ catalogue, dispatcher: null, pageSize, log, version: 'bench' });
  const caller = { principal: { kind: 'human', userId: 'u', accountId: 'a', keyId: 'k', channel: 'mcp' }, token: 't', requestId: 'r' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  const request = () => ({
    method: 'POST',
    url: 'http://bench/mcp',
    headers: new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' }),
    body,
  });
  const one = async () => (await endpoint.fetch(request(), caller)).body;
  for (let i = 0; i < 200; i++) await one();
  const times = [];
  for (let i = 0; i < 1000; i++) {
    const t = performance.now();
    await one();
    times.push(performance.now() - t);
  }
  await endpoint.close();
  return { buildMs, tools: catalogue.list().length, median: pct(times, 50), p99: pct(times, 99) };
}

const CODE_MODE_REPEAT = Number(process.env.BENCH_CODE_MODE ?? 40);

/** The search evaluation's requests (packages/tools/test/search-eval.json): what people and models ask search_tools. */
const SEARCH_QUERIES = JSON.parse(fs.readFileSync(path.join(__dirname, '../../packages/tools/test/search-eval.json'), 'utf8')).cases.map(
  (c) => c.query,
);
const SEARCH_REPEAT = Number(process.env.BENCH_SEARCH_REPEAT ?? 5);

/**
 * search_tools over the evaluation's requests: the ranking itself in process (ToolCatalogue.search,
 * no HTTP), and tools/call search_tools end to end through the gateway, interleaved with tools/call
 * whoami (the same hop with no work behind it: the baseline), one caller.
 */
async function search(client) {
  const { routes } = require('@svc/api');
  const { ToolCatalogue } = require('@svc/tools');
  const catalogue = ToolCatalogue.fromRoutes(routes);
  for (const q of SEARCH_QUERIES) catalogue.search(q); // warm-up
  const ranking = [];
  for (let r = 0; r < SEARCH_REPEAT * 4; r++) {
    for (const q of SEARCH_QUERIES) {
      const t = performance.now();
      catalogue.search(q);
      ranking.push(performance.now() - t);
    }
  }
  const whoami = toolCall(client, 'legacy', 'whoami');
  const searches = SEARCH_QUERIES.map((query) => toolCall(client, 'legacy', 'search_tools', { query }));
  for (const f of searches.slice(0, 10)) await f();
  const viaGateway = [];
  const baseline = [];
  for (let r = 0; r < SEARCH_REPEAT; r++) {
    for (const f of searches) {
      let t = performance.now();
      await f();
      viaGateway.push(performance.now() - t);
      t = performance.now();
      await whoami();
      baseline.push(performance.now() - t);
    }
  }
  return { ranking, viaGateway, baseline };
}

/**
 * Ten tool calls as ten tools/call round trips, and as one run_code whose script makes them (in
 * sequence, and all at once): milliseconds end to end per ten, interleaved, one caller.
 */
async function codeMode(client) {
  const ten = toolCall(client, 'legacy', 'list_drive');
  const script = (code) => {
    const call = toolCall(client, 'legacy', 'run_code', { code });
    return async () => {
      const r = await call();
      if (r.error || r.toolCalls !== 10) throw new Error(`run_code: ${JSON.stringify(r).slice(0, 300)}`);
    };
  };
  const ways = {
    separate: async () => {
      for (let i = 0; i < 10; i++) await ten();
    },
    sequential: script('let n = 0; for (let i = 0; i < 10; i++) n += (await svc.tools.list_drive({})).items.length; return n;'),
    parallel: script('const rs = await Promise.all(Array.from({ length: 10 }, () => svc.tools.list_drive({}))); return rs.length;'),
  };
  for (const f of Object.values(ways)) for (let i = 0; i < 5; i++) await f(); // warm-up
  const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (let i = 0; i < CODE_MODE_REPEAT; i++) {
    for (const [k, f] of Object.entries(ways)) {
      const t = performance.now();
      await f();
      times[k].push(performance.now() - t);
    }
  }
  return times;
}

async function main() {
  const { startStack } = require('@svc/stack');
  const { UNREACHED_LIMITS } = require('./lib.js');
  console.log(
    `mcp bench: node ${process.version}, ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}, ${ROUNDS}×${SECONDS} s per call, ${CONCURRENCY} callers`,
  );
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'));
  const stack = await startStack({
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
    // Limits it never reaches: the benchmark measures the limiter's cost, not its refusals.
    SVC_RATE_LIMITS: UNREACHED_LIMITS,
    SVC_RATE_LIMITS_ACCOUNT: UNREACHED_LIMITS,
  });
  const key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  const client = httpClient(stack.port, key);
  try {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) {
      await new Promise((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port: stack.port, method: 'POST', path: `/drive/upload?name=${name}`, headers: { authorization: `Bearer ${key}` } },
          (res) => res.resume().on('end', resolve),
        );
        req.on('error', reject);
        req.end('hello');
      });
    }
    const rest = () => client.request('GET', '/drive');
    const legacy = toolCall(client, 'legacy', 'list_drive');
    const modern = toolCall(client, 'modern', 'list_drive');
    const [a, b] = [await rest(), await legacy()];
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the tool and the route answer differently');
    await modern();
    for (const call of [rest, legacy, modern]) await sustained(1, CONCURRENCY, call); // warm-up

    const drive = await compare({ rest, legacy, modern });
    const me = await compare({ rest: () => client.request('GET', '/me'), legacy: toolCall(client, 'legacy', 'whoami') });
    const pctOf = (x, y) => ((100 * x) / y).toFixed(1);
    console.log(`\nread op as a tool vs REST (calls/s, same run, ${CONCURRENCY} callers):`);
    console.log(`  GET /drive ${drive.rest.toFixed(0)}`);
    console.log(
      `  tools/call list_drive, 2025-11-25: ${drive.legacy.toFixed(0)} (${pctOf(drive.legacy, drive.rest)}% of REST; rounds ${perRound(drive, 'legacy', 'rest')}%)`,
    );
    console.log(
      `  tools/call list_drive, 2026-07-28: ${drive.modern.toFixed(0)} (${pctOf(drive.modern, drive.rest)}% of REST; rounds ${perRound(drive, 'modern', 'rest')}%)`,
    );
    const c = drive.cpu;
    console.log(
      `  CPU per call (this process: client, gateway, services): GET /drive ${c.rest.toFixed(3)} ms, list_drive ${c.legacy.toFixed(3)} ms (2025-11-25; REST/MCP ${pctOf(c.rest, c.legacy)}%), ${c.modern.toFixed(3)} ms (2026-07-28; ${pctOf(c.rest, c.modern)}%)`,
    );
    console.log(
      `  GET /me ${me.rest.toFixed(0)}; tools/call whoami ${me.legacy.toFixed(0)} (${pctOf(me.legacy, me.rest)}%: /me is answered from a cache, so the MCP hop is most of it)`,
    );

    const listHttp = [];
    const listBody = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const listHeaders = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    for (let i = 0; i < 300; i++) {
      const t = performance.now();
      await client.request('POST', '/mcp', listBody, listHeaders);
      listHttp.push(performance.now() - t);
    }
    const server = await listServerTime(50);
    console.log(`\ntools/list (${server.tools} tools, pages of 50; catalogue built once per process in ${server.buildMs.toFixed(1)} ms):`);
    console.log(`  server time per call (the endpoint in process): median ${server.median.toFixed(3)} ms, p99 ${server.p99.toFixed(3)} ms`);
    console.log(`  through the gateway (POST /mcp, sequential): median ${pct(listHttp, 50).toFixed(2)} ms, p99 ${pct(listHttp, 99).toFixed(2)} ms`);
    const found = await search(client);
    console.log(`\nsearch_tools over the evaluation's ${SEARCH_QUERIES.length} requests (${SEARCH_REPEAT} passes, one caller):`);
    console.log(`  the ranking in process: median ${pct(found.ranking, 50).toFixed(3)} ms, p99 ${pct(found.ranking, 99).toFixed(3)} ms`);
    console.log(
      `  tools/call search_tools through the gateway: median ${pct(found.viaGateway, 50).toFixed(2)} ms, p99 ${pct(found.viaGateway, 99).toFixed(2)} ms; ` +
        `tools/call whoami interleaved: median ${pct(found.baseline, 50).toFixed(2)} ms, p99 ${pct(found.baseline, 99).toFixed(2)} ms ` +
        `(search/whoami: median ${(pct(found.viaGateway, 50) / pct(found.baseline, 50)).toFixed(2)}×, p99 ${(pct(found.viaGateway, 99) / pct(found.baseline, 99)).toFixed(2)}×)`,
    );
    const cm = await codeMode(client);
    const med = (k) => pct(cm[k], 50);
    console.log(`\ncode mode: ten list_drive calls, end to end (ms per ten, ${CODE_MODE_REPEAT} interleaved repetitions, one caller):`);
    for (const [k, label] of [
      ['separate', 'ten tools/call, one after the other'],
      ['sequential', 'one run_code, the script awaiting each in turn'],
      ['parallel', 'one run_code, the script making all ten at once (4 in flight)'],
    ]) {
      console.log(`  ${label}: median ${med(k).toFixed(1)}, p99 ${pct(cm[k], 99).toFixed(1)}`);
    }
    console.log(
      `  one run_code over ten tools/call: ${((100 * med('sequential')) / med('separate')).toFixed(0)}% of the time in sequence, ${((100 * med('parallel')) / med('separate')).toFixed(0)}% at once`,
    );
    console.log(
      `load average at the end: ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    client.close();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
