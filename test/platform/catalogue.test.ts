import fs from 'node:fs';
import path from 'node:path';

import { parse } from 'yaml';

import * as clients from '@svc/clients';
import {
  callGraph,
  CATALOGUE,
  downstreamOf,
  findCallCycle,
  GRPC_SERVICE_NAMES,
  homeOf,
  loadConfig,
  Registry,
  SERVICE_NAMES,
  type ServiceName,
} from '@svc/kit';
import { MODULES } from '@svc/stack';

/**
 * The service catalogue (packages/kit/src/catalogue.ts) is the one list of services. What cannot
 * derive from it is held to it here: the stack's MODULES, the workspaces' tsconfig references and
 * dependencies, the chart's component lists, the image smoke test's container lists, the protos,
 * the typed clients and the README's settings table.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');
const json = (p: string) => JSON.parse(read(p));
const refs = (p: string) => (json(p).references as Array<{ path: string }>).map((r) => path.normalize(path.join(path.dirname(p), r.path)));

describe('the catalogue', () => {
  test('derives the service names, SVC_SERVICE, the SVC_<NAME>_ADDR variables', () => {
    expect(SERVICE_NAMES).toEqual(Object.keys(CATALOGUE));
    expect(GRPC_SERVICE_NAMES).toEqual(SERVICE_NAMES.filter((n) => n !== 'gateway' && n !== 'runtime'));
    for (const name of SERVICE_NAMES) {
      expect(loadConfig({ SVC_SERVICE: name, SVC_INTERNAL_SECRET: 'x'.repeat(32) }).SVC_SERVICE).toBe(name);
      expect(loadConfig({ [`SVC_${name.toUpperCase()}_ADDR`]: `${name}:50051` }).addresses).toEqual({ [name]: `${name}:50051` });
    }
  });

  test('calls name gRPC services (not the caller itself), or are the edge’s `*`', () => {
    for (const name of SERVICE_NAMES) {
      const calls = CATALOGUE[name].calls as readonly string[] | '*';
      if (calls === '*') continue;
      for (const callee of calls)
        expect([name, callee, (GRPC_SERVICE_NAMES as string[]).includes(callee) && callee !== name]).toEqual([name, callee, true]);
    }
  });

  test('the declared call graph is a DAG: services call down (agents -> accounts -> keys); only the edge calls anything', () => {
    expect(findCallCycle()).toBeNull();
    expect(downstreamOf('agents')).toEqual(['keys', 'accounts']);
    expect(downstreamOf('accounts')).toEqual(['keys']);
    expect(downstreamOf('keys')).toEqual([]);
    for (const name of SERVICE_NAMES) {
      const callers = SERVICE_NAMES.filter((n) => downstreamOf(n).includes(name as never));
      if (name === 'gateway') expect(callers).toEqual([]);
      if (name === 'mcp') expect(callers).toEqual(['gateway', 'runtime']);
      if (name === 'runtime') expect(callers).toEqual([]);
    }
    // The check itself: a back edge anywhere closes a cycle.
    const graph: Record<string, string[]> = { ...callGraph() };
    expect(findCallCycle({ ...graph, keys: ['agents'] })).toEqual(['keys', 'agents', 'keys']);
    expect(findCallCycle({ ...graph, keys: ['accounts'], accounts: ['agents'] })).toEqual(expect.arrayContaining(['keys', 'accounts', 'agents']));
    expect(findCallCycle({ ...graph, profiles: ['mcp'] })).not.toBeNull();
  });

  test('every services/ folder is a catalogue entry and every entry a folder', () => {
    const folders = fs.readdirSync(path.join(ROOT, 'services')).filter((f) => fs.existsSync(path.join(ROOT, 'services', f, 'package.json')));
    expect(folders.sort()).toEqual([...new Set(SERVICE_NAMES.map(homeOf))].sort());
  });
});

describe('the stack', () => {
  test('MODULES are the catalogue’s gRPC services, in its order, with its gRPC names; each starts after those it calls', () => {
    expect(MODULES.map((m) => m.name)).toEqual(GRPC_SERVICE_NAMES);
    for (const m of MODULES) expect([m.name, m.grpcServiceName]).toEqual([m.name, CATALOGUE[m.name].grpc]);
    const order = MODULES.map((m) => m.name);
    for (const m of MODULES) {
      if (CATALOGUE[m.name].calls === '*') continue;
      for (const callee of downstreamOf(m.name))
        expect([m.name, callee, order.indexOf(callee) < order.indexOf(m.name)]).toEqual([m.name, callee, true]);
    }
  });

  test('depends on every service and references it', () => {
    const deps = Object.keys(json('apps/stack/package.json').dependencies);
    const stackRefs = refs('apps/stack/tsconfig.json');
    for (const name of SERVICE_NAMES) {
      expect(deps).toContain(`@svc/${homeOf(name)}`);
      expect(stackRefs).toContain(path.normalize(`services/${homeOf(name)}`));
    }
  });
});

describe('the build', () => {
  test('the root tsconfig references every service and the clients package', () => {
    const root = refs('tsconfig.json');
    for (const name of SERVICE_NAMES) expect(root).toContain(path.normalize(`services/${homeOf(name)}`));
    expect(root).toContain(path.normalize('packages/clients'));
    expect(json('package.json').workspaces).toContain('packages/clients');
  });

  test('a service that uses @svc/clients depends on it and references it', () => {
    for (const name of new Set(SERVICE_NAMES.map(homeOf))) {
      const uses = sources(name).some((f) => /from '@svc\/clients'/.test(read(f)));
      if (!uses) continue;
      expect([name, json(`services/${name}/package.json`).dependencies['@svc/clients']]).toEqual([name, '0.1.0']);
      expect([name, refs(`services/${name}/tsconfig.json`)]).toEqual([name, expect.arrayContaining([path.normalize('packages/clients')])]);
    }
  });
});

describe('the chart', () => {
  test('has a component per service (values.yaml, values.schema.json) and SVC_<NAME>_ADDR per gRPC service', () => {
    const values = parse(read('charts/svc/values.yaml'));
    expect(Object.keys(values.services)).toEqual(SERVICE_NAMES);
    const schema = json('charts/svc/values.schema.json');
    expect(Object.keys(schema.properties.services.properties)).toEqual(SERVICE_NAMES);
    const helpers = read('charts/svc/templates/_helpers.tpl');
    const grpc = /define "svc\.grpcServices" -}}\s*{{- list ((?:"[a-z]+" ?)+)/.exec(helpers);
    expect(grpc).not.toBeNull();
    expect(
      grpc![1]!
        .trim()
        .split(' ')
        .map((s) => s.replace(/"/g, '')),
    ).toEqual(GRPC_SERVICE_NAMES);
  });
});

describe('the image smoke test', () => {
  test('starts a container per catalogue component, the gateway last, with SVC_<NAME>_ADDR for each gRPC service', () => {
    const smoke = read('scripts/image/smoke.sh');
    const list = (name: string) => {
      const m = new RegExp(`^${name}=\\(([a-z ]+)\\)$`, 'm').exec(smoke);
      expect([name, m !== null]).toEqual([name, true]);
      return m![1]!.trim().split(/\s+/);
    };
    expect(list('grpc')).toEqual(GRPC_SERVICE_NAMES);
    const services = list('services');
    expect([...services].sort()).toEqual([...SERVICE_NAMES].sort());
    expect(services.at(-1)).toBe('gateway');
  });
});

describe('protos and clients', () => {
  test('each gRPC service has its proto package, and its definition serves the catalogue’s name and its areas’ services', () => {
    for (const name of GRPC_SERVICE_NAMES) {
      const grpc = CATALOGUE[name].grpc;
      const proto = read(`proto/svc/${name}/v1/${name}.proto`);
      const [pkg, service] = [grpc.slice(0, grpc.lastIndexOf('.')), grpc.slice(grpc.lastIndexOf('.') + 1)];
      expect(proto).toContain(`package ${pkg};`);
      expect(proto).toMatch(new RegExp(`^service ${service} \\{`, 'm'));
      const [definition, grpcName] = clients.DEFINITIONS[name];
      expect(grpcName).toBe(grpc);
      // Every method is of a service of the component's proto package, declared in one of its proto files
      // (one gRPC service per area: the agents service's ThreadsService in proto/svc/agents/v1/threads.proto).
      const protos = fs
        .readdirSync(path.join(ROOT, `proto/svc/${name}/v1`))
        .map((f) => read(`proto/svc/${name}/v1/${f}`))
        .join('\n');
      for (const method of Object.values(definition)) {
        const [, svc, rpc] = (method as { path: string }).path.split('/');
        expect(svc!.startsWith(`${pkg}.`)).toBe(true);
        expect(protos).toMatch(new RegExp(`^service ${svc!.slice(pkg.length + 1)} \\{[^}]*\\brpc ${rpc}\\(`, 'm'));
      }
    }
  });

  test('each gRPC service has a typed client getter', () => {
    for (const name of GRPC_SERVICE_NAMES) expect(typeof (clients as Record<string, unknown>)[`${name}Client`]).toBe('function');
  });

  test('services call only the services their catalogue entry declares (clients they import, registry.client they name)', () => {
    const getters = new Map(GRPC_SERVICE_NAMES.map((n) => [`${n}Client`, n]));
    for (const name of SERVICE_NAMES) {
      const called = new Set<ServiceName>();
      for (const file of sources(homeOf(name))) {
        const text = read(file);
        for (const m of text.matchAll(/import\s*{([^}]*)}\s*from\s*'@svc\/clients'/g)) {
          for (const id of m[1]!.split(',').map(
            (s) =>
              s
                .trim()
                .replace(/^type\s+/, '')
                .split(/\s+as\s+/)[0]!,
          )) {
            const callee = getters.get(id);
            if (callee) called.add(callee);
          }
        }
        for (const m of text.matchAll(/registry\.client\(\s*'([a-z]+)'/g)) called.add(m[1] as ServiceName);
      }
      for (const callee of called) expect([name, callee, downstreamOf(name).includes(callee as never)]).toEqual([name, callee, true]);
    }
  });

  test('a service’s registry refuses a client of a service it does not declare', () => {
    const registry = new Registry({}, 1000);
    try {
      const drive = registry.for('drive');
      expect(() => clients.keysClient(drive)).toThrow(/drive service calls keys, which the service catalogue does not declare/);
      expect(clients.keysClient(registry.for('accounts'))).toBeDefined();
      expect(clients.driveClient(registry)).toBeDefined(); // the gateway's (unscoped) registry calls anything
    } finally {
      registry.close();
    }
  });
});

describe('the README', () => {
  test('names every setting a service declares', () => {
    const readme = read('README.md');
    for (const m of MODULES) {
      for (const variable of Object.keys(m.settings?.shape ?? {})) expect([m.name, readme.includes(`\`${variable}\``)]).toEqual([m.name, true]);
    }
  });
});

/** A service folder's TypeScript sources (services/<folder>/src; a component's folder is homeOf(name)). */
function sources(folder: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) out.push(p);
    }
  };
  walk(`services/${folder}/src`);
  return out;
}
