#!/usr/bin/env node
'use strict';
// The Git front against git's own HTTP server, in one run on one machine: `git clone --bare` of
//   1. a taste profile of 1,000 versions through the gateway (/git/profiles/<id>.git): the first
//      clone (the repository materialised from the profiles service), then clones of the cached one
//      (each still asks the service whether the history moved);
//   2. the same repository (a bare copy of what the gateway served, so the same objects) behind
//      `git http-backend`, run as CGI by a bare node:http server, as a plain Git host would.
// Reports the median clone time of each and the gateway's speed relative to http-backend.
// Usage: node scripts/bench/git.js [rounds=7]   (about 20 s; backends follow the environment)
const { execFile, execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const { startTarget } = require('./lib.js');

const VERSIONS = 1000;
const GIT_ENV = { PATH: process.env.PATH, HOME: os.tmpdir(), GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' };

/** A profile's history to import: one branch, each version a window of 20 constraints moving by one. */
function history() {
  const versions = [];
  const t0 = Date.parse('2025-01-01T00:00:00Z');
  for (let i = 0; i < VERSIONS; i++) {
    const constraints = [];
    for (let j = Math.max(0, i - 19); j <= i; j++)
      constraints.push({ id: `c${j}`, question: `Question ${j}: warm light at hour ${j % 24}?`, answer: j % 3 ? 'yes' : 'no' });
    versions.push({
      id: `ver_${String(i).padStart(4, '0')}`,
      branchId: 'main',
      parentVersionId: i ? `ver_${String(i - 1).padStart(4, '0')}` : null,
      message: `version ${i}`,
      createdAt: new Date(t0 + i * 60_000).toISOString(),
      snapshot: { constraints, exemplars: [], comparisons: [], latentScores: { warmth: (i % 100) / 100 } },
    });
  }
  return { versions, branches: [{ id: 'main', name: 'main', headVersionId: versions.at(-1).id }], currentBranchId: 'main' };
}

/** `git http-backend` as CGI over node:http, serving the repositories under `root`. */
function httpBackend(root) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const child = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: req.headers['git-protocol'] } : {}),
      },
    });
    req.pipe(child.stdin);
    let head = Buffer.alloc(0);
    let inBody = false;
    child.stdout.on('data', (chunk) => {
      if (inBody) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const [k, v] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
        if (k.toLowerCase() === 'status') res.statusCode = Number(v.split(' ')[0]);
        else res.setHeader(k, v);
      }
      inBody = true;
      res.write(head.subarray(end + 4));
    });
    child.stdout.on('end', () => res.end());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Times a `git clone --bare` (asynchronously: the http-backend server runs in this process). */
async function clone(url, dir) {
  const t = process.hrtime.bigint();
  await new Promise((resolve, reject) =>
    execFile('git', ['clone', '--bare', '--quiet', url, dir], { env: GIT_ENV }, (err, _out, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(),
    ),
  );
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  fs.rmSync(dir, { recursive: true, force: true });
  return ms;
}

async function main() {
  const rounds = Number(process.argv[2] ?? 7);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-git-'));
  const stack = await startTarget('stack', { SVC_BODY_LIMIT: '20mb' });
  let backend;
  try {
    const base = `http://127.0.0.1:${stack.port}`;
    const auth = { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json' };
    let t = Date.now();
    const created = await fetch(`${base}/profiles`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'bench', profileData: history() }),
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
    const { id } = await created.json();
    console.log(`profile of ${VERSIONS} versions imported in ${Date.now() - t} ms`);
    const gw = `http://bench:${stack.key}@127.0.0.1:${stack.port}/git/profiles/${id}.git`;

    const cold = await clone(gw, path.join(work, 'cold'));
    // The plain host serves a bare copy of what the gateway served: the same objects and refs.
    const root = path.join(work, 'plain');
    fs.mkdirSync(root);
    execFileSync('git', ['clone', '--bare', '--quiet', gw, path.join(root, 'profile.git')], { env: GIT_ENV });
    const count = execFileSync('git', ['rev-list', '--count', 'main'], { cwd: path.join(root, 'profile.git'), env: GIT_ENV })
      .toString()
      .trim();
    const objects = execFileSync('git', ['count-objects', '-v'], { cwd: path.join(root, 'profile.git'), env: GIT_ENV }).toString();
    backend = await httpBackend(root);
    const plain = `http://127.0.0.1:${backend.address().port}/profile.git`;
    await clone(plain, path.join(work, 'warm'));

    const times = { gateway: [], plain: [] };
    t = Date.now();
    for (let i = 0; i < rounds; i++) {
      times.gateway.push(await clone(gw, path.join(work, `g${i}`)));
      times.plain.push(await clone(plain, path.join(work, `p${i}`)));
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const g = median(times.gateway);
    const p = median(times.plain);
    console.log(
      `\n${count} commits; ${objects.replace(/\n/g, ' ').trim()}; median of ${rounds} clones each, git ${execFileSync('git', ['--version']).toString().trim()}, node ${process.version}, backends: ${JSON.stringify(stack.backends)}\n`,
    );
    console.log('| clone --bare | ms | vs http-backend |');
    console.log('|---|---:|---:|');
    console.log(`| gateway, first clone (materialises ${VERSIONS} versions) | ${cold.toFixed(0)} | ${((p / cold) * 100).toFixed(0)}% |`);
    console.log(`| gateway, cached repository | ${g.toFixed(0)} | ${((p / g) * 100).toFixed(0)}% |`);
    console.log(`| git http-backend (CGI), same repository | ${p.toFixed(0)} | 100% |`);
  } finally {
    backend?.close();
    await stack.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
