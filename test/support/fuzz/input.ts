import type { Route } from '@svc/api';

import { encodeLoose, jsonText } from './hostile';
import type { IdPool } from './pools';
import type { Rng } from './prng';
import { generate, inputSchema, resolve, type Schema } from './values';

/** An operation's input before it is written as HTTP. */
export interface Input {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
}

/** The JSON Schemas of an operation's parts (computed once per route). */
export interface Shapes {
  params?: Schema;
  query?: Schema;
  body?: Schema;
  headers?: Schema;
  fields?: Schema;
}

const shapes = new WeakMap<Route, Shapes>();
export function shapesOf(route: Route): Shapes {
  let s = shapes.get(route);
  if (!s) {
    s = {
      params: route.params && inputSchema(route.params),
      query: route.query && inputSchema(route.query),
      body: route.body && inputSchema(route.body),
      headers: route.headers && inputSchema(route.headers),
      fields: route.content?.fields && inputSchema(route.content.fields),
    };
    shapes.set(route, s);
  }
  return s;
}

/** Query values as express hands them to the operation (strings; repeated keys as arrays). */
function queryStrings(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.map(String) : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** Whether the route's schemas accept an input (refinements included). */
export function accepts(route: Route, input: Input): boolean {
  const paramsOk = !route.params || route.params.safeParse(queryStrings(input.params)).success;
  const queryOk = !route.query || route.query.safeParse(queryStrings(input.query)).success;
  const bodyOk = !route.body || route.body.safeParse(input.body).success;
  return paramsOk && queryOk && bodyOk;
}

/**
 * A valid input of an operation, from its schemas, with ids from `pool`: generated until the
 * schemas (refinements too) accept it, a few times at most. `valid` says whether they did.
 */
export function validInput(route: Route, rng: Rng, pool: IdPool): { input: Input; valid: boolean } {
  const s = shapesOf(route);
  let last: Input | undefined;
  for (let attempt = 0; attempt < 8; attempt++) {
    const part = (schema: Schema | undefined) => (schema ? (generate(schema, { rng, pool, root: schema }) as Record<string, unknown>) : {});
    const input: Input = {
      params: part(s.params),
      query: part(s.query),
      body: s.body ? generate(s.body, { rng, pool, root: s.body }) : undefined,
      headers: {},
    };
    if (accepts(route, input)) return { input, valid: true };
    last = input;
  }
  return { input: last!, valid: false };
}

/** The names an object schema has (its properties, resolved). */
export function propertiesOf(schema: Schema | undefined): Record<string, Schema> {
  if (!schema) return {};
  return resolve(schema, schema).properties ?? {};
}

/** A query string: repeated keys for arrays, brackets for objects. */
export function queryString(query: Record<string, unknown>): string {
  const parts: string[] = [];
  const add = (k: string, v: unknown) => {
    if (v === undefined) return;
    if (Array.isArray(v)) for (const x of v) add(k, x);
    else if (typeof v === 'object' && v !== null) for (const [sub, x] of Object.entries(v)) add(`${k}[${sub}]`, x);
    else parts.push(`${encodeLoose(k)}=${encodeLoose(String(v))}`);
  };
  for (const [k, v] of Object.entries(query)) add(k, v);
  return parts.join('&');
}

/** How a case departs from writing its input the ordinary way. */
export interface Overrides {
  /** Path segments as sent (not encoded again). */
  rawParams?: Record<string, string>;
  /** The whole path (instead of the route's). */
  rawPath?: string;
  /** The query string as sent. */
  rawQuery?: string;
  /** The body as sent, with its content type (null: no Content-Type header). */
  rawBody?: { contentType: string | null; body: string | Buffer };
  /** Extra headers. */
  headers?: Record<string, string>;
  /** Under /v1 (the table's paths work with and without it). */
  v1?: boolean;
}

export interface HttpRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** An input written as the HTTP request a client would send. */
export function toHttp(route: Route, input: Input, o: Overrides = {}): HttpRequest {
  let path = o.rawPath ?? route.path.replace(/:(\w+)/g, (_m, name: string) => o.rawParams?.[name] ?? encodeLoose(String(input.params[name] ?? '')));
  if (o.v1) path = '/v1' + path;
  const qs = o.rawQuery ?? queryString(input.query);
  if (qs) path += '?' + qs;
  const headers: Record<string, string> = { ...input.headers, ...(o.headers ?? {}) };
  let body: string | Buffer | undefined;
  if (o.rawBody) {
    body = o.rawBody.body;
    if (o.rawBody.contentType !== null) headers['content-type'] = o.rawBody.contentType;
  } else if (route.content) {
    body = Buffer.from('fuzz content\n');
    headers['content-type'] ??= 'application/octet-stream';
  } else if (route.body && input.body !== undefined) {
    body = jsonText(input.body);
    headers['content-type'] ??= 'application/json';
  }
  return { method: route.method.toUpperCase(), path, headers, body };
}
