import type { z } from 'zod';

import { errorCodes } from './openapi/errors.js';
import { SchemaCollector } from './openapi/schemas.js';
import { effectOf, ErrorBody, type Route } from './route.js';

const toOpenApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Invalid input.',
  '401': 'No valid API key.',
  '403': 'Not allowed (e.g. `human_principal_required`).',
  '404': 'Not found (also for resources of another account).',
  '429': 'Too many requests.',
};

/** What any operation may answer when a backend it needs is down or busy. */
const UNAVAILABLE =
  'A backend the operation needs is unavailable or busy (`unavailable`, `database_busy`), or the gateway is stopping; retry after `Retry-After` (seconds).';

const pick = (codes: string[]) => Object.fromEntries(codes.map((c) => [c, ERROR_STATUSES[c]!]));

/**
 * The error answers an operation documents. An unimplemented one still authenticates and checks the
 * principal before its 501 (so 401, 403 and 429 apply), but reads no input and finds nothing.
 */
function errorStatuses(r: Route): Record<string, string> {
  if (r.handler.kind === 'unimplemented') return { ...pick(r.auth === 'key' ? ['401', '403', '429'] : []), '501': 'Not implemented yet.' };
  const out: Record<string, string> = r.auth === 'key' ? { ...ERROR_STATUSES } : pick(['400']);
  if (r.body) {
    out['413'] = 'The JSON body is larger than the limit.';
    out['415'] = 'The body is not JSON (`Content-Type: application/json`).';
  }
  const conditional = Object.keys(r.headers?.shape ?? {}).some((h) => h === 'if-match' || h === 'if-none-match');
  if (conditional) out['412'] = 'A precondition (`If-Match`, `If-None-Match`) does not hold (`etag_mismatch`).';
  if (r.content) {
    out['412'] = 'A precondition (`If-Match`, `If-None-Match`) does not hold; the current ETag is in the `ETag` header.';
    out['413'] = 'The content is larger than the limit.';
  }
  if (takesIdempotencyKey(r)) {
    out['409'] ??= 'A request with this Idempotency-Key is still running (`idempotency_key_in_use`), or a conflict of the operation.';
    out['422'] ??= 'The Idempotency-Key was used with another request (`idempotency_key_reused`).';
  }
  if (r.answer === 'bytes') out['416'] = 'The range is outside the content (`Content-Range: bytes */<size>`).';
  for (const [code, d] of Object.entries(r.statuses ?? {})) if (Number(code) >= 400 && typeof d === 'string') out[code] = d;
  out['503'] ??= UNAVAILABLE;
  out['504'] ??= 'The operation did not finish within its deadline.';
  return out;
}

/** Every POST takes an Idempotency-Key (docs/reliability.md). */
const takesIdempotencyKey = (r: Route) => r.method === 'post' && r.auth === 'key' && r.handler.kind !== 'unimplemented';
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the request safe to retry: for 24 hours the same request with this key answers the first answer again (`Idempotent-Replayed: true`) and runs nothing; another request with it answers 422 `idempotency_key_reused`, the same one while the first runs 409 `idempotency_key_in_use`. Per account and API key.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

/** Path and query parameters; a path parameter the schema leaves out is still declared (a string). */
function parameters(r: Route, schemas: SchemaCollector): unknown[] {
  const out: Array<{ name: string; in: string; required: boolean; schema: unknown }> = [];
  for (const [where, obj] of [
    ['path', r.params],
    ['query', r.query],
    ['header', r.headers],
  ] as const) {
    if (!obj) continue;
    for (const [name, t] of Object.entries(obj.shape as Record<string, z.ZodType>)) {
      out.push({ name, in: where, required: where === 'path' || !t.safeParse(undefined).success, schema: schemas.schema(t, 'input') });
    }
  }
  if (takesIdempotencyKey(r)) out.push(IDEMPOTENCY_KEY);
  for (const name of r.path.match(/:(\w+)/g) ?? []) {
    const n = name.slice(1);
    if (!out.some((p) => p.name === n)) out.push({ name: n, in: 'path', required: true, schema: { type: 'string' } });
  }
  return out;
}

