#!/usr/bin/env node
// Regular-expression engines for callers' patterns (docs/drive.md, "Patterns"): in one run, a
// realistic set of grep patterns over ~1 MB of this repository's text, line by line as the drive's
// grep matches, with V8's own backtracking RegExp (the baseline) and each linear-time candidate
// that is installed; then the hostile `^(a+)+$` against "aaa…!" (30 characters and 10 KB).
//
//   node scripts/bench/regex.js [rounds]
//   REGEX_BENCH_MODULES=/tmp/x/node_modules node scripts/bench/regex.js   # candidates not in the project
//
// Candidates: re2js (RE2 ported to JavaScript, the project's dependency), re2 (RE2 in C++ through a
// node-gyp build), re2-wasm (RE2 in WebAssembly), and V8's experimental linear engine (the `l`
// flag, enabled with v8.setFlagsFromString before any pattern is compiled). One that is missing or
// refuses a pattern is reported as such. Rounds interleave the engines; figures are medians.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const { createRequire } = require('node:module');

const ROUNDS = Number(process.argv[2] ?? 5);
const root = path.resolve(__dirname, '../..');
v8.setFlagsFromString('--enable-experimental-regexp-engine');

function load(name) {
  const places = [root, ...(process.env.REGEX_BENCH_MODULES ? [path.resolve(process.env.REGEX_BENCH_MODULES, '..')] : [])];
  for (const dir of places) {
    try {
      return createRequire(path.join(dir, 'package.json'))(name);
    } catch {
      // next place
    }
  }
  return null;
}

/** An installed package's version (its package.json, found beside what `load` resolved). */
function versionOf(name) {
  for (const dir of [root, ...(process.env.REGEX_BENCH_MODULES ? [path.resolve(process.env.REGEX_BENCH_MODULES, '..')] : [])]) {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
    } catch {
      // next place
    }
  }
  return '';
}

/** Each engine: compile(pattern, ignoreCase) → (line) → index of the first match or -1. */
function engines() {
  const out = [
    {
      name: 'RegExp (V8, backtracking)',
      compile: (p, i) => {
        const re = new RegExp(p, i ? 'i' : '');
        return (s) => s.search(re);
      },
    },
    {
      name: 'RegExp l (V8 linear)',
      compile: (p, i) => {
        const re = new RegExp(p, i ? 'il' : 'l');
        return (s) => {
          const m = re.exec(s);
          return m ? m.index : -1;
        };
      },
    },
  ];
  const re2js = load('re2js');
  if (re2js) {
    const { RE2JS } = re2js;
    out.push({
      name: `re2js ${versionOf('re2js')}`,
      compile: (p, i) => {
        const re = RE2JS.compile(p, i ? RE2JS.CASE_INSENSITIVE : 0);
        return (s) => {
          if (!re.test(s)) return -1;
          return re.exec(s).index;
        };
      },
    });
  }
  const RE2 = load('re2');
  if (RE2) {
    out.push({
      name: `re2 ${versionOf('re2')} (native)`,
      compile: (p, i) => {
        const re = new RE2(p, i ? 'i' : '');
        return (s) => {
          const m = re.exec(s);
          return m ? m.index : -1;
        };
      },
    });
  }
  const wasm = load('re2-wasm');
  if (wasm) {
    out.push({
      name: `re2-wasm ${versionOf('re2-wasm')}`,
      compile: (p, i) => {
        const re = new wasm.RE2(p, i ? 'iu' : 'u');
        return (s) => {
          const m = re.exec(s);
          return m ? m.index : -1;
        };
      },
    });
  }
  return out;
}

/** About 1 MB of the repository's TypeScript and docs, as lines. */
function corpus() {
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name === 'dist' || e.name === 'gen' || e.name.startsWith('.')) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|md)$/.test(e.name)) files.push(p);
    }
  };
  for (const d of ['services', 'packages', 'docs']) walk(path.join(root, d));
  files.sort();
  let text = '';
  for (const f of files) {
    if (text.length >= 1024 * 1024) break;
    text += fs.readFileSync(f, 'utf8');
  }
  return text.split(/\r?\n/);
}

const PATTERNS = [
  ['literal', 'function', false],
  ['alternation', 'TODO|FIXME|XXX', false],
  ['ignoreCase', 'error', true],
  ['word call', '\\bawait\\s+\\w+\\.\\w+\\(', false],
  ['anchored', '^\\s*export\\s+(async\\s+)?function\\s+\\w+', false],
  ['date', '[0-9]{4}-[0-9]{2}-[0-9]{2}', false],
  ['email', '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[a-z]{2,}', false],
  ['declaration', '(const|let|var)\\s+[a-z]\\w*\\s*=\\s*new\\s+\\w+', false],
  ['string', '"[^"]*"', false],
  ['no match', 'zzqx[0-9]+', false],
];

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => (ms === undefined ? '–' : ms < 10 ? ms.toFixed(2) : ms.toFixed(0));

