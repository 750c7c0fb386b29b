/**
 * Idempotency-Key on POST operations (Stripe's promise; docs/reliability.md). The first request
 * with a key claims it at the keys service, which owns the records; its answer, whatever it is,
 * is recorded before it is sent, and replayed to every later request with the same key and the
 * same request for 24 hours. The same key with another request answers 422
 * `idempotency_key_reused`, and while the first still runs 409 `idempotency_key_in_use`.
 *
 * The request is identified by a fingerprint: SHA-256 of the method, the operation, the path
 * parameters, the raw query string and the SHA-256 of the body's bytes. An operation that streams
 * its content (a drive upload) cannot hash the bytes before it runs: its content (type, file name,
 * form fields, bytes) is hashed on its way through, recorded with the answer, and a replay's content
 * is read and compared before the recorded answer is sent (422 when it differs). Such a request is
 * recorded only when its content was read to the end: one cut short (or refused before its bytes,
 * a failed If-Match) ran nothing, so the key is released.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import type { Request, Response } from 'express';

import type { Content, Route } from '@svc/api';
import { keysClient } from '@svc/clients';
import { RELEASED, REPLAYED } from '@svc/dispatch';
import { DomainError, type Logger, type Registry } from '@svc/kit';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

// Not recorded: hop-by-hop headers, and those the replay sets itself.
const NOT_RECORDED = new Set(['x-request-id', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

declare module 'node:http' {
  interface IncomingMessage {
    /** SHA-256 of the JSON body's bytes (set while it is read, when the request has an Idempotency-Key). */
    bodySha256?: string;
  }
}

/** express.json's `verify` hook: notes the body's hash for an Idempotency-Key fingerprint. */
export function noteBodyHash(req: IncomingMessage, buf: Buffer): void {
  if (req.headers[IDEMPOTENCY_HEADER] !== undefined) req.bodySha256 = createHash('sha256').update(buf).digest('hex');
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function fingerprintOf(req: Request, route: Route): string {
  const q = req.url.indexOf('?');
  const query = q < 0 ? '' : req.url.slice(q + 1);
  // Streamed content is hashed on its way through (contentHasher), not here.
  const body = route.content ? 'content' : (req.bodySha256 ?? sha256(''));
  return sha256(JSON.stringify(['POST', route.id, req.params, query, body]));
}

/** Hashes a request's content as it streams: its type, file name, form fields, then the bytes. */
function contentHasher(c: Content): { content: Content; digest(): string | undefined } {
  const hash = createHash('sha256')
    .update(JSON.stringify([c.type ?? null, c.filename ?? null, c.fields]))
    .update('\n');
  let digest: string | undefined;
  async function* bytes(): AsyncGenerator<Buffer> {
    for await (const chunk of c.stream) {
      hash.update(chunk);
      yield chunk;
    }
    digest = hash.digest('hex');
  }
  return { content: { ...c, stream: bytes() }, digest: () => digest };
}

/** Reads a replayed request's content to the end, as the first was read, and hashes it. */
async function hashContent(c: Content): Promise<string> {
  const h = contentHasher(c);
  for await (const _ of h.content.stream) {
    // only hashed
  }
  return h.digest()!;
}

/** A claimed key: how the operation's content is to be read (hashed, for a streamed request). */
export interface Claimed {
  content(c: Content): Content;
}

export interface IdempotencyDeps {
  registry: Registry;
  log: Logger;
}

/**
 * Handles a POST's Idempotency-Key before the operation: answers a replay (returns undefined), or
 * claims the key and arranges for the answer to be recorded before it is sent.
 */
export async function idempotent(
  deps: IdempotencyDeps,
  req: Request,
  res: Response,
  route: Route,
  token: string,
  readContent: () => Promise<Content>,
): Promise<Claimed | undefined> {
  const header = req.headers[IDEMPOTENCY_HEADER];
  const key = Array.isArray(header) ? header.join(',') : header!;
  const keys = keysClient(deps.registry);
  const call = { principalToken: token, requestId: req.requestId };
  const begun = await keys.beginIdempotent({ key, fingerprint: fingerprintOf(req, route) }, call);
  if (begun.answer) {
    if (route.content && (await hashContent(await readContent())) !== begun.answer.contentSha256) throw reused();
    replay(res, begun.answer);
    return undefined;
  }
  const claim = begun.claim;
  let hashed: ReturnType<typeof contentHasher> | undefined;
  recordBeforeSending(res, async (answer) => {
    // Streamed content that was not read to the end ran nothing: the key is released.
    const contentSha256 = hashed?.digest() ?? '';
    if (route.content && !contentSha256) answer = undefined;
    try {
      await keys.finishIdempotent({ key, claim, answer: answer && { ...answer, contentSha256 } }, call);
    } catch (err) {
      // The answer still goes out; the key stays claimed until its lease ends (then the same request runs again).
      deps.log.warn({ err, requestId: req.requestId }, 'could not record an idempotent answer');
    }
  });
  return {
    content(c) {
      hashed = contentHasher(c);
      return hashed.content;
    },
  };
}

const reused = () =>
  new DomainError(
    'unprocessable',
    'idempotency_key_reused',
    'This Idempotency-Key was already used with another request (method, path, query or body); use a new key for a new request.',
  );

function replay(res: Response, answer: { status: number; headersJson: string; body: Uint8Array }): void {
  const headers = JSON.parse(answer.headersJson || '{}') as Record<string, string>;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader(REPLAYED, 'true');
  res.statusCode = answer.status;
  const body = Buffer.from(answer.body);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/**
 * Holds the answer's end until `record` has the status, the headers and the bytes: a client that
 * saw an answer gets it again on a retry. Answers that ask to come back later are not recorded.
 */
function recordBeforeSending(
  res: Response,
  record: (answer: { status: number; headersJson: string; body: Buffer } | undefined) => Promise<void>,
): void {
  const chunks: Buffer[] = [];
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const bytes = (chunk: unknown, encoding?: unknown) =>
    Buffer.isBuffer(chunk)
      ? chunk
      : chunk instanceof Uint8Array
        ? Buffer.from(chunk)
        : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  let ending = false;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (chunk !== undefined && chunk !== null) chunks.push(bytes(chunk, rest[0]));
    return write(chunk, ...rest);
  }) as Response['write'];
  res.end = ((...args: unknown[]) => {
    if (ending) return res;
    ending = true;
    const [chunk, encoding] = typeof args[0] === 'function' ? [] : args;
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(bytes(chunk, encoding));
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.getHeaders())) {
      if (v !== undefined && !NOT_RECORDED.has(k)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    }
    const answer = RELEASED.has(res.statusCode)
      ? undefined
      : { status: res.statusCode, headersJson: JSON.stringify(headers), body: Buffer.concat(chunks) };
    void record(answer).finally(() => end(...args));
    return res;
  }) as Response['end'];
}
