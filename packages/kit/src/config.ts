import { randomBytes } from 'node:crypto';

import { z } from 'zod';

import { SERVICE_NAMES, type ServiceName } from './catalogue.js';

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');
const port = z.coerce.number().int().min(0).max(65535);
const url = (protocols: string[]) =>
  z
    .string()
    .url()
    .refine((v) => protocols.some((p) => v.startsWith(p)), `must start with ${protocols.join(' or ')}`)
    .optional();

const addrVars = Object.fromEntries(SERVICE_NAMES.map((n) => [`SVC_${n.toUpperCase()}_ADDR`, z.string().min(3).optional()])) as Record<
  `SVC_${Uppercase<ServiceName>}_ADDR`,
  z.ZodOptional<z.ZodString>
>;

const EnvSchema = z
  .object({
    SVC_SERVICE: z.enum(['all', ...SERVICE_NAMES]).default('all'),
    PORT: port.default(8080),
    HOST: z.string().default('0.0.0.0'),
    GRPC_PORT: port.optional(),
    GRPC_HOST: z.string().optional(),
    SVC_DATA_DIR: z.string().min(1).default('.data'),
    SVC_NAMESPACE: z
      .string()
      .regex(/^[a-z][a-z0-9]{0,30}$/, 'must be lowercase letters and digits, starting with a letter')
      .default('svc'),
    SVC_INTERNAL_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    SVC_MIGRATE_ONLY: bool,
    SVC_GRPC_DEADLINE_MS: z.coerce.number().int().min(100).default(10_000),
    // How services of one process call each other: in process (in-process.ts) or over HTTP/2 like services apart.
    SVC_GRPC_TRANSPORT: z.enum(['in-process', 'wire']).default('in-process'),
    SVC_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    // How long a start waits for a service it needs (accounts for keys) before it gives up and exits.
    SVC_START_WAIT_SECONDS: z.coerce.number().int().min(0).default(120),
    // The embedded database's bounds (packages/kit/src/storage/pglite.ts): a transaction open longer
    // is rolled back; a statement waiting longer for its one connection fails with database_busy.
    SVC_SQL_TX_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
    SVC_SQL_BUSY_TIMEOUT_MS: z.coerce.number().int().min(100).default(8_000),
    // The transaction guard (storage/sql-guard.ts): unset, guardMode() decides from NODE_ENV and the runtime.
    SVC_SQL_GUARD: z.enum(['throw', 'warn', 'off']).optional(),
    // Work whose cost a caller chooses (sandbox runs, grep) runs this much nicer than the request
    // path, so that a flood of it cannot take the CPU from other tenants' requests (0: the same).
    SVC_HEAVY_WORK_NICE: z.coerce.number().int().min(0).max(19).default(10),
    // How far V8 lets the old generation grow past what its last full collection kept, in percent
    // (V8's --heap-growing-percent; 0: V8's own choice). Its own choice here was ~55%: buffers
    // that a collection of the young generation had not freed yet then counted against that room,
    // and it marked the whole heap every ~10 MB of content moved (apps/stack/src/index.ts).
    SVC_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1000).default(100),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    DATABASE_URL: url(['postgres://', 'postgresql://']),
    REDIS_URL: url(['redis://', 'rediss://']),
    NATS_URL: url(['nats://', 'tls://']),
    S3_ENDPOINT: url(['http://', 'https://']),
    S3_ACCESS_KEY: z.string().optional(),
    S3_SECRET_KEY: z.string().optional(),
    S3_BUCKET: z.string().optional(),
    S3_REGION: z.string().default('us-east-1'),
    ...addrVars,
  })
  .superRefine((env, ctx) => {
    if (env.S3_ENDPOINT && !(env.S3_ACCESS_KEY && env.S3_SECRET_KEY && env.S3_BUCKET)) {
      ctx.addIssue({
        code: 'custom',
        path: ['S3_ENDPOINT'],
        message: 'S3_ENDPOINT needs S3_ACCESS_KEY, S3_SECRET_KEY and S3_BUCKET too',
      });
    }
    if (env.SVC_SERVICE !== 'all' && !env.SVC_INTERNAL_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['SVC_INTERNAL_SECRET'],
        message: 'is required when services run as separate processes (SVC_SERVICE is set)',
      });
    }
  });

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Env {
  /** The secret that signs principal tokens; generated per process when all services share one. */
  internalSecret: string;
  /** gRPC address of each service (host:port), when known from the environment. */
  addresses: Partial<Record<ServiceName, string>>;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const cleanEnv = (env: NodeJS.ProcessEnv) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
const configError = (issues: z.core.$ZodIssue[]) =>
  new ConfigError(`invalid configuration:\n${issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`).join('\n')}`);

/** Reads and validates the environment; a bad value stops the process with a readable message. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(cleanEnv(env));
  if (!parsed.success) throw configError(parsed.error.issues);
  const e = parsed.data;
  const addresses: Partial<Record<ServiceName, string>> = {};
  for (const name of SERVICE_NAMES) {
    const addr = e[`SVC_${name.toUpperCase() as Uppercase<ServiceName>}_ADDR`];
    if (addr) addresses[name] = addr;
  }
  return {
    ...e,
    internalSecret: e.SVC_INTERNAL_SECRET ?? randomBytes(32).toString('hex'),
    addresses,
  };
}

/**
 * Reads the settings services declare for themselves (a module's `settings`: an object schema
 * keyed by variable, e.g. SVC_DRIVE_MAX_FILE_BYTES) with loadConfig's rules: empty is unset, and
 * every bad value of every schema is named in one ConfigError of the same format.
 */
export function loadSettings<T extends Record<string, z.ZodObject>>(
  schemas: T,
  env: NodeJS.ProcessEnv = process.env,
): { [K in keyof T]: z.output<T[K]> } {
  const cleaned = cleanEnv(env);
  const out: Record<string, unknown> = {};
  const issues: z.core.$ZodIssue[] = [];
  for (const [name, schema] of Object.entries(schemas)) {
    const parsed = schema.safeParse(cleaned);
    if (parsed.success) out[name] = parsed.data;
    else issues.push(...parsed.error.issues);
  }
  if (issues.length) throw configError(issues);
  return out as { [K in keyof T]: z.output<T[K]> };
}

/**
 * Builders of a module's settings schema (values are strings in the environment; these coerce and
 * check them), so that a service declares its settings without its own zod.
 */
export const setting = {
  /** An integer of at least `min` (and at most `max`, when given); `fallback` when unset. */
  int: (min: number, fallback: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(fallback),
  /** An integer of at least `min` (and at most `max`), or undefined when unset (the default is worked out from other settings). */
  optionalInt: (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).optional(),
};
export const defineSettings = <S extends Record<string, z.ZodType>>(shape: S) => z.object(shape);