function main() {
  const lines = corpus();
  const bytes = Buffer.byteLength(lines.join('\n'));
  const list = engines();
  console.log(`node ${process.version}, ${lines.length} lines, ${(bytes / 1024 / 1024).toFixed(2)} MB, ${ROUNDS} rounds\n`);
  // times[engine][pattern] = [ms per round]; refused[engine][pattern] = why.
  const times = list.map(() => PATTERNS.map(() => []));
  const refused = list.map(() => PATTERNS.map(() => null));
  const found = list.map(() => PATTERNS.map(() => 0));
  const matchers = list.map((e, ei) =>
    PATTERNS.map(([, p, i], pi) => {
      try {
        return e.compile(p, i);
      } catch (err) {
        refused[ei][pi] = err.message.replace(/^.*: /, '');
        return null;
      }
    }),
  );
  for (let r = 0; r < ROUNDS; r++) {
    for (let pi = 0; pi < PATTERNS.length; pi++) {
      for (let ei = 0; ei < list.length; ei++) {
        const m = matchers[ei][pi];
        if (!m) continue;
        let n = 0;
        const t = now();
        for (const line of lines) if (m(line) >= 0) n++;
        times[ei][pi].push(now() - t);
        found[ei][pi] = n;
      }
    }
  }
  const head = ['pattern', 'lines matched', ...list.map((e) => e.name)];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map((_, i) => (i < 1 ? '---' : '---:')).join('|')}|`);
  const totals = list.map(() => 0);
  const complete = list.map((_, ei) => refused[ei].every((x) => x === null));
  for (let pi = 0; pi < PATTERNS.length; pi++) {
    const cells = list.map((_, ei) => {
      if (refused[ei][pi]) return 'refused';
      const ms = median(times[ei][pi]);
      totals[ei] += ms;
      const diff = found[ei][pi] !== found[0][pi] ? ` (${found[ei][pi]} lines!)` : '';
      return `${fmt(ms)} ms${diff}`;
    });
    console.log(`| \`${PATTERNS[pi][1]}\`${PATTERNS[pi][2] ? ' (i)' : ''} | ${found[0][pi]} | ${cells.join(' | ')} |`);
  }
  const sum = list.map((_, ei) => (complete[ei] ? `**${fmt(totals[ei])} ms, ${((totals[ei] / totals[0]) * 100).toFixed(0)}%**` : 'some refused'));
  console.log(`| all (against RegExp) | | ${sum.join(' | ')} |`);
  // Only the patterns every engine ran, so that ratios compare like with like.
  const common = PATTERNS.map((_, pi) => list.every((__, ei) => !refused[ei][pi]));
  const commonTotals = list.map((_, ei) => PATTERNS.reduce((s, __, pi) => s + (common[pi] ? median(times[ei][pi]) : 0), 0));
  console.log(
    `| the ${common.filter(Boolean).length} every engine ran | | ${commonTotals.map((t) => `${fmt(t)} ms, ${((t / commonTotals[0]) * 100).toFixed(0)}%`).join(' | ')} |`,
  );
  for (let ei = 0; ei < list.length; ei++) {
    const why = [...new Set(refused[ei].filter(Boolean))];
    if (why.length) console.log(`\n${list[ei].name} refused: ${why.join('; ')}`);
  }

  console.log('\nHostile: ^(a+)+$ against "a"×n + "!" (one line)\n');
  console.log(`| n | ${list.map((e) => e.name).join(' | ')} |`);
  console.log(`|---:|${list.map(() => '---:').join('|')}|`);
  for (const e of list) e.compile('^(a+)+$', false)('a'.repeat(16) + '!'); // warm-up, not counted
  for (const n of [20, 22, 24, 30, 10_240]) {
    const s = `${'a'.repeat(n)}!`;
    const cells = list.map((e, ei) => {
      // The backtracking engine doubles per character: past 24 it would run for many seconds.
      if (ei === 0 && n > 24) return n === 30 ? '~64× n=24 (not run)' : 'not run';
      const m = e.compile('^(a+)+$', false);
      const t = now();
      const hit = m(s);
      const ms = now() - t;
      return `${fmt(ms)} ms${hit >= 0 ? ' (matched!)' : ''}`;
    });
    console.log(`| ${n} | ${cells.join(' | ')} |`);
  }
}

/**
 * The drive's grep path (services/drive/dist, built): the same ~1 MB as one file through a grep
 * worker (a copy to the worker thread, RE2 there, the matches back) against re2js on this thread.
 */
async function throughWorker(lines) {
  let grepWorkers;
  let compilePattern;
  let searchText;
  try {
    ({ grepWorkers } = require(path.join(root, 'services/drive/dist/files/grep.js')));
    ({ compilePattern } = require(path.join(root, 'services/drive/dist/files/pattern.js')));
    ({ searchText } = require(path.join(root, 'services/drive/dist/files/search-text.js')));
  } catch {
    console.log('\n(services/drive is not built: no grep-worker figures)');
    return;
  }
  const bytes = Buffer.from(lines.join('\n'));
  console.log('\nThe drive grep path: ~1 MB as one file, all matches (medians)\n');
  console.log('| pattern | on this thread (compilePattern + searchText) | grep worker, warm (compile + search + answer) |');
  console.log('|---|---:|---:|');
  for (const [, p, i] of PATTERNS.slice(0, 5)) {
    const here = [];
    const there = [];
    for (let r = 0; r < ROUNDS; r++) {
      let t = now();
      searchText(compilePattern(p, { regex: true, ignoreCase: i }), bytes, 1_000_000);
      here.push(now() - t);
      const s = grepWorkers.open(60_000);
      t = now();
      await s.compile(p, true, i);
      await s.search(bytes, 1_000_000);
      there.push(now() - t);
      s.close();
    }
    console.log(`| \`${p}\`${i ? ' (i)' : ''} | ${fmt(median(here))} ms | ${fmt(median(there))} ms |`);
  }
  const t = now();
  const cold = new (require('node:worker_threads').Worker)(path.join(root, 'services/drive/dist/files/grep-worker.js'), { execArgv: [] });
  await new Promise((resolve) => {
    cold.once('message', resolve);
    cold.postMessage({ op: 'compile', pattern: 'x', regex: true, ignoreCase: false });
  });
  console.log(`\nA new worker's first answer (thread start, re2js loaded, a pattern compiled): ${fmt(now() - t)} ms`);
  await cold.terminate();
}

main();
throughWorker(corpus()).then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
