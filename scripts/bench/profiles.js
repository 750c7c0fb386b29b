#!/usr/bin/env node
// Large taste profile benchmark: builds a profile of 10,000 items over 1,000 versions through the
// public API (working changes + POST /commits), then measures GET and commit latency end to end
// (HTTP → gateway → gRPC → profiles service → SQL) and the storage it takes.
//
//   npm run build && node scripts/bench/profiles.js            # embedded backends (PGlite)
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node scripts/bench/profiles.js
//
// Options (environment): BENCH_VERSIONS (1000), BENCH_ITEMS (10000), BENCH_SAMPLES (30).
// With DATABASE_URL the benchmark creates (and drops) a database of its own on that server.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const { freshDatabase } = require('./lib.js');

const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 1000);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 10000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 30);
const PER_COMMIT = Math.ceil(ITEMS / VERSIONS);

async function main() {
  const { startStack } = require('@svc/stack');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-profiles-'));
  let db = null;
  if (process.env.DATABASE_URL) db = await freshDatabase(process.env.DATABASE_URL);
  const env = {
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: `bench${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
    // The spec's PATCH commit sends the whole new snapshot (~2 MB here): over the 1 MB default.
    SVC_BODY_LIMIT: '32mb',
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  };
  const stack = await startStack(env);
  const key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  const base = `http://127.0.0.1:${stack.port}/v1`;
  const call = async (method, p, body, headers = {}) => {
    const res = await fetch(base + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
    return { body: JSON.parse(text), bytes: text.length, etag: res.headers.get('etag') };
  };

  try {
    const backend = db ? 'PostgreSQL' : 'PGlite (embedded)';
    console.log(`profiles bench: ${ITEMS} items over ${VERSIONS} versions, ${backend}, node ${process.version}, ${os.cpus().length} CPUs`);
    const { body: profile } = await call('POST', '/profiles', { name: 'bench' });
    const url = `/profiles/${profile.id}`;

    // Build: each version adds PER_COMMIT items (half constraints, 3/10 exemplars, 2/10 comparisons)
    // and every tenth one also edits two older items in the middle.
    let n = 0;
    const commitTimes = [];
    const t0 = Date.now();
    for (let v = 0; v < VERSIONS; v++) {
      const constraints = [];
      const exemplars = [];
      const comparisons = [];
      for (let i = 0; i < PER_COMMIT && n < ITEMS; i++, n++) {
        const r = n % 10;
        if (r < 5) constraints.push(constraint(n));
        else if (r < 8) exemplars.push(exemplar(n));
        else comparisons.push(comparison(n));
      }
      if (v % 10 === 9) {
        const a = Math.floor(n / 3 / 10) * 10;
        constraints.push({ ...constraint(a), answer: `edited at version ${v}` });
      }
      await call('PATCH', url, { profileData: { workingChanges: { constraints, exemplars, comparisons } } });
      const s = performance.now();
      await call('POST', `${url}/commits`, { message: `version ${v}` });
      commitTimes.push(performance.now() - s);
      if ((v + 1) % 100 === 0) process.stdout.write(`  built ${v + 1} versions (${Math.round((Date.now() - t0) / 1000)} s)\n`);
    }
    console.log(`build: ${VERSIONS} commits in ${((Date.now() - t0) / 1000).toFixed(1)} s; commit latency while growing: ${fmt(stats(commitTimes))}`);

    const first = await call('GET', url);
    const eff = first.body.effectiveSnapshot;
    const count = ['constraints', 'exemplars', 'comparisons'].reduce((s, k) => s + eff[k].length, 0);
    console.log(
      `profile: ${count} items in the effective snapshot (${(JSON.stringify(eff).length / 1e6).toFixed(2)} MB), ` +
        `${first.body.profileData.versions.length} versions; GET body ${(first.bytes / 1e6).toFixed(2)} MB ` +
        `(versions listed without snapshots: ${first.body.profileData.versions[0].snapshot === undefined})`,
    );

    const rows = [];
    const measure = async (name, fn) => {
      const times = [];
      for (let i = 0; i < SAMPLES; i++) {
        const s = performance.now();
        await fn(i);
        times.push(performance.now() - s);
      }
      rows.push([name, stats(times)]);
    };
    await measure('GET /profiles/:id', () => call('GET', url));
    await measure('GET /profiles/:id/log?limit=50', () => call('GET', `${url}/log?limit=50`));
    await measure('GET /profiles/:id/diff (head vs parent)', () => call('GET', `${url}/diff`));
    let m = ITEMS;
    // POST /commits alone: the working changes (one new item) are set beforehand, outside the timing.
    const commitOnly = [];
    for (let i = 0; i < SAMPLES; i++) {
      await call('PATCH', url, { profileData: { workingChanges: { constraints: [constraint(m++)], exemplars: [], comparisons: [] } } });
      const s = performance.now();
      await call('POST', `${url}/commits`, { message: `bench ${i}` });
      commitOnly.push(performance.now() - s);
    }
    rows.push(['POST /profiles/:id/commits', stats(commitOnly)]);

    // The spec's commit: PATCH with every version (without snapshots) plus the new one with its full snapshot.
    const patchTimes = [];
    let bodyMb = 0;
    for (let i = 0; i < Math.min(SAMPLES, 10); i++) {
      const cur = await call('GET', url);
      const p = cur.body.profileData;
      const head = p.branches.find((b) => b.id === p.currentBranchId).headVersionId;
      const snapshot = cur.body.effectiveSnapshot;
      snapshot.constraints = [...snapshot.constraints, constraint(m++)];
      const id = `ver_patch${i}`;
      const body = {
        profileData: {
          versions: [...p.versions, { id, branchId: 'main', parentVersionId: head, message: `patch ${i}`, snapshot }],
          branches: p.branches.map((b) => (b.id === 'main' ? { ...b, headVersionId: id } : b)),
          workingChanges: { constraints: [], exemplars: [], comparisons: [] },
        },
      };
      bodyMb = JSON.stringify(body).length / 1e6;
      const s = performance.now();
      await call('PATCH', `${url}?snapshots=false`, body, { 'if-match': cur.etag });
      patchTimes.push(performance.now() - s);
    }
    rows.push([`PATCH /profiles/:id (spec commit, ${bodyMb.toFixed(2)} MB body)`, stats(patchTimes)]);

    console.log('\n| operation | median ms | p95 ms | min ms |');
    console.log('|---|---:|---:|---:|');
    for (const [name, s] of rows) console.log(`| ${name} | ${s.median.toFixed(1)} | ${s.p95.toFixed(1)} | ${s.min.toFixed(1)} |`);

    const sql = await stack.backends.sql();
    const [st] = await sql.query(
      `SELECT (SELECT count(*) FROM profiles.versions WHERE profile_id = $1)::int AS versions,
              (SELECT coalesce(sum(snapshot_bytes), 0) FROM profiles.versions WHERE profile_id = $1)::bigint AS naive,
              (SELECT count(*) FROM profiles.chunks WHERE profile_id = $1)::int AS chunks,
              (SELECT coalesce(sum(length(body)), 0) FROM profiles.chunks WHERE profile_id = $1)::bigint AS chunk_bytes,
              (SELECT coalesce(sum(length(manifest::text)), 0) FROM profiles.versions WHERE profile_id = $1)::bigint AS manifest_bytes`,
      [profile.id],
    );
    console.log(
      `\nstorage: ${st.versions} versions; snapshots stored whole would take ${(Number(st.naive) / 1e6).toFixed(0)} MB; ` +
        `as ${st.chunks} shared chunks ${(Number(st.chunk_bytes) / 1e6).toFixed(1)} MB + manifests ${(Number(st.manifest_bytes) / 1e6).toFixed(1)} MB`,
    );
  } finally {
    await stack.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const constraint = (n) => ({
  id: `c${n}`,
  question: `Does the image show quality ${n}?`,
  answer: n % 3 ? 'yes, strongly' : 'no',
  weight: (n % 7) / 7,
});
const exemplar = (n) => ({ id: `e${n}`, imageUrl: `https://images.example.com/frames/${n}.jpg`, label: n % 4 ? 'good' : 'bad', note: `frame ${n}` });
const comparison = (n) => ({ id: `p${n}`, winnerFrameId: `frame_${n}`, loserFrameId: `frame_${n + 1}`, strength: 0.5 + (n % 5) / 10 });

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), min: s[0] };
}
const fmt = (s) => `median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms`;

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
