import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import ts from 'typescript';
import { z } from 'zod';

import { buildOpenApi, ErrorBody, type Route, routes } from '@svc/api';
import { ERROR_CODES, type ErrorCode, statusesOf } from '@svc/kit';

type Json = any;

const doc: Json = buildOpenApi(routes, { version: '0.0.0-test' });

/** Every value under `node`, with its JSON pointer. */
function* walk(node: unknown, pointer = '#'): Generator<[string, Json]> {
  yield [pointer, node];
  if (typeof node !== 'object' || node === null) return;
  for (const [k, v] of Object.entries(node)) yield* walk(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
}

function resolve(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = root;
  for (const seg of ref.slice(2).split('/')) {
    const key = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

const operations = (d: Json) =>
  Object.entries(d.paths as Record<string, Record<string, Json>>).flatMap(([p, item]) =>
    Object.entries(item).map(([method, op]) => ({ path: p, method, op })),
  );

/** Runs Redocly's linter and openapi-typescript on `d` in a Node process of their own (both are ES modules). */
function outsideTools(
  d: unknown,
): Promise<{ problems: Array<{ severity: string; ruleId: string; message: string; pointer?: string }>; types: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      process.execPath,
      [path.join(__dirname, 'openapi-tools.mjs')],
      { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolvePromise(JSON.parse(stdout))),
    );
    child.stdin!.end(JSON.stringify(d));
  });
}

