import { z } from 'zod';

import type { Route } from '@svc/api';

export type JsonSchema = Record<string, unknown>;

/**
 * How a tool's arguments map back onto its operation's input: which argument goes to the path,
 * the query, the body, which header; whether the whole body is one argument (`body`), and whether
 * the operation takes content (`content` + `encoding` + `contentType`) or answers with bytes.
 */
export interface ArgumentMap {
  /** Argument → path parameter. */
  params: Map<string, string>;
  /** Argument → query parameter (a name the path already takes is prefixed: `id` → `queryId`). */
  query: Map<string, string>;
  /** Argument → body field, for an object body (a field named like a path parameter is the path's). */
  body: Map<string, string>;
  /** The body is one argument, `body` (a body that is not an object with known fields). */
  wholeBody: boolean;
  /** Argument name → the lowercase header it carries (`ifMatch` → `if-match`). */
  headers: Map<string, string>;
  content: boolean;
  bytes: boolean;
}

/** Arguments of an operation that takes content: the bytes as text or base64. */
export const CONTENT_ARGUMENTS: Record<string, JsonSchema> = {
  content: { type: 'string', description: 'The file’s content: text as is, or bytes in base64 (`encoding: "base64"`).' },
  encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8', description: 'How `content` is written (default utf8).' },
  contentType: { type: 'string', maxLength: 200, description: 'The content’s media type (default: guessed from the name).' },
};

/** The argument of an operation that answers with bytes: how to return them. */
export const READ_ENCODING: JsonSchema = {
  type: 'string',
  enum: ['utf8', 'base64'],
  description: 'How to return the content: utf8 (text; refused when the bytes are not UTF-8) or base64. Default: utf8 for UTF-8 text, else base64.',
};

/** The structured result of an operation that answers with bytes (a file's content). */
export const FILE_CONTENT_OUTPUT: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    contentType: { type: ['string', 'null'] },
    size: { type: 'integer', description: 'The whole file’s size in bytes.' },
    etag: { type: 'string', description: 'The version read: pass it as `ifMatch` to write over exactly this version.' },
    encoding: { type: 'string', enum: ['utf8', 'base64'] },
    content: { type: 'string', description: 'The bytes read (all of them, or the requested range), as `encoding` says.' },
    range: {
      type: ['object', 'null'],
      properties: { start: { type: 'integer' }, end: { type: 'integer' } },
      required: ['start', 'end'],
      description: 'The bytes returned when a range was asked for, else null.',
    },
    notModified: { type: 'boolean', description: 'True when `ifNoneMatch` named the current version: no content is returned.' },
  },
  required: ['id', 'name', 'size', 'etag', 'encoding', 'content', 'range', 'notModified'],
};

/** A header as an argument name: `if-match` → `ifMatch`. */
export const headerArgument = (header: string) => header.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

interface Converted {
  root: JsonSchema;
  defs: Record<string, JsonSchema>;
}

