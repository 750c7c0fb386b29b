import fs from 'node:fs';
import path from 'node:path';

import ts from 'typescript';

/**
 * A route's declaration types its rpc handler (packages/api/src/route.ts, rpc.ts): the mappers'
 * input from the route's schemas, the request and response from the proto, the answer from the
 * response schema. Checked here by compiling declarations against the built @svc/api.
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');

const declaration = (handler: string) => `
import { z } from 'zod';
import { route } from '@svc/api';
export const r = route({
  id: 'items.get', method: 'get', path: '/items/:id', summary: 'An item.', tag: 'items',
  params: z.object({ id: z.string() }),
  query: z.object({ limit: z.coerce.number().default(5) }),
  response: z.object({ name: z.string(), size: z.number().default(0) }),
  auth: 'key', principals: ['human'], authority: false,
  handler: ${handler},
});
`;

const CASES: Record<string, string> = {
  good: `{ rpc: 'drive.getItem', request: (i) => ({ id: i.params.id }), response: (res) => ({ name: res.item!.name }) }`,
  goodLocal: `{ kind: 'local', name: 'items.get' }`,
  inputField: `{ rpc: 'drive.getItem', request: (i) => ({ id: i.params.itemId }) }`,
  inputType: `{ rpc: 'drive.getItem', request: (i) => ({ id: i.query.limit }) }`,
  requestField: `{ rpc: 'drive.getItem', request: (i) => ({ id: i.params.id, bogus: 1 }) }`,
  responseField: `{ rpc: 'drive.getItem', response: (res) => ({ name: res.name }) }`,
  answerMissing: `{ rpc: 'drive.getItem', response: (res) => ({ size: res.item!.size }) }`,
  method: `{ rpc: 'drive.getItems' }`,
  revokesKey: `{ rpc: 'keys.revokeKey', revokesKey: (i, res) => [i.params.id, ...res.revokedIds] }`,
};

/** The diagnostics of each case, compiled together (one program), by case name. */
function diagnostics(): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(__dirname, '.route-types-'));
  try {
    const files = Object.entries(CASES).map(([name, handler]) => {
      const file = path.join(dir, `${name}.ts`);
      fs.writeFileSync(file, declaration(handler));
      return [name, file] as const;
    });
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      skipLibCheck: true,
    };
    const program = ts.createProgram(
      files.map(([, f]) => f),
      options,
    );
    const host = ts.createCompilerHost(options);
    return Object.fromEntries(
      files.map(([name, f]) => [name, ts.formatDiagnostics(ts.getPreEmitDiagnostics(program, program.getSourceFile(f)), host)]),
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('a route types its rpc handler: the input from its schemas, the request and response from the proto, the answer from its response schema', () => {
  expect(fs.existsSync(path.join(ROOT, 'packages/api/dist/index.d.ts'))).toBe(true);
  const d = diagnostics();
  expect(d.good).toBe('');
  expect(d.goodLocal).toBe('');
  expect(d.inputField).toMatch(/Property 'itemId' does not exist on type '\{ id: string; \}'/);
  expect(d.inputType).toMatch(/Type 'number' is not assignable to type 'string'/);
  expect(d.requestField).toMatch(/bogus/);
  expect(d.responseField).toMatch(/Property 'name' does not exist on type 'ItemResponse'/);
  expect(d.answerMissing).toMatch(/Property 'name' is missing/);
  expect(d.method).toMatch(/"drive\.getItems"/);
  expect(d.revokesKey).toMatch(/Property 'revokedIds' does not exist on type 'RevokeKeyResponse'/);
}, 120_000);