/** Type-checks `files` (name -> source) together with the TypeScript compiler; returns the diagnostics as text. */
function typeCheck(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-'));
  try {
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      lib: ['lib.es2022.d.ts'],
      types: [],
    };
    const program = ts.createProgram(
      Object.keys(files).map((n) => path.join(dir, n)),
      options,
    );
    const host = ts.createCompilerHost(options);
    return ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), host);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the OpenAPI document of the route table', () => {
  test('every $ref resolves to a component, and no zod $defs are left', () => {
    const refs = [...walk(doc)].filter(([p, v]) => p.endsWith('/$ref') && typeof v === 'string');
    expect(refs.length).toBeGreaterThan(300);
    expect(refs.filter(([, ref]) => !ref.startsWith('#/components/schemas/') || resolve(doc, ref) === undefined)).toEqual([]);
    expect([...walk(doc)].map(([p]) => p).filter((p) => /\/\$defs(\/|$)|\/\$schema$/.test(p))).toEqual([]);
  });

  test('each component is used, and an Input variant exists only where it differs from its output form', () => {
    const schemas = doc.components.schemas as Record<string, Json>;
    const used = new Set([...walk(doc)].filter(([p]) => p.endsWith('/$ref')).map(([, ref]) => ref));
    expect(Object.keys(schemas).filter((n) => !used.has(`#/components/schemas/${n}`))).toEqual([]);
    const twins = Object.keys(schemas).filter((n) => n.endsWith('Input') && schemas[n.slice(0, -'Input'.length)]);
    // A profile's snapshot reads as it is written: one component serves both.
    expect(twins).not.toContain('ProfileSnapshotInput');
    for (const n of twins) expect(JSON.stringify(schemas[n])).not.toBe(JSON.stringify(schemas[n.slice(0, -'Input'.length)]));
  });

  test('the error body is a real component, and every error answer points at it (but a status the route says answers its own body)', () => {
    expect(doc.components.schemas.Error).toMatchObject({
      type: 'object',
      required: ['error'],
      properties: { error: { type: 'object', required: ['code', 'message', 'requestId'] } },
    });
    for (const { op } of operations(doc)) {
      for (const [code, res] of Object.entries(op.responses as Record<string, Json>)) {
        if (Number(code) < 400) continue;
        const route = routes.find((r) => r.id === op.operationId);
        const own = route?.statuses?.[Number(code)];
        const expected =
          typeof own === 'object' && own.body === 'response'
            ? op.responses['200'].content['application/json'].schema
            : { $ref: '#/components/schemas/Error' };
        expect([op.operationId, code, res.content['application/json'].schema]).toEqual([op.operationId, code, expected]);
      }
    }
  });

  test('every error answer lists its codes, each registered with that status, and a route lists its own', () => {
    const wrong: string[] = [];
    for (const { op } of operations(doc)) {
      for (const [status, res] of Object.entries(op.responses as Record<string, Json>)) {
        for (const code of (res['x-svc-error-codes'] ?? []) as ErrorCode[]) {
          if (!ERROR_CODES[code] || !statusesOf(code).includes(Number(status))) wrong.push(`${op.operationId} ${status} ${code}`);
        }
      }
      const route = routes.find((r) => r.id === op.operationId)!;
      for (const code of route.errors ?? []) {
        if (!statusesOf(code).some((s) => op.responses[s]?.['x-svc-error-codes']?.includes(code))) wrong.push(`${op.operationId} misses ${code}`);
      }
      if (route.handler.kind !== 'unimplemented' && !route.statuses?.[503]) {
        expect([op.operationId, op.responses['503']['x-svc-error-codes']]).toEqual([
          op.operationId,
          expect.arrayContaining(['database_unavailable']),
        ]);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('one operation per route, operationIds unique, every path parameter declared once', () => {
    const ops = operations(doc);
    expect(ops).toHaveLength(routes.length);
    expect(new Set(ops.map((o) => o.op.operationId)).size).toBe(ops.length);
    for (const { path: p, op } of ops) {
      const inPath = [...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters as Json[]).filter((x) => x.in === 'path');
      expect([p, declared.map((x) => x.name).sort()]).toEqual([p, [...inPath].sort()]);
      expect(declared.every((x) => x.required === true)).toBe(true);
    }
  });

  test('every pattern is a valid JSON Schema regex (ECMA-262 with the u flag)', () => {
    const patterns = [...walk(doc)].filter(([p, v]) => p.endsWith('/pattern') && typeof v === 'string');
    expect(patterns.length).toBeGreaterThan(0);
    const invalid = patterns.filter(([, v]) => {
      try {
        new RegExp(v, 'u');
        return false;
      } catch {
        return true;
      }
    });
    expect(invalid).toEqual([]);
  });

  test('an unimplemented operation still documents its authentication errors', () => {
    const listing = routes.find((r) => r.id === 'models.list')!;
    const planned: Route = {
      ...listing,
      id: 'planned.list',
      path: '/planned',
      query: undefined,
      handler: { kind: 'unimplemented', service: 'models' },
    };
    const op = (buildOpenApi([planned], { version: '0.0.0-test' }) as Json).paths['/planned'].get;
    expect(op['x-svc-status']).toBe('unimplemented');
    expect(Object.keys(op.responses)).toEqual(['200', '401', '403', '429', '501']);
  });

  test('uploads and downloads are described as what they are: bytes, a multipart form, ranges', () => {
    const upload = doc.paths['/drive/upload'].post;
    expect(Object.keys(upload.requestBody.content).sort()).toEqual(['*/*', 'multipart/form-data']);
    expect(upload.requestBody.content['*/*'].schema).toMatchObject({ type: 'string', format: 'binary' });
    const form = upload.requestBody.content['multipart/form-data'].schema;
    expect(form.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(Object.keys(form.properties).sort()).toEqual(['file', 'name', 'parentId', 'projectId']);
    expect(form.required).toEqual(['file']);
    expect(Object.keys(doc.paths['/drive/{id}/content'].put.requestBody.content)).toEqual(['*/*']);
    const read = doc.paths['/drive/{id}/content'].get;
    expect(read.requestBody).toBeUndefined();
    for (const status of ['200', '206']) expect(read.responses[status].content['*/*'].schema).toMatchObject({ format: 'binary' });
    expect(read.responses['304'].content).toBeUndefined();
    expect(read.responses['416']).toBeDefined();
    expect(read.parameters.filter((p: Json) => p.in === 'header').map((p: Json) => p.name)).toEqual(['if-none-match', 'range', 'if-range']);
  });

  test("Redocly's linter finds no problem, and openapi-typescript's types compile", async () => {
    const { problems, types } = await outsideTools(doc);
    expect(problems).toEqual([]);
    const check = `
      import type { components, paths } from './api';
      type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
      const expectTrue = <T extends true>(): T | undefined => undefined;

      type CreateMine = paths['/me/api-keys']['post'];
      type Created = CreateMine['responses'][201]['content']['application/json'];
      expectTrue<Equal<Created['key'], string>>();
      expectTrue<Equal<Created, components['schemas']['CreatedKey']>>();
      expectTrue<Equal<CreateMine['requestBody'], { content: { 'application/json': components['schemas']['CreateKeyRequestInput'] } }>>();
      expectTrue<Equal<components['schemas']['CreateKeyRequestInput']['name'], string>>();
      type Unauthorized = CreateMine['responses'][401]['content']['application/json'];
      expectTrue<Equal<Unauthorized, components['schemas']['Error']>>();
      expectTrue<Equal<Unauthorized['error']['code'], string>>();
      expectTrue<Equal<keyof paths['/agents/{id}/keys/{keyId}']['delete']['parameters']['path'], 'id' | 'keyId'>>();
      // The types are precise, not any: a path that is not in the API does not type-check.
      // @ts-expect-error
      type Nope = paths['/nope'];
    `;
    expect(typeCheck({ 'api.ts': types, 'check.ts': check })).toBe('');
  }, 120_000);
});

describe('buildOpenApi on small route tables', () => {
  const base = {
    summary: 'A test operation.',
    tag: 'test',
    auth: 'key',
    principals: ['human'],
    authority: false,
    handler: { kind: 'local', name: 'x' },
  } as const;
  const op = (r: Partial<Route> & Pick<Route, 'id' | 'method' | 'path' | 'response'>): Route => ({ ...base, principals: [...base.principals], ...r });

  test('an operation that streams events documents text/event-stream beside its JSON answer', () => {
    const Tick = z.object({ n: z.number() }).meta({ id: 'Tick' });
    const d: Json = buildOpenApi(
      [
        op({
          id: 't.ticks',
          method: 'get',
          path: '/ticks',
          response: z.object({ ticks: z.array(Tick) }),
          events: { schema: Tick, description: 'Ticks.' },
        }),
      ],
      { version: '1' },
    );
    const content = d.paths['/ticks'].get.responses['200'].content;
    expect(Object.keys(content)).toEqual(['application/json', 'text/event-stream']);
    expect(content['text/event-stream']).toEqual({
      schema: { type: 'string', description: "Ticks. Each event's data is a Tick (components/schemas)." },
    });
    expect(d.components.schemas.Tick).toBeDefined();
  });

  test('a named schema used in requests and answers alike is one component', () => {
    // Strict: a plain object's input form allows unknown fields, its output form has none, so they differ.
    const Thing = z.strictObject({ name: z.string() }).meta({ id: 'TestThing' });
    const d: Json = buildOpenApi([op({ id: 't.put', method: 'put', path: '/things/:id', body: Thing, response: z.object({ thing: Thing }) })], {
      version: '1',
    });
    expect(Object.keys(d.components.schemas).sort()).toEqual(['Error', 'TestThing']);
    const put = d.paths['/things/{id}'].put;
    expect(put.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TestThing' });
    expect(put.responses['200'].content['application/json'].schema.properties.thing).toEqual({ $ref: '#/components/schemas/TestThing' });
    expect(put.parameters).toEqual([{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }]);
  });

  test('forms that differ get an Input variant, and so does a schema that refers to one', () => {
    const Inner = z.object({ n: z.number().default(1) }).meta({ id: 'TestInner' });
    const Outer = z.object({ inner: Inner }).meta({ id: 'TestOuter' });
    const d: Json = buildOpenApi([op({ id: 't.post', method: 'post', path: '/outer', body: Outer, response: Outer })], { version: '1' });
    const s = d.components.schemas;
    expect(Object.keys(s).sort()).toEqual(['Error', 'TestInner', 'TestInnerInput', 'TestOuter', 'TestOuterInput']);
    expect(s.TestInner.required).toEqual(['n']);
    expect(s.TestInnerInput.required).toBeUndefined();
    expect(s.TestOuterInput.properties.inner).toEqual({ $ref: '#/components/schemas/TestInnerInput' });
    expect(s.TestOuter.properties.inner).toEqual({ $ref: '#/components/schemas/TestInner' });
  });

  test('a recursive schema with an id refers to its component', () => {
    const Node: z.ZodType = z
      .object({
        name: z.string(),
        get children() {
          return z.array(Node);
        },
      })
      .meta({ id: 'TestNode' });
    const d: Json = buildOpenApi([op({ id: 't.get', method: 'get', path: '/tree', response: Node })], { version: '1' });
    expect(d.components.schemas.TestNode.properties.children.items).toEqual({ $ref: '#/components/schemas/TestNode' });
  });

  test('what cannot make a valid document is refused at build time', () => {
    const a = z.object({ a: z.string() }).meta({ id: 'TestClash' });
    const b = z.object({ b: z.string() }).meta({ id: 'TestClash' });
    expect(() =>
      buildOpenApi([op({ id: 'a', method: 'get', path: '/a', response: a }), op({ id: 'b', method: 'get', path: '/b', response: b })], {
        version: '1',
      }),
    ).toThrow(/two different schemas are named TestClash/);
    expect(() =>
      buildOpenApi(
        [op({ id: 'same', method: 'get', path: '/a', response: ErrorBody }), op({ id: 'same', method: 'get', path: '/b', response: ErrorBody })],
        { version: '1' },
      ),
    ).toThrow(/operationId same is used twice/);
    expect(() => buildOpenApi([op({ id: 'c', method: 'get', path: '/c', response: ErrorBody, errors: ['thread_busy'] })], { version: '1' })).toThrow(
      /c lists thread_busy \(409\), a status it does not declare/,
    );
    const Anon: z.ZodType = z.object({
      get next() {
        return Anon.optional();
      },
    });
    expect(() => buildOpenApi([op({ id: 'r', method: 'get', path: '/r', response: z.object({ list: Anon }) })], { version: '1' })).toThrow(
      /recursive schema has no name/,
    );
  });
});
