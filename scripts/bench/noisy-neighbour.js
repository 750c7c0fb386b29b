#!/usr/bin/env node
// Noisy neighbour: one account floods heavy operations while another runs a light mix, on one
// stack; the light tenant's latency under the flood against its own quiet latency, same run.
//
//   npm run build && node scripts/bench/noisy-neighbour.js                  # embedded backends
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 \
//   NATS_URL=nats://127.0.0.1:4222 node scripts/bench/noisy-neighbour.js   # real backends
//
// The stack runs as its own process (the image's entrypoint), so neither tenant's client shares
// its event loop. The light tenant runs, one request at a time, GET /v1/me, GET /v1/drive, a read
// of a small file and a message posted to a thread (rotating), pausing BENCH_LIGHT_PAUSE_MS (20)
// between requests, a light user within its rate limits; the heavy tenant runs
// BENCH_HEAVY_WORKERS (8) loops of: drive grep with the pattern ^(a+)+$ in regex mode over a file
// of a's, run_code of a 1 s busy loop, an 8 MiB upload (each connection replacing a file of its
// own), and a diff of two profile versions of 2,000 items each (BENCH_FLOOD_OPS: some of
// grep,code,upload,diff, to flood with those alone). Phases: quiet (the light mix alone), flood (both), each BENCH_SECONDS (20). The figure
// is the light tenant's p99 under the flood over its quiet p99 (target: at most 2), over the answers
// that did the work (below 400: its own rate limit's 429s are instant and say nothing of the
// flood; the ratio over every answer is printed beside it), with p50 beside
// it, and how the heavy tenant's requests were answered (statuses: refusals such as 429 are the
// platform protecting the other tenant, and are counted, not hidden).
'use strict';
const { fork, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { freePort, freshDatabase } = require('./lib.js');

const ROOT = path.resolve(__dirname, '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const HEAVY_WORKERS = Number(process.env.BENCH_HEAVY_WORKERS ?? 8);
/** The heavy operations the flood rotates through (to see which one costs the light tenant what). */
/** The light tenant's pause between its requests (ms): a light user, within its rate limits (0: as fast as it can). */
const LIGHT_PAUSE_MS = Number(process.env.BENCH_LIGHT_PAUSE_MS ?? 20);
const FLOOD_OPS = (process.env.BENCH_FLOOD_OPS ?? 'grep,code,upload,diff').split(',').map((s) => s.trim());
const MiB = 1024 * 1024;

async function startStack(env) {
  const port = await freePort();
  const child = spawn(process.execPath, [...(process.env.BENCH_STACK_NODE_ARGS?.split(' ').filter(Boolean) ?? []), './apps/stack/dist/main.js'], {
    cwd: ROOT,
    env: { ...process.env, ...env, SVC_SERVICE: 'all', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the stack exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the stack did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((r) => {
        child.once('exit', r);
        child.kill('SIGTERM');
      }),
  };
}

function client(url, key) {
  return async (method, p, body, headers = {}) => {
    const h = { authorization: `Bearer ${key}`, ...headers };
    let payload = body;
    if (body !== undefined && !Buffer.isBuffer(body) && typeof body !== 'string') {
      h['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(url + p, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed };
  };
}

async function must(res, what) {
  const r = await res;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
}

const percentile = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function setUp(url, bootstrapKey) {
  const operator = client(url, bootstrapKey);
  const account = async (name) => (await must(operator('POST', '/v1/accounts', { kind: 'user', name }), 'create account')).key;
  const light = client(url, await account('light tenant'));
  const heavyKey = await account('heavy tenant');
  const heavy = client(url, heavyKey);

  const note = await must(light('POST', '/v1/drive/upload?name=note.txt', Buffer.from('hello from the light tenant\n'.repeat(20))), 'light upload');
  const agent = await must(light('POST', '/v1/agents', { name: 'helper' }), 'light agent');
  const thread = await must(light('POST', '/v1/threads', { agentId: agent.id, title: 'light' }), 'light thread');
  const lightMix = {
    me: () => light('GET', '/v1/me'),
    list: () => light('GET', '/v1/drive'),
    read: () => light('GET', `/v1/drive/${note.id}/content`),
    post: () => light('POST', `/v1/threads/${thread.id}/inject`, { content: 'a note', mode: 'enqueue' }),
  };

  const aaa = await must(heavy('POST', '/v1/drive/upload?name=aaa.txt', Buffer.from(`${'a'.repeat(22)}!\n`.repeat(4))), 'heavy grep file');
  const profile = await must(heavy('POST', '/v1/profiles', { name: 'big' }), 'heavy profile');
  const constraint = (n, salt) => ({ id: `c${n}`, question: `Does the image show quality ${n}?`, answer: `answer ${salt}`, weight: (n % 7) / 7 });
  const versions = [];
  for (const salt of [1, 2]) {
    const constraints = Array.from({ length: 2000 }, (_, n) => constraint(n, salt));
    await must(
      heavy('PATCH', `/v1/profiles/${profile.id}`, { profileData: { workingChanges: { constraints, exemplars: [], comparisons: [] } } }),
      'heavy profile items',
    );
    const committed = await must(heavy('POST', `/v1/profiles/${profile.id}/commits`, { message: `version ${salt}` }), 'heavy profile commit');
    versions.push(committed.id ?? committed.version?.id ?? committed.versionId);
  }
  const diffPath = versions.every(Boolean)
    ? `/v1/profiles/${profile.id}/diff?from=${versions[0]}&to=${versions[1]}`
    : `/v1/profiles/${profile.id}/diff`;
  const grepFolder = aaa.parentId ? `&folderId=${aaa.parentId}` : '';
  return { lightMix, heavy: { url, key: heavyKey, grepFolder, diffPath } };
}

/** The heavy tenant's operations, in the flood's own process (the light client's loop never waits on them). */
function heavyOps({ url, key, grepFolder, diffPath }) {
  const heavy = client(url, key);
  const body = randomBytes(8 * MiB);
  // Each flood connection (w) writes a file of its own, then replaces it (If-Match: *) each time:
  // every upload is real work (no 409 for a taken name), and the replaced content is collected.
  const made = new Set();
  const upload = async (w) => {
    const res = await heavy('POST', `/v1/drive/upload?name=big-${w}.bin`, body, made.has(w) ? { 'if-match': '*' } : {});
    if (res.status < 300) made.add(w);
    return res;
  };
  const ops = {
    grep: () => heavy('GET', `/v1/drive/grep?pattern=${encodeURIComponent('^(a+)+$')}&regex=true${grepFolder}`),
    code: () => heavy('POST', '/v1/code/run', { code: 'const s = Date.now(); while (Date.now() - s < 1000) {} 1', timeoutMs: 5000 }),
    upload,
    diff: () => heavy('GET', diffPath),
  };
  return FLOOD_OPS.map((name) => {
    if (!ops[name]) throw new Error(`BENCH_FLOOD_OPS: no operation ${name} (${Object.keys(ops).join(', ')})`);
    return ops[name];
  });
}

/** The flood's process: HEAVY_WORKERS loops until the parent says stop, then the statuses it saw. */
async function flood(spec) {
  const ops = heavyOps(spec);
  let flooding = true;
  process.on('message', (m) => {
    if (m === 'stop') flooding = false;
  });
  const statuses = {};
  const workers = Array.from({ length: HEAVY_WORKERS }, async (_, w) => {
    for (let i = w; flooding; i++) {
      try {
        const res = await ops[i % ops.length](w);
        const k = statusKey(res);
        statuses[k] = (statuses[k] ?? 0) + 1;
        if (res.status === 429) await new Promise((r) => setTimeout(r, 100));
      } catch (err) {
        statuses[err.message] = (statuses[err.message] ?? 0) + 1;
      }
    }
  });
  process.send('started');
  await Promise.all(workers);
  process.send({ statuses });
}

// A status, and for a refusal the error code it named (429 concurrency_limit, 409 …).
const statusKey = (res) => (res.status >= 400 && res.body?.error?.code ? `${res.status} ${res.body.error.code}` : String(res.status));

async function runLight(lightMix, seconds) {
  const ops = Object.entries(lightMix);
  const latencies = [];
  // The answers that did the operation's work (below 400): the light tenant's own rate limit
  // answers 429 at once, and the faster the stack, the more of its loop those refusals are.
  const served = [];
  const byOp = Object.fromEntries(ops.map(([name]) => [name, []]));
  const statuses = {};
  const end = Date.now() + seconds * 1000;
  for (let i = 0; Date.now() < end; i++) {
    const [name, run] = ops[i % ops.length];
    const t0 = process.hrtime.bigint();
    const res = await run();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    latencies.push(ms);
    if (res.status < 400) {
      served.push(ms);
      byOp[name].push(ms);
    }
    const k = statusKey(res);
    statuses[k] = (statuses[k] ?? 0) + 1;
    if (LIGHT_PAUSE_MS > 0) await new Promise((r) => setTimeout(r, LIGHT_PAUSE_MS));
  }
  return { latencies, served, byOp, statuses };
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-noisy-'));
  const db = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : null;
  const stack = await startStack({
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    SVC_DRIVE_GRACE_SECONDS: '0',
    SVC_DRIVE_COLLECT_INTERVAL_MS: '1000',
    ...(db ? { DATABASE_URL: db.url } : {}),
  });
  try {
    const bootstrapKey = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
    const { lightMix, heavy } = await setUp(stack.url, bootstrapKey);
    await runLight(lightMix, 3); // warm-up
    const quiet = await runLight(lightMix, SECONDS);

    const flooder = fork(__filename, [], { env: { ...process.env, BENCH_FLOOD: JSON.stringify(heavy) }, stdio: 'inherit' });
    const answered = new Promise((resolve, reject) => {
      flooder.on('message', (m) => m?.statuses && resolve(m.statuses));
      flooder.on('exit', (code) => reject(new Error(`the flood's process exited with ${code}`)));
    });
    await new Promise((r) => flooder.once('message', r)); // started
    await new Promise((r) => setTimeout(r, 1000)); // the flood under way
    const flooded = await runLight(lightMix, SECONDS);
    flooder.send('stop');
    const heavyStatuses = await answered;
    flooder.kill();

    const row = (name, r) =>
      `${name.padEnd(6)} requests ${String(r.latencies.length).padStart(5)}  p50 ${percentile(r.latencies, 50).toFixed(1).padStart(7)} ms  p99 ${percentile(r.latencies, 99).toFixed(1).padStart(7)} ms  ` +
      `(served, below 400: ${r.served.length}, p50 ${percentile(r.served, 50).toFixed(1)} ms, p99 ${percentile(r.served, 99).toFixed(1)} ms)  statuses ${JSON.stringify(r.statuses)}`;
    console.log(
      `backends: ${db ? 'real PostgreSQL' : 'embedded PGlite'}${process.env.REDIS_URL ? ', Redis' : ''}${process.env.NATS_URL ? ', NATS' : ''}; ${HEAVY_WORKERS} heavy workers, ${SECONDS} s a phase`,
    );
    console.log(row('quiet', quiet));
    console.log(row('flood', flooded));
    // Each operation of the light mix on its own (where the tail comes from): p99 quiet -> flood.
    const each = Object.keys(quiet.byOp).map(
      (op) => `${op} ${percentile(quiet.byOp[op], 99).toFixed(1)} -> ${percentile(flooded.byOp[op], 99).toFixed(1)}`,
    );
    console.log(`light p99 by operation, served answers, ms (quiet -> flood): ${each.join(', ')}`);
    console.log(`heavy tenant's answers: ${JSON.stringify(heavyStatuses)}`);
    const ratio = (k, p) => percentile(flooded[k], p) / percentile(quiet[k], p);
    console.log(
      `light tenant under the flood, served answers: p99 ${ratio('served', 99).toFixed(2)}x its quiet p99 (target <= 2), p50 ${ratio('served', 50).toFixed(2)}x; ` +
        `every answer (its own 429s included): p99 ${ratio('latencies', 99).toFixed(2)}x, p50 ${ratio('latencies', 50).toFixed(2)}x`,
    );
  } finally {
    await stack.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.env.BENCH_FLOOD) {
  flood(JSON.parse(process.env.BENCH_FLOOD)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
