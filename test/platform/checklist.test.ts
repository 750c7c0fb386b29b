import fs from 'node:fs';
import path from 'node:path';

import { allOperations as routes } from '@svc/api';
import { CATALOGUE, homeOf, type ServiceName } from '@svc/kit';

/**
 * "Adding an operation" (docs/architecture.md) kept true: every operation of the route table (and
 * every internal one the protocol fronts invoke) is
 * where the checklist says (its declaration in routes/<service>/<area>.ts, its rpc in the
 * service's proto package, its handler in a server.ts of the service), and the worked example's
 * files exist and hold what the page says they hold.
 */

const ROOT = path.join(__dirname, '..', '..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');
const ROUTES_DIR = 'packages/api/src/routes';

function files(dir: string, ext: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p, ext) : e.name.endsWith(ext) ? [p] : [];
  });
}

/**
 * The file that declares each operation: its `id: '<id>'`, or, for operations a function of the
 * file makes (`id: `${idPrefix}.create``, the API keys' routes), the file that passes the id's
 * first part to it.
 */
const declaredIn = new Map<string, string>();
const routeFiles = files(ROUTES_DIR, '.ts');
for (const f of routeFiles) {
  for (const m of read(f).matchAll(/\bid: '([a-z][\w.-]*)'/g)) if (!declaredIn.has(m[1]!)) declaredIn.set(m[1]!, f);
}
for (const r of routes) {
  if (declaredIn.has(r.id)) continue;
  // An internal operation: declared in routes/<service>/internal.ts, which names its method.
  const internal = /^internal\.(\w+)\.(\w+)$/.exec(r.id);
  const made = internal && routeFiles.filter((f) => f.endsWith(`/${internal[1]}/internal.ts`) && read(f).includes(`'${internal[2]}'`));
  if (made?.length === 1) {
    declaredIn.set(r.id, made[0]!);
    continue;
  }
  const maker = routeFiles.filter((f) => read(f).includes('id: `${') && read(f).includes(`'${r.id.split('.')[0]}'`));
  if (maker.length === 1) declaredIn.set(r.id, maker[0]!);
}

/** Each proto package's rpcs: method → the file and the gRPC service that declare it. */
function rpcsOf(service: string): Map<string, { file: string; service: string }> {
  const out = new Map<string, { file: string; service: string }>();
  const dir = `proto/svc/${service}/v1`;
  for (const f of fs.readdirSync(path.join(ROOT, dir))) {
    const text = read(`${dir}/${f}`);
    for (const s of text.matchAll(/^service (\w+) \{([^}]*)\}/gm)) {
      for (const r of s[2]!.matchAll(/\brpc (\w+)\(/g)) out.set(r[1]!, { file: `${dir}/${f}`, service: s[1]! });
    }
  }
  return out;
}

const upperFirst = (s: string) => s[0]!.toUpperCase() + s.slice(1);

/**
 * The handlers a service defines: in its server files (`async method(`, `async *method(`, `method: `),
 * or in a file that builds a typed handler set (`handlers: { method: ... }` beside `Handlers<`: the sandbox).
 */
function handlersOf(service: ServiceName): Map<string, string> {
  const out = new Map<string, string>();
  const note = (name: string, f: string) => out.has(name) || out.set(name, f);
  for (const f of files(`services/${homeOf(service)}/src`, '.ts')) {
    const text = read(f);
    if (/server\.ts$/.test(f)) for (const m of text.matchAll(/^\s+(?:async\s+)?\*?\s*([a-z]\w*)\s*(?:\(|: )/gm)) note(m[1]!, f);
    if (text.includes('Handlers<')) {
      for (const set of text.matchAll(/handlers: \{([^}]*)\}/g)) for (const m of set[1]!.matchAll(/([a-z]\w*):/g)) note(m[1]!, f);
    }
  }
  return out;
}

const rpcRoutes = routes.flatMap((r) => (r.handler.kind === 'rpc' ? [{ route: r, service: r.handler.service, method: r.handler.method }] : []));

test('the route table has operations served by each gRPC service', () => {
  const services = new Set(rpcRoutes.map((r) => r.service));
  for (const name of ['keys', 'accounts', 'drive', 'agents', 'models', 'trading', 'profiles', 'mcp']) expect(services).toContain(name);
  expect(rpcRoutes.length).toBeGreaterThan(300);
});

test('step 4: every operation is declared in routes/<service>/<area>.ts, a catalogue service or the gateway', () => {
  const bad: string[] = [];
  for (const r of routes) {
    const file = declaredIn.get(r.id);
    if (!file) {
      bad.push(`${r.id}: no declaration found under ${ROUTES_DIR}`);
      continue;
    }
    const [dir, name] = path.relative(ROUTES_DIR, file).split(path.sep);
    if (!(dir! in CATALOGUE) || !/^[a-z]+(-[a-z]+)*\.ts$/.test(name ?? '')) bad.push(`${r.id}: ${file}`);
  }
  expect(bad).toEqual([]);
});

