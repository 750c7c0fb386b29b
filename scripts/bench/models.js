#!/usr/bin/env node
// Models benchmark (docs/models.md, "Performance"), each comparison measured in one run:
//   1. inference streaming: time to first token (TTFT) and deltas per second through the models
//      service's Infer stream (gRPC → the models service → the `openai` SDK adapter → upstream),
//      against the same fake upstream called directly with the `openai` SDK. The upstream is an
//      OpenAI-compatible SSE server in its own process; two shapes:
//      - `model-like`: the first token after FIRST_MS (50) ms, then 100 deltas 2 ms
//        apart (500 deltas/s, faster than hosted models stream);
//      - `burst`: no wait, the deltas back to back (what the pipe itself sustains).
//      Targets: ≤ 10% added TTFT and ≥ 90% of the direct delta rate (on the model-like shape).
//   2. GET /models against an authenticated GET /me (the thinnest authenticated route), requests/s
//      on one stack in its own process; target ≥ 80%.
//
//   npm run build && node scripts/bench/models.js
//
// Options (environment): BENCH_SAMPLES (15 streams per shape and path), BENCH_SECONDS (2 per
// throughput round), BENCH_ROUNDS (3). Backends follow the environment, embedded otherwise.
'use strict';
const { fork } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { dropStream, freshDatabase, measure, startTarget } = require('./lib.js');

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 15);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SHAPES = {
  'model-like': { firstMs: 50, deltas: 100, deltaMs: 2 },
  burst: { firstMs: 0, deltas: 100, deltaMs: 0 },
};

/** The fake upstream (child process): POST /v1/chat/completions streams per the shape named in the model. */
function upstreamMain() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      const shape = SHAPES[body.model] ?? SHAPES.burst;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: body.model };
      const send = (delta, finish = null) =>
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      if (shape.firstMs) await sleep(shape.firstMs);
      for (let i = 0; i < shape.deltas; i++) {
        send({ content: `tok${i} ` });
        if (shape.deltaMs) await sleep(shape.deltaMs);
      }
      send({}, 'stop');
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: shape.deltas, total_tokens: shape.deltas + 5 } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}

