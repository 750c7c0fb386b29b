import { status as GrpcStatus } from '@grpc/grpc-js';

import type { ErrorCode } from './error-codes.js';

/**
 * The one table that maps an error kind to its gRPC status and its HTTP status.
 * Services throw DomainError with a kind and a stable snake_case code; the gRPC layer sends the
 * kind and code in trailing metadata; the gateway turns them into the contract's error body.
 */
export const ERROR_KINDS = {
  invalid_argument: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 400 },
  unauthenticated: { grpc: GrpcStatus.UNAUTHENTICATED, http: 401 },
  forbidden: { grpc: GrpcStatus.PERMISSION_DENIED, http: 403 },
  not_found: { grpc: GrpcStatus.NOT_FOUND, http: 404 },
  conflict: { grpc: GrpcStatus.ALREADY_EXISTS, http: 409 },
  precondition_failed: { grpc: GrpcStatus.FAILED_PRECONDITION, http: 412 },
  too_large: { grpc: GrpcStatus.OUT_OF_RANGE, http: 413 },
  unsupported_media_type: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 415 },
  unprocessable: { grpc: GrpcStatus.INVALID_ARGUMENT, http: 422 },
  precondition_required: { grpc: GrpcStatus.FAILED_PRECONDITION, http: 428 },
  rate_limited: { grpc: GrpcStatus.RESOURCE_EXHAUSTED, http: 429 },
  internal: { grpc: GrpcStatus.INTERNAL, http: 500 },
  not_implemented: { grpc: GrpcStatus.UNIMPLEMENTED, http: 501 },
  unavailable: { grpc: GrpcStatus.UNAVAILABLE, http: 503 },
  deadline_exceeded: { grpc: GrpcStatus.DEADLINE_EXCEEDED, http: 504 },
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

/** HTTP status for a gRPC status that arrived without a kind (a transport failure, say). */
const HTTP_BY_GRPC: Record<number, number> = {
  [GrpcStatus.INVALID_ARGUMENT]: 400,
  [GrpcStatus.UNAUTHENTICATED]: 401,
  [GrpcStatus.PERMISSION_DENIED]: 403,
  [GrpcStatus.NOT_FOUND]: 404,
  [GrpcStatus.ALREADY_EXISTS]: 409,
  [GrpcStatus.ABORTED]: 409,
  [GrpcStatus.FAILED_PRECONDITION]: 412,
  [GrpcStatus.OUT_OF_RANGE]: 400,
  [GrpcStatus.RESOURCE_EXHAUSTED]: 429,
  [GrpcStatus.UNIMPLEMENTED]: 501,
  [GrpcStatus.UNAVAILABLE]: 503,
  [GrpcStatus.DEADLINE_EXCEEDED]: 504,
  [GrpcStatus.CANCELLED]: 499,
};

/** A rule said no. The message is public: it is shown to the API caller as is. */
export class DomainError extends Error {
  override name = 'DomainError';
  /**
   * The request that first answered this refusal, when it is a recorded answer replayed under an
   * idempotency key (docs/reliability.md): the error body names it instead of the replay's.
   */
  readonly requestId?: string;
  constructor(
    readonly kind: ErrorKind,
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown; requestId?: string },
  ) {
    super(message, options);
    if (options?.requestId !== undefined) this.requestId = options.requestId;
  }

  get httpStatus(): number {
    return ERROR_KINDS[this.kind].http;
  }
}

export const notFound = (what: string) => new DomainError('not_found', 'not_found', `${what} was not found.`);
export const invalid = (message: string, code: ErrorCode = 'invalid_request') => new DomainError('invalid_argument', code, message);

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_KINDS, value);
}

export function httpStatusForGrpc(code: number, kind?: string): number {
  if (kind && isErrorKind(kind)) return ERROR_KINDS[kind].http;
  return HTTP_BY_GRPC[code] ?? 500;
}

/**
 * PostgreSQL errors that mean the database cannot be reached right now, not that the statement
 * was wrong: class 08 (connection exception), 57P01-57P03 (admin or crash shutdown, cannot
 * connect now), 53300 (too many connections).
 */
const DB_UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
/** Socket errors of a connection that could not be made or was lost. */
/** Socket errors that mean a server could not be reached or the connection to it broke. */
export const CONNECTION_ERRNO: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/**
 * Said in words only: a pool timeout, a connection that ended under a query (node-postgres), a
 * database closed to connections (55000, a code too broad to map by itself).
 */
const DB_UNAVAILABLE_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|connection error and is not queryable|Connection ended|is not currently accepting connections/i;

/** How long a client is asked to wait before it retries a request the database could not serve. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** A cache (Redis) outage that reaches a caller: 503 `cache_unavailable` with `Retry-After`. */
export function cacheUnavailable(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  return new DomainError(
    'unavailable',
    'cache_unavailable',
    'The cache is unavailable; try again shortly.',
    { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
    { cause: err },
  );
}

/**
 * The one mapping of a database outage to a DomainError: 503 `database_unavailable` with
 * `Retry-After`, so that every service answers an outage alike. Undefined for any other error.
 */
export function databaseUnavailable(err: unknown): DomainError | undefined {
  // Not `instanceof Error`: socket errors may come from another realm (a VM context).
  if (err instanceof DomainError || typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; errors?: unknown[]; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  const nested = Array.isArray(e.errors) && e.errors.some((x) => databaseUnavailable(x) !== undefined); // AggregateError: every address refused
  if (!DB_UNAVAILABLE_SQLSTATE.test(code) && !CONNECTION_ERRNO.has(code) && !DB_UNAVAILABLE_MESSAGE.test(message) && !nested) return undefined;
  return new DomainError(
    'unavailable',
    'database_unavailable',
    'The database is unavailable; try again shortly.',
    { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
    {
      cause: err,
    },
  );
}
