// The build of `npm start`: each TypeScript file of the projects the platform runs is turned into
// the JavaScript that `tsc -b` would emit (CommonJS, ES2022, source maps), by SWC, file by file,
// without type-checking. A first start takes a few seconds instead of the ~40 s of `tsc -b`;
// type-checking is `npm run build`'s and `npm test`'s. A file is transpiled only when its output is
// missing or older than it, so a tree built by either way is left as it is.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

/** The projects of tsconfig.json that the platform's process loads (not the SDK or the host CLI). */
function projects() {
  const skip = new Set(['packages/sdk-ts', 'apps/host']);
  const refs = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8')).references.map((r) => r.path);
  return refs
    .filter((p) => !skip.has(p))
    .map((p) => {
      const options = JSON.parse(fs.readFileSync(path.join(root, p, 'tsconfig.json'), 'utf8')).compilerOptions ?? {};
      return {
        name: p,
        src: path.join(root, p, options.rootDir ?? 'src'),
        out: path.join(root, p, options.outDir ?? 'dist'),
        buildInfo: path.join(root, p, 'tsconfig.tsbuildinfo'),
      };
    });
}

function walk(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

const mtime = (f) => {
  try {
    return fs.statSync(f).mtimeMs;
  } catch {
    return -1;
  }
};

/**
 * [{ from, to, dist, buildInfo }] for every .ts (not .d.ts) of the projects: `to` in the project's
 * output folder, or in `into` instead of it (the check); only the stale ones (output missing or
 * older) unless `all`.
 */
function pairs(list = projects(), { into, all = false } = {}) {
  const out = [];
  for (const p of list) {
    for (const from of walk(p.src)) {
      if (!from.endsWith('.ts') || from.endsWith('.d.ts')) continue;
      const rel = path.relative(p.src, from).replace(/\.ts$/, '.js');
      const dist = path.join(p.out, rel);
      const to = into ? path.join(p.out, '..', into, rel) : dist;
      if (all || mtime(to) < mtime(from)) out.push({ from, to, dist, buildInfo: p.buildInfo });
    }
  }
  return out;
}

const stale = (list) => pairs(list);

/** SWC's options for tsc's emit of tsconfig.base.json (target ES2022, module node16 as CommonJS). */
const options = (from, to) => ({
  filename: from,
  sourceMaps: true,
  sourceFileName: path.relative(path.dirname(to), from),
  swcrc: false,
  configFile: false,
  jsc: {
    parser: { syntax: 'typescript' },
    target: 'es2022',
    // tsc at ES2022 defines class fields ([[Define]] semantics); a dynamic import() stays one.
    transform: { useDefineForClassFields: true },
    keepClassNames: true,
  },
  module: { type: 'commonjs', ignoreDynamic: true, importInterop: 'swc' },
});

async function write(files) {
  const swc = require('@swc/core');
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const { from, to } = files[next++];
      const result = await swc.transformFile(from, options(from, to));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      const map = `${path.basename(to)}.map`;
      fs.writeFileSync(`${to}.map`, result.map);
      fs.writeFileSync(to, `${result.code}\n//# sourceMappingURL=${map}\n`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** Modules that do something when loaded (start the platform, a sandbox child, tracing). */
const ENTRY_POINTS = new Set(['apps/stack/src/main.ts', 'packages/quickjs/src/child.ts', 'packages/kit/src/tracing/register.ts']);

const CHECK_DIR = '.transpile-check';

/**
 * `node scripts/transpile.js --check`, after `npm run build`: every module SWC makes, written
 * beside tsc's dist (in <project>/.transpile-check, removed after), is loaded next to tsc's and
 * must export the same names. Returns { compared, differ: [file, swc's, tsc's] }.
 */
async function check() {
  const list = projects();
  const files = pairs(list, { into: CHECK_DIR, all: true });
  await write(files);
  const differ = [];
  let compared = 0;
  const names = (f) => {
    try {
      return Object.keys(require(f)).sort().join(',');
    } catch (err) {
      return `cannot load: ${String(err.message).split('\n')[0]}`;
    }
  };
  try {
    for (const { from, to, dist } of files) {
      if (ENTRY_POINTS.has(path.relative(root, from))) continue;
      compared++;
      const [a, b] = [names(to), names(dist)];
      if (a !== b) differ.push([path.relative(root, from), a, b]);
    }
  } finally {
    for (const p of list) fs.rmSync(path.join(p.out, '..', CHECK_DIR), { recursive: true, force: true });
  }
  return { compared, differ };
}

/**
 * Transpiles the stale files (in parallel: SWC works on libuv's threads) and says what it did.
 * Returns the number of files written.
 */
async function transpile({ log = console.log } = {}) {
  const files = stale();
  if (!files.length) return 0;
  const started = Date.now();
  // tsc's record of a project written here no longer describes its output (no declarations are
  // written here): without it, the next `tsc -b` builds the project again.
  for (const f of new Set(files.map((f) => f.buildInfo))) fs.rmSync(f, { force: true });
  await write(files);
  log(
    `svc: transpiled ${files.length} file${files.length === 1 ? '' : 's'} in ${((Date.now() - started) / 1000).toFixed(1)} s (no type-checking: that is npm run build)`,
  );
  return files.length;
}

module.exports = { transpile, stale, projects, check };

if (require.main === module) {
  const run = process.argv.includes('--check')
    ? check().then((r) => {
        console.log(JSON.stringify(r));
        return r.differ.length ? 1 : 0;
      })
    : transpile().then(() => 0);
  run.then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
