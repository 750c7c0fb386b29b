/**
 * One call of one operation: the request built from the operation table and the input object, sent
 * with retries (network errors, 408, 429 and 5xx; for GET/PUT/DELETE, and for POST under an
 * `Idempotency-Key` the SDK makes once per call and sends on every attempt), the answer read into
 * JSON or a typed error.
 */
import type { Config } from './config.js';
import { errorFromAnswer, retryAfterMs, SvcConnectionError } from './errors.js';
import { operations } from './generated/operations.js';
import type { CallOptions, Download, OperationId, UploadBody } from './types.js';

export type Spec = (typeof operations)[OperationId];

/** What the answer was besides its JSON: see `responseOf`. */
export interface ResponseInfo {
  status: number;
  headers: Headers;
  etag: string | undefined;
  requestId: string | undefined;
}

const infos = new WeakMap<object, ResponseInfo>();

/** The status and headers (ETag, request id) of the answer an SDK call returned `result` from. */
export function responseOf(result: unknown): ResponseInfo | undefined {
  return typeof result === 'object' && result !== null ? infos.get(result) : undefined;
}

export interface Prepared {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: UploadBody | string | undefined;
  /** The body can be sent again (retries). */
  replayable: boolean;
}

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

function specOf(id: OperationId): Spec {
  const s = (operations as Record<string, Spec>)[id];
  if (!s) throw new TypeError(`svc: no such operation: ${id}`);
  return s;
}

/** The request for `id` with `input`: parameters into the path, query and headers; the rest is the JSON body. */
export function prepare(config: Config, id: OperationId, input: Record<string, unknown> = {}): Prepared {
  const spec = specOf(id);
  const rest: Record<string, unknown> = { ...input };
  const take = (k: string) => {
    const v = rest[k];
    delete rest[k];
    return v;
  };
  const path = spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = take(name);
    if (v === undefined || v === null || v === '') throw new TypeError(`svc: ${id} needs ${name}`);
    return encodeURIComponent(String(v));
  });
  const url = new URL(config.baseUrl + path);
  for (const q of spec.query) {
    const v = take(q);
    if (v !== undefined && v !== null) url.searchParams.set(q, String(v));
  }
  const headers: Record<string, string> = { 'user-agent': config.userAgent, accept: spec.answer === 'bytes' ? '*/*' : 'application/json' };
  for (const [name, header] of Object.entries(spec.headers)) {
    const v = take(name);
    if (v !== undefined && v !== null) headers[header] = String(v);
  }
  if (spec.auth === 'key') headers.authorization = `Bearer ${config.credential()}`;
  if (config.accountId) headers['x-svc-account'] = config.accountId;
  let body: UploadBody | string | undefined;
  let replayable = true;
  if (spec.body === 'json' || spec.body === 'json-nested') {
    const value = spec.body === 'json' ? { ...rest } : take('body');
    if (spec.body === 'json') for (const k of Object.keys(rest)) delete rest[k];
    body = JSON.stringify(value ?? {});
    headers['content-type'] = 'application/json';
  } else if (spec.body === 'content') {
    const content = take('content') as UploadBody | undefined;
    if (content === undefined) throw new TypeError(`svc: ${id} needs content`);
    const type = take('contentType') as string | undefined;
    headers['content-type'] = type ?? (content instanceof Blob && content.type ? content.type : 'application/octet-stream');
    if (typeof content === 'string' || content instanceof Uint8Array || content instanceof ArrayBuffer || content instanceof Blob) body = content;
    else {
      body = content;
      replayable = false;
    }
  }
  const unknown = Object.keys(rest).filter((k) => rest[k] !== undefined);
  if (unknown.length) throw new TypeError(`svc: ${id} takes no ${unknown.join(', ')}`);
  return { method: spec.method, url: url.toString(), headers, body, replayable };
}

/** An async iterable of bytes as a stream fetch can send. */
function toStream(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  if (body instanceof ReadableStream) return body;
  const it = body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await it.return?.();
    },
  });
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', abort, { once: true });
  });

