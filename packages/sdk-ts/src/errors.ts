/**
 * The errors a call can end with. An answer of the API with a 4xx or 5xx status is an `SvcError`
 * (or the subclass for its status) carrying the contract's error body: `status`, `code`, `message`,
 * `requestId`. A request that got no answer is an `SvcConnectionError`; a client without the
 * configuration it needs is an `SvcConfigError`.
 */

/** The error body of every failed call: `{"error": {"code", "message", "requestId"}}`. */
export interface ErrorBody {
  error: { code: string; message: string; requestId: string };
}

export class SvcError extends Error {
  override name = 'SvcError';
  /** The HTTP status (0 when no answer came). */
  readonly status: number;
  /** The stable snake_case code (`not_found`, `precondition_failed`, ...). */
  readonly code: string;
  /** The id of the request, for support and the server's logs. */
  readonly requestId: string | undefined;
  /** The operation (route id) the call was. */
  readonly operation: string | undefined;
  /** The answer's headers. */
  readonly headers: Headers | undefined;

  constructor(init: { status: number; code: string; message: string; requestId?: string; operation?: string; headers?: Headers; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.operation = init.operation;
    this.headers = init.headers;
  }
}

/** 400, 413, 415, 416, 422: the input was refused. */
export class SvcInvalidRequestError extends SvcError {
  override name = 'SvcInvalidRequestError';
}
/** 401: no valid credential. */
export class SvcAuthenticationError extends SvcError {
  override name = 'SvcAuthenticationError';
}
/** 403: the principal may not do this (e.g. `human_principal_required`). */
export class SvcPermissionError extends SvcError {
  override name = 'SvcPermissionError';
}
/** 404: no such resource (also for another account's). */
export class SvcNotFoundError extends SvcError {
  override name = 'SvcNotFoundError';
}
/** 409: the state does not allow it (a name taken, a thread busy). */
export class SvcConflictError extends SvcError {
  override name = 'SvcConflictError';
}
/** 412: `If-Match` / `If-None-Match` did not hold; `etag` is the current version's ETag. */
export class SvcPreconditionFailedError extends SvcError {
  override name = 'SvcPreconditionFailedError';
  get etag(): string | undefined {
    return this.headers?.get('etag') ?? undefined;
  }
}
/** 428: the operation needs a precondition (`If-Match`). */
export class SvcPreconditionRequiredError extends SvcError {
  override name = 'SvcPreconditionRequiredError';
}
/** 429: too many requests; `retryAfterMs` is how long the server asked to wait. */
export class SvcRateLimitError extends SvcError {
  override name = 'SvcRateLimitError';
  get retryAfterMs(): number | undefined {
    return retryAfterMs(this.headers);
  }
}
/** 5xx: the server failed (after the retries, when the call could be retried). */
export class SvcServerError extends SvcError {
  override name = 'SvcServerError';
}
/** No answer: the network failed or the call timed out (after the retries). */
export class SvcConnectionError extends SvcError {
  override name = 'SvcConnectionError';
}

/** The client lacks configuration (no API key): raised at the first call that needs it. */
export class SvcConfigError extends Error {
  override name = 'SvcConfigError';
}

const BY_STATUS: Record<number, typeof SvcError> = {
  400: SvcInvalidRequestError,
  401: SvcAuthenticationError,
  403: SvcPermissionError,
  404: SvcNotFoundError,
  409: SvcConflictError,
  412: SvcPreconditionFailedError,
  413: SvcInvalidRequestError,
  415: SvcInvalidRequestError,
  416: SvcInvalidRequestError,
  422: SvcInvalidRequestError,
  428: SvcPreconditionRequiredError,
  429: SvcRateLimitError,
};

/** The typed error for an answer with `status` and (when it is the contract's) error body `body`. */
export function errorFromAnswer(status: number, body: unknown, headers: Headers, operation?: string): SvcError {
  const e = (body as Partial<ErrorBody> | null)?.error;
  const Kind = BY_STATUS[status] ?? (status >= 500 ? SvcServerError : SvcError);
  return new Kind({
    status,
    code: typeof e?.code === 'string' ? e.code : `http_${status}`,
    message: typeof e?.message === 'string' ? e.message : `The server answered ${status}.`,
    requestId: typeof e?.requestId === 'string' ? e.requestId : (headers.get('x-request-id') ?? undefined),
    operation,
    headers,
  });
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), if the answer has one. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const v = headers?.get('retry-after');
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
