import { routes } from '@svc/api';
import { declarations, signatureOf, ToolCatalogue, typeOf } from '@svc/tools';

// Code mode's declarations (docs/run-code.md, "Calling tools"): each tool as the signature of its
// helper in a script, from its schemas, as search_tools gives it.

const catalogue = ToolCatalogue.fromRoutes(routes);

test('a schema as a TypeScript type: optional fields, unions, enums, arrays, $defs inlined, depth bounded', () => {
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      n: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      kind: { enum: ['a', 'b'] },
      tags: { type: 'array', items: { type: 'string' } },
      item: { $ref: '#/$defs/Item' },
      'odd-name': { type: 'boolean' },
    },
    required: ['id'],
    $defs: { Item: { type: 'object', properties: { deep: { type: 'object', properties: { x: { type: 'number' } } } }, required: ['deep'] } },
  };
  expect(typeOf(schema, 2, schema.$defs)).toBe(
    '{ id: string; n?: number | null; kind?: "a" | "b"; tags?: string[]; item?: { deep: {...} }; "odd-name"?: boolean }',
  );
});

test('every tool has a signature of its own name; the everyday ones spell out their answers', () => {
  for (const t of catalogue.list()) {
    const sig = signatureOf(t);
    expect(sig.startsWith(`${t.name}(args: `)).toBe(true);
    expect(sig).toContain('): Promise<');
  }
  expect(signatureOf(catalogue.get('list_drive')!)).toMatch(
    /^list_drive\(args: \{ limit\?: number; cursor\?: string;.*\}\): Promise<\{ items: Array<\{ id: string; name: string; kind: "file" \| "folder";/,
  );
  expect(signatureOf(catalogue.get('whoami')!)).toMatch(/^whoami\(args: \{\}\): Promise<\{ kind: "human" \| "agent" \| "host";/);
  const text = declarations([catalogue.get('whoami')!, catalogue.get('list_drive')!]);
  expect(text).toContain('declare const svc');
  expect(text).toContain('  whoami(args: {})');
});

test('search_tools gives each match its signature', async () => {
  const { searchTools } = await import('@svc/tools');
  const found = searchTools(catalogue, { query: 'list files in my drive', limit: 3 }) as { tools: Array<{ name: string; signature: string }> };
  for (const t of found.tools) expect(t.signature.startsWith(`${t.name}(`)).toBe(true);
});