/** The wait before retry `attempt` (1, 2, ...): the server's Retry-After, else exponential backoff with full jitter. */
export function backoffMs(config: Config, attempt: number, headers?: Headers): number {
  const asked = retryAfterMs(headers);
  if (asked !== undefined) return Math.min(asked, config.retryMaxMs);
  const ceiling = Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

const newKey = () => globalThis.crypto.randomUUID();

/**
 * Whether an attempt that ended with `status` (0: no answer) and error `code` may be sent again. GET,
 * PUT and DELETE are idempotent; a POST carries its Idempotency-Key, so the server runs it once
 * however often it arrives (and says `idempotency_key_in_use` while the first attempt still runs);
 * a PATCH, which takes no key, only when the server said it did nothing (429).
 */
function mayRetry(method: string, status: number, code?: string): boolean {
  if (method === 'PATCH') return status === 429;
  if (status === 0 || RETRY_STATUS.has(status)) return true;
  return method === 'POST' && status === 409 && code === 'idempotency_key_in_use';
}

/**
 * Sends `prepared`, retrying what may be retried; returns the successful Response (2xx or 304), or
 * throws the typed error of the last answer.
 */
export async function send(config: Config, id: OperationId, prepared: Prepared, options: CallOptions = {}): Promise<Response> {
  const headers = { ...prepared.headers, ...options.headers };
  const method = prepared.method;
  if (method === 'POST') headers['idempotency-key'] ??= options.idempotencyKey ?? newKey();
  const maxRetries = prepared.replayable ? (options.maxRetries ?? config.maxRetries) : 0;
  // The limit is on the wait for the answer to start: a streamed body (a download, an event stream) may take as long as it
  // needs. A streamed upload is sent before the answer starts, so it has a limit only when the call sets one.
  const streamedUpload =
    prepared.body !== undefined &&
    !(
      typeof prepared.body === 'string' ||
      prepared.body instanceof Uint8Array ||
      prepared.body instanceof ArrayBuffer ||
      prepared.body instanceof Blob
    );
  const timeoutMs = options.timeoutMs ?? (streamedUpload ? 0 : config.timeoutMs);
  for (let attempt = 0; ; attempt++) {
    const timer = timeoutMs ? new AbortController() : undefined;
    const timeout = timer && setTimeout(() => timer.abort(new DOMException(`no answer in ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
    const signals = [options.signal, timer?.signal].filter((s): s is AbortSignal => !!s);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const body =
      prepared.body === undefined || typeof prepared.body === 'string' || prepared.body instanceof Uint8Array || prepared.body instanceof ArrayBuffer
        ? prepared.body
        : prepared.body instanceof Blob
          ? prepared.body
          : toStream(prepared.body);
    let res: Response;
    try {
      res = await config.fetch(prepared.url, { method, headers, body: body as BodyInit | undefined, signal, duplex: 'half' } as RequestInit);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (attempt < maxRetries && mayRetry(method, 0)) {
        await sleep(backoffMs(config, attempt + 1), options.signal);
        continue;
      }
      const why = (err as Error)?.name === 'TimeoutError' ? `timed out (no answer in ${timeoutMs} ms)` : `failed: ${(err as Error)?.message ?? err}`;
      throw new SvcConnectionError({ status: 0, code: 'connection_error', message: `${method} ${prepared.url} ${why}`, operation: id, cause: err });
    } finally {
      clearTimeout(timeout);
    }
    if (res.ok || res.status === 304) return res;
    const text = await res.text().catch(() => '');
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not the contract's body (a proxy's page)
    }
    const error = errorFromAnswer(res.status, parsed, res.headers, id);
    if (attempt < maxRetries && mayRetry(method, res.status, error.code)) {
      await sleep(backoffMs(config, attempt + 1, res.headers), options.signal);
      continue;
    }
    throw error;
  }
}

function info(res: Response): ResponseInfo {
  return {
    status: res.status,
    headers: res.headers,
    etag: res.headers.get('etag') ?? undefined,
    requestId: res.headers.get('x-request-id') ?? undefined,
  };
}

/** The JSON of a successful answer, with its ResponseInfo kept for `responseOf`. */
export async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  const value: unknown = text ? JSON.parse(text) : null;
  if (typeof value === 'object' && value !== null) infos.set(value, info(res));
  return value;
}

export function download(res: Response): Download {
  const len = res.headers.get('content-length');
  const d: Download = {
    status: res.status,
    notModified: res.status === 304,
    etag: res.headers.get('etag') ?? undefined,
    contentType: res.headers.get('content-type') ?? undefined,
    contentLength: len === null ? undefined : Number(len),
    contentRange: res.headers.get('content-range') ?? undefined,
    body: res.status === 304 ? null : res.body,
    arrayBuffer: () => res.arrayBuffer(),
    text: () => res.text(),
  };
  infos.set(d, info(res));
  return d;
}
