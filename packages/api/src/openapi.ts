import { z } from 'zod';

import { ErrorBody, type Route } from './route.js';

const toOpenApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');

/** Named schemas (`.meta({id})`) shared by operations, collected into components.schemas. */
type Components = Record<string, unknown>;

function schema(t: z.ZodType, io: 'input' | 'output', components?: Components): Record<string, unknown> {
  const raw = z.toJSONSchema(t, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete raw.$schema;
  const defs = (raw.$defs ?? {}) as Record<string, unknown>;
  delete raw.$defs;
  if (!components) return raw;
  // Input and output forms of one schema can differ (defaults); the input form gets its own name.
  const rename = (name: string) => (io === 'input' ? `${name}Input` : name);
  const rewrite = (v: unknown) =>
    JSON.parse(JSON.stringify(v).replace(/"#\/\$defs\/([^"]+)"/g, (_, n: string) => `"#/components/schemas/${rename(n)}"`));
  for (const [name, def] of Object.entries(defs)) components[rename(name)] = rewrite(def);
  return rewrite(raw) as Record<string, unknown>;
}

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Invalid input.',
  '401': 'No valid API key.',
  '403': 'Not allowed (e.g. `human_principal_required`).',
  '404': 'Not found (also for resources of another account).',
  '429': 'Too many requests.',
};

/** The OpenAPI 3.1 document, built from the route table. */
export function buildOpenApi(routes: Route[], info: { version: string; serverUrl?: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Components = {};
  for (const r of routes) {
    const parameters: unknown[] = [];
    for (const [where, obj] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      if (!obj) continue;
      for (const [name, t] of Object.entries(obj.shape)) {
        const s = schema(t as z.ZodType, 'input');
        parameters.push({ name, in: where, required: where === 'path' || !(t as z.ZodType).safeParse(undefined).success, schema: s });
      }
    }
    for (const name of r.path.match(/:(\w+)/g) ?? []) {
      const n = name.slice(1);
      if (!parameters.some((p) => (p as { name: string }).name === n)) {
        parameters.push({ name: n, in: 'path', required: true, schema: { type: 'string' } });
      }
    }
    const responses: Record<string, unknown> = {
      [String(r.status ?? 200)]: {
        description: 'Success.',
        content: { 'application/json': { schema: schema(r.response, 'output', components) } },
      },
    };
    const errors = r.handler.kind === 'unimplemented' ? { '501': 'Not implemented yet.' } : ERROR_STATUSES;
    for (const [code, description] of Object.entries(errors)) {
      if (r.auth === 'none' && code !== '400') continue;
      responses[code] = { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    const op: Record<string, unknown> = {
      operationId: r.id,
      summary: r.summary,
      tags: [r.tag],
      parameters,
      responses,
      'x-svc-principals': r.principals,
      'x-svc-authority': r.authority,
    };
    if (r.handler.kind === 'unimplemented') op['x-svc-status'] = 'unimplemented';
    if (r.auth === 'none') op.security = [];
    if (r.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: schema(r.body, 'input', components) } } };
    }
    (paths[toOpenApiPath(r.path)] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: info.version,
      description: 'Every path also works with a `/v1` prefix. Errors: `{"error": {"code", "message", "requestId"}}`.',
    },
    servers: [{ url: info.serverUrl ?? '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: '`svc_` + 64 lowercase hex.' } },
      schemas: { ...components, Error: schema(ErrorBody, 'output') },
    },
  };
}
