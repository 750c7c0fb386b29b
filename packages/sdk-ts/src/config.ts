import { SvcConfigError } from './errors.js';

export const DEFAULT_BASE_URL = 'https://api.svc.dev';
/** Each attempt's wait for an answer, as the Python SDK's `timeout=60`. */
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface SvcOptions {
  /** The API key (`svc_…`); default `SVC_API_KEY`. */
  apiKey?: string;
  /** A local host's credential (`svch_…`), used when there is no API key; default `SVC_HOST_CREDENTIAL`. */
  hostCredential?: string;
  /** The API's origin; default `SVC_BASE_URL`, else https://api.svc.dev. */
  baseUrl?: string;
  /** Act as this account (an org the caller is a member of): the `x-svc-account` header. */
  accountId?: string;
  /** Retries of a call that failed in a way worth retrying (default 3). */
  maxRetries?: number;
  /** The first retry's delay in milliseconds before jitter; doubles each time (default 250). */
  retryBaseMs?: number;
  /** The longest wait between two attempts, `Retry-After` included (default 30000). */
  retryMaxMs?: number;
  /**
   * How long each attempt waits for the answer to start, in milliseconds (default 60000, like the Python SDK's 60 s;
   * 0 waits for ever). A streamed body (a download, an event stream, a streamed upload) is not limited by it.
   */
  timeoutMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** Where variables are read from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Sent as `user-agent` next to the SDK's own name. */
  userAgent?: string;
}

export interface Config {
  baseUrl: string;
  credential: () => string;
  accountId: string | undefined;
  maxRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  fetch: typeof fetch;
  userAgent: string;
}

const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/** Options first, then the environment, then the defaults. A missing key is an error at the first call that needs one. */
export function resolveConfig(options: SvcOptions): Config {
  const env = options.env ?? (typeof process === 'undefined' ? {} : process.env);
  const apiKey = nonEmpty(options.apiKey) ?? nonEmpty(env.SVC_API_KEY);
  const host = nonEmpty(options.hostCredential) ?? nonEmpty(env.SVC_HOST_CREDENTIAL);
  const baseUrl = (nonEmpty(options.baseUrl) ?? nonEmpty(env.SVC_BASE_URL) ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  try {
    new URL(baseUrl);
  } catch {
    throw new SvcConfigError(`SVC_BASE_URL is not a URL: ${baseUrl}`);
  }
  return {
    baseUrl,
    credential: () => {
      const c = apiKey ?? host;
      if (!c) throw new SvcConfigError('No API key: set SVC_API_KEY (or pass apiKey) to call the svc API.');
      return c;
    },
    accountId: options.accountId,
    maxRetries: options.maxRetries ?? 3,
    retryBaseMs: options.retryBaseMs ?? 250,
    retryMaxMs: options.retryMaxMs ?? 30_000,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    userAgent: ['svc-sdk-ts/0.1.0', options.userAgent].filter(Boolean).join(' '),
  };
}
