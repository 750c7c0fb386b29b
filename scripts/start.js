#!/usr/bin/env node
// `npm start`: builds when needed, then runs the whole platform in this process with tracing
// loaded first. SVC_SERVICE picks one service instead of all. The build is SWC's, file by file and
// without type-checking (scripts/transpile.js: a few seconds on a fresh clone); type-checking is
// `npm run build`'s and `npm test`'s (SWC and tsc are both dev dependencies: `npm ci` installs them).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

/**
 * The embedded database of a new data folder, created in a child process while the build runs:
 * PGlite's initdb takes most of a first start, and the WebAssembly memory it grows to (~800 MB)
 * is never given back, so the platform's process opens the database made (~300 MB) instead. It is
 * made in a folder of its own and renamed into place, so a cut-off start leaves no half database.
 */
function prepareDatabase() {
  if (process.env.DATABASE_URL) return Promise.resolve();
  const dir = path.resolve(process.env.SVC_DATA_DIR || '.data', 'pg');
  if (fs.existsSync(dir)) return Promise.resolve();
  const tmp = `${dir}.new-${process.pid}`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  console.log('svc: creating the embedded database (first start only)');
  const script = `import('@electric-sql/pglite').then(async ({ PGlite }) => { const db = await PGlite.create(${JSON.stringify(tmp)}); await db.close(); })`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) {
        fs.rmSync(tmp, { recursive: true, force: true });
        return reject(new Error(`creating the embedded database failed (exit ${code})`));
      }
      fs.renameSync(tmp, dir);
      resolve();
    });
  });
}

/** A script of scripts/ in a child process (SWC's native memory, for one, stays with it). */
function script(name, what) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'scripts', name)], { cwd: root, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed (exit ${code})`))));
  });
}

/** Awaits `promise`, saying every 3 s that it is still `doing`. */
async function waitFor(promise, doing) {
  const started = Date.now();
  const ticker = setInterval(() => console.log(`svc: still ${doing} (${Math.round((Date.now() - started) / 1000)} s)`), 3000);
  try {
    return await promise;
  } finally {
    clearInterval(ticker);
  }
}

(async () => {
  const database = prepareDatabase();
  // codegen.js and transpile.js do nothing when their output is up to date.
  await waitFor(script('codegen.js', 'code generation'), 'generating code from the protos');
  await script('transpile.js', 'the build');
  await waitFor(database, 'creating the embedded database');
  console.log('svc: starting the services');
  require(path.join(root, 'packages/kit/dist/tracing/register.js'));
  require(path.join(root, 'apps/stack/dist/main.js'));
})().catch((err) => {
  console.error(`svc: ${err.message}`);
  process.exit(1);
});
