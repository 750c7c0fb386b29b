import fs from 'node:fs';
import path from 'node:path';

import { routes } from '@svc/api';
import { type Stack, startStack } from '@svc/stack';

import { createDatabase, dropNatsNamespace, randomName, REAL, startS3, tempDir } from './backends';
import { watchStack } from './contract';
import { seedEmbeddedDatabase } from './pglite-template';

export interface TestStack {
  url: string;
  stack: Stack;
  env: Record<string, string>;
  bootstrapKey: string;
  /** Calls the gateway; JSON in and out. */
  call(
    method: string,
    p: string,
    opts?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /**
   * Calls the gateway and expects success (status < 300) with an answer that matches the response
   * schema the route table documents (and OpenAPI publishes).
   */
  ok(
    method: string,
    p: string,
    key: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  stop(): Promise<void>;
}

/** Throws unless `body` matches the documented response schema of the route `method path`. */
export function conforms(method: string, path: string, body: unknown): void {
  const bare = path.split('?')[0]!.replace(/^\/v1(?=\/)/, '');
  const r = routes.find((x) => x.method === method.toLowerCase() && new RegExp(`^${x.path.replace(/:\w+/g, '[^/]+')}$`).test(bare));
  if (!r) throw new Error(`no route for ${method} ${bare}`);
  const parsed = r.response.safeParse(body);
  if (!parsed.success) throw new Error(`${method} ${bare}: answer does not match its schema: ${JSON.stringify(parsed.error.issues[0])}`);
}

/**
 * The whole platform in this process, on real backends where the environment names them
 * (each suite gets its own database, NATS namespace, Redis prefix and S3 bucket) and embedded
 * ones elsewhere.
 */
export async function startTestStack(
  extraEnv: Record<string, string> = {},
  options: {
    logDestination?: { write(line: string): void };
    /** Embedded backends (PGlite, the in-process bus, memory) even where the environment names real ones. */
    embedded?: boolean;
  } = {},
): Promise<TestStack> {
  const dataDir = tempDir();
  const namespace = randomName('t');
  const real = options.embedded ? {} : REAL;
  const db = real.pg ? await createDatabase(real.pg) : null;
  const s3 = extraEnv.S3_ENDPOINT === 'start' ? await startS3() : null;
  const env: Record<string, string> = {
    SVC_SERVICE: 'all',
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_NAMESPACE: namespace,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SVC_SHUTDOWN_GRACE_MS: '2000',
    SVC_INTERNAL_SECRET: randomName('secret-') + randomName('').repeat(4),
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...(real.redis ? { REDIS_URL: real.redis } : {}),
    ...(real.nats ? { NATS_URL: real.nats } : {}),
    // CI's first pass runs the services' calls over HTTP/2 (SVC_GRPC_TRANSPORT=wire), its second in process.
    ...(process.env.SVC_GRPC_TRANSPORT ? { SVC_GRPC_TRANSPORT: process.env.SVC_GRPC_TRANSPORT } : {}),
    ...extraEnv,
    ...(s3 ? { S3_ENDPOINT: s3.endpoint, S3_ACCESS_KEY: s3.accessKey, S3_SECRET_KEY: s3.secretKey, S3_BUCKET: namespace } : {}),
  };
  // The embedded database starts from a copy of an initdb'd folder, as a real one from a template.
  if (!env.DATABASE_URL) await seedEmbeddedDatabase(path.join(env.SVC_DATA_DIR!, 'pg'));
  const stack = await startStack(env, { logDestination: options.logDestination });
  const url = `http://127.0.0.1:${stack.port}`;
  // Every answer from this stack is held to the OpenAPI document (test/support/contract.ts).
  watchStack(url);
  const bootstrapKey = env.SVC_BOOTSTRAP_KEY ?? fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
  return {
    url,
    stack,
    env,
    bootstrapKey,
    ...httpClient(url),
    async stop() {
      await stack.stop();
      await dropNatsNamespace(namespace);
      await s3?.stop();
      await db?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const ERROR_BODY = {
  error: { code: expect.any(String), message: expect.any(String), requestId: expect.any(String) },
};

/**
 * A stack already running at `url` (scripts/fuzz-stateful.mjs): the same `call` and `ok`, with the
 * operator key given; `stack` is absent and `stop` does nothing.
 */
export function remoteStack(url: string, bootstrapKey: string): TestStack {
  // Its answers are held to the OpenAPI document too.
  watchStack(url);
  return {
    url: url.replace(/\/$/, ''),
    stack: undefined as unknown as Stack,
    env: {},
    bootstrapKey,
    ...httpClient(url),
    async stop() {},
  };
}

/**
 * `call` and `ok` against the gateway at `url`: JSON in and out; `ok` expects success with an answer
 * that matches the route's documented response schema.
 */
function httpClient(url: string): Pick<TestStack, 'call' | 'ok'> {
  const base = url.replace(/\/$/, '');
  const call: TestStack['call'] = async (method, p, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    const res = await fetch(base + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    call,
    async ok(method, p, key, body, headers) {
      const res = await call(method, p, { key, body, headers });
      if (res.status >= 300) throw new Error(`${method} ${p} -> ${res.status} ${JSON.stringify(res.body)}`);
      conforms(method, p, res.body);
      return res;
    },
  };
}