/** Bytes of any type: a file's content on its way in or out. */
const BINARY = { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' };

/** The success answers: JSON as `response` says, or a file's bytes (whole, a range, or not modified). */
function successes(r: Route, schemas: SchemaCollector): Record<string, unknown> {
  if (r.answer === 'bytes') {
    const bytes = { '*/*': { schema: BINARY } };
    return {
      '200': { description: 'The content, in its own content type, with its ETag.', content: bytes },
      '206': { description: 'The requested range of the content (`Range`), with `Content-Range`.', content: bytes },
      '304': { description: 'Not modified (`If-None-Match` names the current ETag).' },
    };
  }
  const content: Record<string, unknown> = { 'application/json': { schema: schemas.schema(r.response, 'output') } };
  if (r.events) {
    // With `Accept: text/event-stream`: server-sent events, each event's data as the schema says.
    // (OpenAPI 3.1 has no place for the schema of one event: it is named in the description, and
    // kept among the components.)
    const ref = schemas.schema(r.events.schema, 'output') as { $ref?: string };
    const named = ref.$ref ? ` Each event's data is a ${ref.$ref.split('/').pop()} (components/schemas).` : '';
    content['text/event-stream'] = { schema: { type: 'string', description: `${r.events.description}${named}` } };
  }
  const out: Record<string, unknown> = { [String(r.status ?? 200)]: { description: 'Success.', content } };
  // Another success the operation answers with the same body (201 for a create, 200 for one already there).
  // Or a status that answers the operation's body all the same (GET /ready's 503).
  for (const [code, d] of Object.entries(r.statuses ?? {})) {
    if (Number(code) < 300 || typeof d !== 'string') out[code] = { description: typeof d === 'string' ? d : d.description, content };
  }
  return out;
}

/** A request body that is not JSON: the raw bytes, or a multipart form with a file part and fields. */
function contentBody(r: Route, schemas: SchemaCollector): Record<string, unknown> {
  const c = r.content!;
  const content: Record<string, unknown> = {};
  if (c.kinds.includes('bytes')) content['*/*'] = { schema: BINARY };
  if (c.kinds.includes('multipart')) {
    const fields = c.fields ? (schemas.schema(c.fields, 'input') as { properties?: Record<string, unknown>; required?: string[] }) : {};
    content['multipart/form-data'] = {
      schema: {
        type: 'object',
        properties: { ...fields.properties, file: { ...BINARY, description: 'The file (the first file part of the form).' } },
        required: [...(fields.required ?? []), 'file'],
      },
    };
  }
  return { required: true, description: c.description, content };
}

function operation(r: Route, schemas: SchemaCollector): Record<string, unknown> {
  const responses: Record<string, unknown> = successes(r, schemas);
  const errors = errorStatuses(r);
  const codes = errorCodes(r, Object.keys(errors), takesIdempotencyKey(r));
  for (const [status, description] of Object.entries(errors)) {
    if (responses[status]) continue; // declared with the operation's own body
    responses[status] = {
      description,
      content: { 'application/json': { schema: schemas.schema(ErrorBody, 'output') } },
      // The codes this answer may carry (the registry's, packages/kit/src/error-codes.ts).
      ...(codes[status] ? { 'x-svc-error-codes': codes[status] } : {}),
    };
  }
  const op: Record<string, unknown> = {
    operationId: r.id,
    summary: r.summary,
    tags: [r.tag],
    parameters: parameters(r, schemas),
    responses,
    'x-svc-principals': r.principals,
    'x-svc-authority': r.authority,
    ...(r.personOnly ? { 'x-svc-person-only': true } : {}),
    // What it does to what is there (route.ts, Route.effect), and whether it may reach outside.
    'x-svc-effect': effectOf(r),
    ...(r.outside ? { 'x-svc-outside': true } : {}),
  };
  if (r.handler.kind === 'unimplemented') op['x-svc-status'] = 'unimplemented';
  // Two successes (201 and 200): which one is the operation's own (JSON keeps numeric keys in order).
  if (Object.keys(r.statuses ?? {}).some((c) => Number(c) < 300)) op['x-svc-success'] = r.status ?? 200;
  if (r.auth === 'none') op.security = [];
  if (r.body) {
    // Required unless the schema takes no body at all (an empty body is no body, never `{}`).
    const required = !r.body.safeParse(undefined).success;
    op.requestBody = { required, content: { 'application/json': { schema: schemas.schema(r.body, 'input') } } };
  } else if (r.content) {
    op.requestBody = contentBody(r, schemas);
  }
  return op;
}

/**
 * The OpenAPI 3.1 document, built from the route table. Every `$ref` resolves to an entry of
 * `components.schemas` (see SchemaCollector); an operationId used twice is an error.
 */
export function buildOpenApi(routes: Route[], info: { version: string; serverUrl?: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas = new SchemaCollector();
  const ids = new Set<string>();
  for (const r of routes) {
    // The protocol fronts' own calls (Route.internal) are no part of the HTTP API.
    if (r.internal) continue;
    if (ids.has(r.id)) throw new Error(`OpenAPI: operationId ${r.id} is used twice`);
    ids.add(r.id);
    (paths[toOpenApiPath(r.path)] ??= {})[r.method] = operation(r, schemas);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: info.version,
      description:
        'Every path also works with a `/v1` prefix. Errors: `{"error": {"code", "message", "requestId"}}`; each error response lists the codes it may carry (`x-svc-error-codes`).',
    },
    servers: [{ url: info.serverUrl ?? '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: '`svc_` + 64 lowercase hex.' } },
      schemas: schemas.components(),
    },
  };
}