function startUpstream() {
  const child = fork(__filename, ['--upstream'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', (m) => resolve({ port: m.port, stop: () => child.kill('SIGKILL') })));
}

/** One stream's TTFT (ms) and delta rate (deltas/s after the first), from an async iterable of "is it a delta". */
async function timeStream(start, events) {
  let first;
  let last;
  let n = 0;
  for await (const isDelta of events) {
    if (!isDelta) continue;
    const now = performance.now();
    first ??= now;
    last = now;
    n++;
  }
  return { ttft: first - start, rate: n > 1 ? ((n - 1) * 1000) / (last - first) : NaN, n };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (x) => `${(x * 100).toFixed(1)}%`;

async function streaming() {
  const OpenAI = require(require.resolve('openai', { paths: [path.join(__dirname, '../../services/models')] })).default;
  const { PrincipalSigner } = require('@svc/kit');
  const { models } = require('@svc/proto');
  const { startStack } = require('@svc/stack');
  const upstream = await startUpstream();
  const baseUrl = `http://127.0.0.1:${upstream.port}/v1`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-models-'));
  const secret = randomBytes(32).toString('hex');
  const results = {};
  const namespaces = [];
  let stack;
  let db;
  try {
    // The first-party model goes to the fake: a free model, no key, no credits; the model name
    // sent upstream selects the shape.
    const env = {
      ...process.env,
      SVC_SERVICE: 'all',
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
      SVC_INTERNAL_SECRET: secret,
      LOG_LEVEL: 'silent',
      SVC_MODELS_FIRST_PARTY_URL: baseUrl,
    };
    const direct = new OpenAI({ apiKey: 'none', baseURL: baseUrl, maxRetries: 0 });
    for (const shape of Object.keys(SHAPES)) {
      // A fresh database per stack on a real server (DATABASE_URL), embedded otherwise.
      db = await freshDatabase();
      namespaces.push(`bench${randomBytes(4).toString('hex')}`);
      stack = await startStack({
        ...env,
        ...(db.url ? { DATABASE_URL: db.url } : {}),
        SVC_MODELS_FIRST_PARTY_MODEL: shape,
        SVC_NAMESPACE: namespaces[namespaces.length - 1],
      });
      const client = stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
      const token = (await new PrincipalSigner(secret).sign({ kind: 'agent', agentId: 'agt_bench', accountId: 'acct_bench', channel: 'internal' }))
        .token;
      const message = { role: 'user', content: 'hi', toolCalls: [], toolCallId: '', name: '' };
      const viaService = async () => {
        const start = performance.now();
        const events = client.infer({ model: 'svc/first', messages: [message], tools: [], chargeKey: '' }, { principalToken: token });
        return timeStream(
          start,
          (async function* () {
            for await (const e of events) yield e.delta !== undefined && e.delta !== '';
          })(),
        );
      };
      const viaDirect = async () => {
        const start = performance.now();
        const events = await direct.chat.completions.create({ model: shape, messages: [{ role: 'user', content: 'hi' }], stream: true });
        return timeStream(
          start,
          (async function* () {
            for await (const c of events) yield Boolean(c.choices?.[0]?.delta?.content);
          })(),
        );
      };
      for (let i = 0; i < 5; i++) {
        await viaDirect();
        await viaService();
      }
      const d = [];
      const s = [];
      // Interleaved, so a burst of background load hits both paths alike.
      for (let i = 0; i < SAMPLES; i++) {
        d.push(await viaDirect());
        s.push(await viaService());
      }
      if (s.some((x) => x.n !== SHAPES[shape].deltas)) throw new Error(`${shape}: a stream through the service lost deltas`);
      results[shape] = {
        direct: { ttft: median(d.map((x) => x.ttft)), rate: median(d.map((x) => x.rate)) },
        service: { ttft: median(s.map((x) => x.ttft)), rate: median(s.map((x) => x.rate)) },
      };
      await stack.stop();
      stack = undefined;
      await db.drop();
      db = undefined;
    }
  } finally {
    await stack?.stop();
    await db?.drop();
    for (const n of namespaces) await dropStream(n);
    upstream.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\ninference streams (median of ${SAMPLES} per path, interleaved; ${SHAPES['model-like'].deltas} deltas each):`);
  console.log('| upstream | path | TTFT ms | deltas/s |');
  console.log('|---|---|---:|---:|');
  for (const [shape, r] of Object.entries(results)) {
    console.log(`| ${shape} | direct (openai SDK → fake) | ${r.direct.ttft.toFixed(2)} | ${r.direct.rate.toFixed(0)} |`);
    console.log(`| ${shape} | Infer (gRPC → models → openai SDK → fake) | ${r.service.ttft.toFixed(2)} | ${r.service.rate.toFixed(0)} |`);
  }
  for (const [shape, r] of Object.entries(results)) {
    const added = r.service.ttft / r.direct.ttft - 1;
    const rate = r.service.rate / r.direct.rate;
    console.log(
      `${shape}: added TTFT ${(r.service.ttft - r.direct.ttft).toFixed(2)} ms (${pct(added)}), delta rate ${pct(rate)} of direct` +
        (shape === 'model-like' ? ` — targets ≤10% TTFT: ${added <= 0.1 ? 'MET' : 'NOT MET'}, ≥90% rate: ${rate >= 0.9 ? 'MET' : 'NOT MET'}` : ''),
    );
  }
}

async function listing() {
  const target = await startTarget('stack');
  const headers = { authorization: `Bearer ${target.key}` };
  const me = [];
  const list = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await measure(target, '/me', headers, SECONDS);
      const b = await measure(target, '/models', headers, SECONDS);
      if (a.errors || b.errors) throw new Error(`failed requests: /me ${a.errors}, /models ${b.errors} (${b.statuses})`);
      me.push(a);
      list.push(b);
    }
  } finally {
    await target.stop();
  }
  const ratios = list.map((r, i) => r.rps / me[i].rps);
  const m = (rs) => median(rs.map((r) => r.rps));
  console.log(`\nGET /models against GET /me (${ROUNDS} rounds of ${SECONDS} s each, 32 connections, one stack in its own process):`);
  console.log(
    `  GET /me ${m(me).toFixed(0)} req/s (p50 ${(median(me.map((r) => r.p50)) / 1000).toFixed(2)} ms, CPU ${median(me.map((r) => r.cpuPerRequestUs)).toFixed(0)} µs/req)`,
  );
  console.log(
    `  GET /models ${m(list).toFixed(0)} req/s (p50 ${(median(list.map((r) => r.p50)) / 1000).toFixed(2)} ms, CPU ${median(list.map((r) => r.cpuPerRequestUs)).toFixed(0)} µs/req)`,
  );
  const ratio = median(ratios);
  console.log(`  per round ${ratios.map(pct).join(', ')}; median ${pct(ratio)} — target ≥80%: ${ratio >= 0.8 ? 'MET' : 'NOT MET'}`);
}

async function main() {
  console.log(`models bench: node ${process.version}, ${os.cpus().length} CPUs`);
  const only = process.argv[2];
  if (!only || only === 'stream') await streaming();
  if (!only || only === 'list') await listing();
}

if (process.argv[2] === '--upstream') upstreamMain();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
