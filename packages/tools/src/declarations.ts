/**
 * Code mode's declarations (docs/run-code.md, "Calling tools"): each tool as a TypeScript-like
 * signature of its helper in a script's prelude, `svc.tools.<name>(args)`, written from its input
 * and output schemas, for a model to read before it writes the script. search_tools gives each
 * match's `signature`; `declarations()` writes a set of tools as one `.d.ts`-like text.
 */
import type { ToolDef } from './catalogue.js';
import type { JsonSchema } from './schemas.js';

/** How deep an answer's type is spelled out; deeper objects are `{...}`. */
const OUTPUT_DEPTH = 2;
const INPUT_DEPTH = 3;

const IDENT = /^[A-Za-z_$][\w$]*$/;

type Defs = Record<string, JsonSchema>;

/** A JSON Schema as a TypeScript type, `depth` levels of objects deep; `$ref`s into `defs` (the root's `$defs`) inlined. */
export function typeOf(schema: JsonSchema | undefined, depth: number, defs: Defs = {}): string {
  if (!schema || typeof schema !== 'object') return 'unknown';
  let s: JsonSchema = schema;
  if (typeof s.$ref === 'string') {
    const def = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    s = (def && defs[def[1]!]) || {};
  }
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union)) return [...new Set(union.map((x: JsonSchema) => typeOf(x, depth, defs)))].join(' | ');
  const type = s.type;
  if (Array.isArray(type)) return type.map((t: string) => typeOf({ ...s, type: t }, depth, defs)).join(' | ');
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const item = typeOf(s.items as JsonSchema | undefined, depth, defs);
      return /^[\w.]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
    }
    case 'object':
      return objectType(s, depth, defs);
  }
  return s.properties ? objectType(s, depth, defs) : 'unknown';
}

function objectType(s: JsonSchema, depth: number, defs: Defs): string {
  const props = Object.entries((s.properties ?? {}) as Record<string, JsonSchema>);
  if (!props.length) return s.additionalProperties === false ? '{}' : 'Record<string, unknown>';
  if (depth <= 0) return '{...}';
  const required = new Set<string>(Array.isArray(s.required) ? s.required : []);
  const fields = props.map(([k, v]) => `${IDENT.test(k) ? k : JSON.stringify(k)}${required.has(k) ? '' : '?'}: ${typeOf(v, depth - 1, defs)}`);
  return `{ ${fields.join('; ')} }`;
}

/** The first sentence of a description (what a comment above a signature says). */
const firstSentence = (text: string) => (/^(.+?[.!?])(\s|$)/s.exec(text)?.[1] ?? text).replace(/\s+/g, ' ').slice(0, 200);

/** One tool as its helper's signature: `name(args: {...}): Promise<{...}>`. */
export function signatureOf(t: ToolDef): string {
  const defsOf = (x: JsonSchema | undefined) => (x as { $defs?: Defs } | undefined)?.$defs ?? {};
  const input = typeOf(t.inputSchema, INPUT_DEPTH, defsOf(t.inputSchema));
  const output = t.outputSchema ? typeOf(t.outputSchema, OUTPUT_DEPTH, defsOf(t.outputSchema)) : 'Record<string, unknown>';
  return `${t.name}(args: ${input === '{}' ? '{}' : input}): Promise<${output}>`;
}

/** Tools as declarations of `svc.tools`, each with its description's first sentence above it. */
export function declarations(tools: readonly ToolDef[]): string {
  const lines = [
    '// svc.call(name, args) calls any tool; a failed call rejects with a ToolError { code, message, details? }.',
    'declare const svc: { call(name: string, args?: object): Promise<any>; tools: SvcTools };',
    'interface SvcTools {',
  ];
  for (const t of tools) lines.push(`  /** ${firstSentence(t.description)} */`, `  ${signatureOf(t)};`);
  lines.push('}');
  return lines.join('\n');
}
