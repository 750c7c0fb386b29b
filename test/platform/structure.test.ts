import fs from 'node:fs';
import path from 'node:path';

/**
 * The code's shape, checked: no import cycle between modules of a package, none between packages,
 * and no front of the gateway importing another front.
 */

const ROOT = path.join(__dirname, '..', '..');
const dirs = (parent: string) => fs.readdirSync(path.join(ROOT, parent)).map((d) => path.join(parent, d));
const PACKAGES = [...dirs('packages'), ...dirs('services')].filter((d) => fs.existsSync(path.join(ROOT, d, 'package.json')));

function sources(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Relative imports of a file (type-only ones included: they tie modules together just the same). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
    const target = path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'));
    out.push(fs.existsSync(target) ? target : target.replace(/\.ts$/, '/index.ts'));
  }
  return out;
}

/** Every cycle's members, by Tarjan's strongly connected components (components of one node without a self-edge are not cycles). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc);
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

test('no import cycle between the modules of any package', () => {
  const graph = new Map<string, string[]>();
  for (const pkg of PACKAGES) for (const f of sources(path.join(ROOT, pkg, 'src'))) graph.set(f, importsOf(f));
  expect(graph.size).toBeGreaterThan(100);
  expect(cycles(graph).map((c) => c.map((f) => path.relative(ROOT, f)).sort())).toEqual([]);
});

test('the cycle check finds a cycle when there is one', () => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  expect(cycles(g).map((c) => c.sort())).toEqual([['a', 'b', 'c']]);
});

test('no dependency cycle between packages', () => {
  const graph = new Map<string, string[]>();
  for (const pkg of PACKAGES) {
    const json = JSON.parse(fs.readFileSync(path.join(ROOT, pkg, 'package.json'), 'utf8'));
    graph.set(
      json.name,
      Object.keys({ ...json.dependencies, ...json.devDependencies }).filter((d) => d.startsWith('@svc/')),
    );
  }
  expect(graph.size).toBe(PACKAGES.length);
  expect(cycles(graph)).toEqual([]);
});

test("no front of the gateway imports another front's modules", () => {
  const fronts = path.join(ROOT, 'services/gateway/src/fronts');
  const names = fs
    .readdirSync(fronts, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  expect(names).toEqual(expect.arrayContaining(['api', 'webdav']));
  for (const name of names) {
    for (const file of sources(path.join(fronts, name))) {
      for (const target of importsOf(file)) {
        const rel = path.relative(fronts, target);
        if (!rel.startsWith('..')) expect(`${path.relative(ROOT, file)} -> ${rel}`).toMatch(new RegExp(` -> ${name}/`));
      }
    }
  }
});