/** A zod schema as JSON Schema (2020-12), its named parts apart (`$defs`, referred to as `#/$defs/<name>`). */
function convert(t: z.ZodType, io: 'input' | 'output'): Converted {
  const raw = z.toJSONSchema(t, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const { $schema: _dialect, $defs, ...root } = raw;
  const defs = ($defs ?? {}) as Record<string, JsonSchema>;
  // A named schema at the root is a `$ref` to its definition: the root is that definition (other
  // places may still refer to it, so it stays among the definitions).
  const m = typeof root.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(root.$ref) : null;
  if (m && defs[m[1]!]) {
    const { $ref: ref, ...rest } = root;
    const { [m[1]!]: def, ...others } = defs;
    const stillReferred = JSON.stringify([def, others]).includes(`"${String(ref)}"`);
    return { root: { ...def, ...rest }, defs: stillReferred ? defs : others };
  }
  return { root, defs };
}

const propertiesOf = (s: JsonSchema) => (s.properties ?? {}) as Record<string, JsonSchema>;

/**
 * An argument as a model reads it: a nullable field (`anyOf: [X, null]`) described on X only gets
 * X's description on the argument itself, where clients show it.
 */
function described(prop: JsonSchema): JsonSchema {
  if (prop.description !== undefined || !Array.isArray(prop.anyOf)) return prop;
  const inner = (prop.anyOf as JsonSchema[]).filter((s) => s.type !== 'null');
  return inner.length === 1 && typeof inner[0]!.description === 'string' ? { ...prop, description: inner[0]!.description } : prop;
}
const requiredOf = (s: JsonSchema) => new Set((s.required ?? []) as string[]);
const isObjectSchema = (s: JsonSchema) => s.type === 'object' && typeof s.properties === 'object';

/** Headers that only a live stream reads (a tool call answers the list, which `after` pages). */
const STREAM_ONLY_HEADERS = new Set(['last-event-id']);

/** The one input schema of an operation: path parameters, query, headers and body as one object of arguments. */
export function inputSchemaOf(route: Route): { schema: JsonSchema; map: ArgumentMap } {
  const map: ArgumentMap = {
    params: new Map(),
    query: new Map(),
    body: new Map(),
    wholeBody: false,
    headers: new Map(),
    content: !!route.content,
    bytes: route.answer === 'bytes',
  };
  const properties: Record<string, JsonSchema> = {};
  const required = new Set<string>();
  const defs: Record<string, JsonSchema> = {};
  /** Adds a part's fields as arguments; a name already taken becomes `<part><Name>` (or is left out). */
  const take = (part: z.ZodObject | undefined, into: Map<string, string>, prefix?: string, rename = (k: string) => k) => {
    if (!part) return;
    const c = convert(part, 'input');
    Object.assign(defs, c.defs);
    const req = requiredOf(c.root);
    for (const [key, prop] of Object.entries(propertiesOf(c.root))) {
      if (into === map.headers && STREAM_ONLY_HEADERS.has(key)) continue;
      let arg = rename(key);
      if (arg in properties) {
        if (!prefix) continue;
        arg = prefix + arg.charAt(0).toUpperCase() + arg.slice(1);
        if (arg in properties) continue;
      }
      properties[arg] = described(prop);
      into.set(arg, key);
      if (req.has(key)) required.add(arg);
    }
  };
  take(route.params, map.params);
  // A path parameter the schema leaves out is still an argument (a string).
  for (const m of route.path.match(/:(\w+)/g) ?? []) {
    const name = m.slice(1);
    if (!(name in properties)) properties[name] = { type: 'string' };
    map.params.set(name, name);
    required.add(name);
  }
  take(route.query, map.query, 'query');
  take(route.headers, map.headers, 'header', headerArgument);
  if (route.body) {
    const c = convert(route.body, 'input');
    Object.assign(defs, c.defs);
    if (isObjectSchema(c.root)) {
      const req = requiredOf(c.root);
      for (const [key, prop] of Object.entries(propertiesOf(c.root))) {
        // A body field named like a path parameter (a read-only echo such as `id`) is the path's.
        if (key in properties) continue;
        properties[key] = described(prop);
        map.body.set(key, key);
        if (req.has(key)) required.add(key);
      }
    } else {
      properties.body = { ...c.root, description: (c.root.description as string | undefined) ?? 'The request body.' };
      map.wholeBody = true;
      if (!route.body.safeParse(undefined).success) required.add('body');
    }
  }
  if (map.content) {
    Object.assign(properties, CONTENT_ARGUMENTS);
    required.add('content');
  }
  if (map.bytes) properties.encoding = READ_ENCODING;
  const schema: JsonSchema = { type: 'object', properties, additionalProperties: false };
  if (required.size) schema.required = [...required];
  if (Object.keys(defs).length) schema.$defs = defs;
  return { schema, map };
}

/**
 * The output schema of an operation: its JSON answer when that is an object; an answer of
 * another shape is carried as `{ result }` (MCP's structured content is an object); bytes as
 * FILE_CONTENT_OUTPUT.
 */
export function outputSchemaOf(route: Route): { schema: JsonSchema; wrapped: boolean } {
  if (route.answer === 'bytes') return { schema: FILE_CONTENT_OUTPUT, wrapped: false };
  const c = convert(route.response, 'output');
  if (c.root.type === 'object') return { schema: Object.keys(c.defs).length ? { ...c.root, $defs: c.defs } : c.root, wrapped: false };
  const schema: JsonSchema = { type: 'object', properties: { result: c.root }, required: ['result'] };
  if (Object.keys(c.defs).length) schema.$defs = c.defs;
  return { schema, wrapped: true };
}