test('step 1: every rpc an operation names is declared in its service’s proto package; an area service’s in its area’s file', () => {
  const bad: string[] = [];
  for (const { route, service, method } of rpcRoutes) {
    const rpc = rpcsOf(service).get(upperFirst(method));
    if (!rpc) {
      bad.push(`${route.id}: ${service}.${method} is in no service of proto/svc/${service}/v1`);
      continue;
    }
    // A package of one service per area (the agents service): the route file's area is the proto file's.
    const areaServices = new Set([...rpcsOf(service).values()].map((r) => r.service));
    const file = declaredIn.get(route.id)!;
    const [dir, name] = path.relative(ROUTES_DIR, file).split(path.sep);
    if (areaServices.size > 1 && dir === service) {
      const area = name!.replace(/\.ts$/, '').split('-')[0];
      if (path.basename(rpc.file, '.proto') !== area) bad.push(`${route.id}: declared in ${file}, its rpc in ${rpc.file}`);
    }
  }
  expect(bad).toEqual([]);
});

test('step 3: every rpc an operation names has its handler in a server.ts of the service', () => {
  const bad: string[] = [];
  const handlers = new Map<string, Map<string, string>>();
  for (const { route, service, method } of rpcRoutes) {
    if (!handlers.has(service)) handlers.set(service, handlersOf(service));
    if (!handlers.get(service)!.has(method)) bad.push(`${route.id}: no ${method} handler in services/${homeOf(service)}/src/**/server.ts`);
  }
  expect(bad).toEqual([]);
});

test('the worked example: each file the checklist names exists and holds what the page says', () => {
  const page = read('docs/architecture.md');
  const section = page.slice(page.indexOf('## Adding an operation'), page.indexOf('## Services and the calls between them'));
  const example = section.slice(section.indexOf('The worked example'));
  const named = [...example.matchAll(/`([\w./-]+\.(?:ts|proto|md))`(?: \(`([^`]+)`\))?/g)].map((m) => ({ file: m[1]!, holds: m[2] }));
  expect(named.length).toBe(7);
  for (const { file, holds } of named) {
    expect(fs.existsSync(path.join(ROOT, file))).toBe(true);
    if (holds) expect([file, read(file).includes(holds)]).toEqual([file, true]);
  }
  // The steps' paths, with the example's service and area, are the example's files.
  const [service, area] = ['agents', 'memory'];
  const steps = section.slice(0, section.indexOf('The worked example'));
  const patterns = [...steps.matchAll(/`((?:proto|services|packages|test)\/[\w./<>-]+)`/g)].map((m) => m[1]!);
  for (const p of patterns.filter((p) => !p.endsWith('/') && !p.includes('<subject>') && !p.includes('<Method>'))) {
    const concrete = p.replaceAll('<service>', service).replaceAll('<area>', area);
    expect([p, fs.existsSync(path.join(ROOT, concrete))]).toEqual([p, true]);
  }
  // Its operation is what step 4 says: an rpc of the agents service, GetMemory.
  const op = routes.find((r) => r.id === 'memory.get')!;
  expect(op.handler).toMatchObject({ kind: 'rpc', service: 'agents', method: 'getMemory' });
  // ...and the rpc step 1 names is that method's, in the file step 1 names.
  expect(rpcsOf('agents').get(upperFirst('getMemory'))).toEqual({ file: 'proto/svc/agents/v1/memory.proto', service: 'MemoryService' });
});

describe('the docs name what is there', () => {
  const pages = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));
  const TOP = /^(?:apps|charts|deploy|docs|packages|proto|scripts|sdk|services|test|\.ci)\//;

  test('every file or folder of the repository a page names in code exists', () => {
    const missing: string[] = [];
    for (const page of pages) {
      for (const m of read(page).matchAll(/`([\w.@/-]+)`/g)) {
        const p = m[1]!.replace(/[.,;:]$/, '');
        if (!TOP.test(p) || p.includes('<') || /\*|\.\.\./.test(p)) continue;
        if (!fs.existsSync(path.join(ROOT, p.replace(/\/$/, '')))) missing.push(`${page}: ${p}`);
      }
    }
    expect(missing).toEqual([]);
  });

  test('every relative link of a page points to a file inside the repository', () => {
    const bad: string[] = [];
    for (const page of pages) {
      for (const m of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (!target || /^[a-z]+:/i.test(target)) continue;
        const resolved = path.resolve(ROOT, path.dirname(page), target);
        if (!resolved.startsWith(ROOT + path.sep) || !fs.existsSync(resolved)) bad.push(`${page}: ${m[1]}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
