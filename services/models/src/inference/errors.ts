import { DomainError } from '@svc/kit';

import type { Upstream } from './types.js';

/**
 * A provider's failure as the platform's error (docs/models.md, "Errors"): never a bare 500.
 * - 401/403: the account's key was refused (`provider_key_invalid`, 422); the platform's own key
 *   refused is the operator's problem, so the caller sees `provider_unavailable`;
 * - 429: `provider_rate_limited` (429) with the wait the provider asked for (`retryAfterSeconds`);
 * - 404: the upstream does not serve the model (`model_unavailable`, 422);
 * - 400, 413, 422: the provider refused the request (`provider_rejected`, 422, its reason);
 * - 5xx (Anthropic's 529 too), a connection that failed or timed out, an error inside the stream:
 *   `provider_unavailable` (503).
 * Both SDKs' errors carry `status` and `headers`; a caller's abort passes through untouched.
 */
export function providerError(err: unknown, upstream: Upstream, model: string): unknown {
  if (err instanceof DomainError) return err;
  const e = err as { name?: string; status?: unknown; headers?: unknown; error?: unknown; message?: unknown };
  if (e?.name === 'APIUserAbortError' || e?.name === 'AbortError') return err;
  const who = upstream.provider === 'svc' ? 'The model server' : `The provider (${upstream.provider})`;
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const type = errorType(e?.error);
  const cause = { cause: err };
  if (status === 401 || status === 403 || type === 'authentication_error' || type === 'permission_error') {
    if (upstream.ownKey) {
      return new DomainError(
        'unprocessable',
        'provider_key_invalid',
        `${who} refused the account's key for ${upstream.provider}; set a valid one (PUT /models/provider-keys/${upstream.provider}).`,
        undefined,
        cause,
      );
    }
    return new DomainError('unavailable', 'provider_unavailable', `${who} refused the platform's key; the operator must fix it.`, undefined, cause);
  }
  if (status === 429 || type === 'rate_limit_error') {
    return new DomainError(
      'rate_limited',
      'provider_rate_limited',
      `${who} is rate limiting these calls; try again later.`,
      { retryAfterSeconds: retryAfter(e.headers) },
      cause,
    );
  }
  if (status === 404 || type === 'not_found_error') {
    return new DomainError('unprocessable', 'model_unavailable', `${who} does not serve the model ${model}.`, undefined, cause);
  }
  if (status === 400 || status === 413 || status === 422 || type === 'invalid_request_error' || type === 'request_too_large') {
    return new DomainError('unprocessable', 'provider_rejected', `${who} refused the request: ${said(e)}`, undefined, cause);
  }
  const what = status !== undefined ? `answered ${status}` : e?.name === 'APIConnectionTimeoutError' ? 'timed out' : 'failed';
  return new DomainError('unavailable', 'provider_unavailable', `${who} ${what}; try again shortly.`, { retryAfterSeconds: 1 }, cause);
}

/** The provider's own error type (`rate_limit_error`), from either SDK's error body. */
function errorType(body: unknown): string | undefined {
  const b = body as { type?: unknown; error?: { type?: unknown } } | undefined;
  const t = b?.error?.type ?? b?.type;
  return typeof t === 'string' ? t : undefined;
}

/** The provider's message, short (it is about the caller's request, never the key). */
function said(e: { message?: unknown; error?: unknown }): string {
  const b = e.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const m = b?.error?.message ?? b?.message ?? e.message;
  const text = typeof m === 'string' ? m : 'no reason given';
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Seconds to wait from `retry-after-ms`, `retry-after` (seconds or an HTTP date); at least 1. */
export function retryAfter(headers: unknown): number {
  const get = (name: string): string | null => {
    const h = headers as { get?: (n: string) => string | null } | Record<string, string> | undefined;
    if (!h) return null;
    if (typeof (h as { get?: unknown }).get === 'function') return (h as { get(n: string): string | null }).get(name);
    const v = (h as Record<string, string>)[name];
    return typeof v === 'string' ? v : null;
  };
  const ms = Number(get('retry-after-ms'));
  if (ms > 0) return Math.max(1, Math.ceil(ms / 1000));
  const raw = get('retry-after');
  if (raw) {
    const s = Number(raw);
    if (Number.isFinite(s) && s >= 0) return Math.max(1, Math.ceil(s));
    const at = Date.parse(raw);
    if (!Number.isNaN(at)) return Math.max(1, Math.ceil((at - Date.now()) / 1000));
  }
  return 1;
}
