/**
 * Idempotency keys as a dispatcher policy (docs/reliability.md, "Idempotency-Key"): a front that
 * received a key with a POST operation's call passes it (Invocation.idempotency): the HTTP API's
 * `Idempotency-Key` header, MCP's `_meta["io.svc/idempotency-key"]` of a `tools/call`. The
 * dispatcher claims it at the keys service, which owns the records, records the answer before it
 * is returned, and replays it for the same key and the same request for 24 hours; the same key with
 * another request is 422 `idempotency_key_reused`, and while the first still runs 409
 * `idempotency_key_in_use`. One key names one request whichever front it came through.
 *
 * The request is identified by a fingerprint of the operation and its input as the front received
 * it (path parameters, query, JSON body), in a canonical form both fronts produce alike: keys
 * sorted, query values as the text a URL carries them in, an empty body the same as none. An
 * operation that streams its content (a drive upload) cannot hash the bytes before it runs: its
 * content (type, file name, form fields, bytes) is hashed on its way through, recorded with the
 * answer, and a replay's content is read and compared before the recorded answer is given (422
 * when it differs). Such a request is recorded only when its content was read to the end: one cut
 * short, or refused before its bytes (a failed If-Match), ran nothing, so the key is released.
 */
import { createHash } from 'node:crypto';

import type { Content, Route } from '@svc/api';
import { keysClient } from '@svc/clients';
import { DomainError, ERROR_KINDS, type ErrorCode, type ErrorKind, isErrorKind, type Logger, type Registry } from '@svc/kit';

import type { Answer, HeaderSink } from './answers.js';
import { refusedBeforeContent } from './content.js';
import type { RawInput } from './input.js';

/** An invocation's idempotency key, as the caller gave it (the keys service checks its form). */
export interface IdempotencyClaim {
  key: string;
}

/** On a replayed answer (or refusal): it was recorded, not run again (Stripe's header, as the API sends it). */
export const REPLAYED = 'Idempotent-Replayed';

/** Which operations take a key: a POST that needs a key (the others are idempotent, or anyone's). */
export const takesIdempotencyKey = (route: Route): boolean => route.method === 'post' && route.auth === 'key' && !route.internal;

/** Answers that say nothing was done and to come back later: the key is released, so the retry runs. */
export const RELEASED = new Set([429, 503]);

/** JSON with the keys of every object sorted: the same value gives the same text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    const fields = keys.flatMap((k) => {
      const v = (value as Record<string, unknown>)[k];
      return v === undefined ? [] : [`${JSON.stringify(k)}:${canonical(v)}`];
    });
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A query as a URL carries it: every value as text (a list as its texts). */
function queryText(query: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.map((x) => String(x)) : String(v);
  }
  return out;
}

const isEmptyObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

/** The fingerprint of a call: SHA-256 of its operation and its input, in the canonical form above. */
export function callFingerprint(route: Route, raw: RawInput): string {
  const body = raw.body === undefined || isEmptyObject(raw.body) ? null : raw.body;
  // Streamed content is hashed on its way through (contentHasher), not here.
  const input = [route.id, raw.params ?? {}, queryText(raw.query), body, route.content ? 'content' : null];
  return createHash('sha256')
    .update(canonical(['POST', ...input]))
    .digest('hex');
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

/**
 * A recorded refusal: the error body as the HTTP API writes it (with the request that answered
 * it), and its kind. Records the API front wrote before this policy have no kind: the status
 * gives one.
 */
interface RecordedError {
  error: { kind?: string; code: string; message: string; requestId?: string; details?: Record<string, unknown> };
}

const KIND_BY_STATUS = new Map<number, ErrorKind>();
for (const [kind, k] of Object.entries(ERROR_KINDS) as Array<[ErrorKind, { http: number }]>) {
  if (!KIND_BY_STATUS.has(k.http)) KIND_BY_STATUS.set(k.http, kind);
}

/**
 * Headers of a recorded answer that a replay does not repeat: its own rate limit is its own, and
 * the front sets the content type it writes (records made by the API front before this policy hold both).
 */
const NOT_REPLAYED = new Set(['ratelimit', 'ratelimit-policy', 'content-type']);

export interface IdempotencyDeps {
  registry: Registry;
  log?: Logger;
}

/** The call being run under a key: who asks, and where the replay's header goes. */
interface KeyedCall {
  requestId: string;
  auth?: { token: string };
  headers?: HeaderSink;
}

const reused = () =>
  new DomainError(
    'unprocessable',
    'idempotency_key_reused',
    'This Idempotency-Key was already used with another request (operation, path, query, body or content); use a new key for a new request.',
  );

/**
 * Runs the call under an idempotency key: a replay answers the recorded answer (or throws the
 * recorded refusal again, naming the request that first answered it); a first call's JSON answer
 * or refusal is recorded before it is returned. Not recorded (the key is released, so the same call
 * runs again): 429 and 503 (nothing was done), an answer that is not JSON (content, events), and
 * streamed content not read to the end. `run` is given the input to use (its content hashed).
 */
export async function idempotent(
  deps: IdempotencyDeps,
  route: Route,
  claim: IdempotencyClaim,
  raw: RawInput,
  inv: KeyedCall,
  run: (raw: RawInput) => Promise<Answer>,
): Promise<Answer> {
  // No credential: the operation refuses it (401) before anything is claimed.
  if (!inv.auth) return run(raw);
  const keys = keysClient(deps.registry);
  const call = { principalToken: inv.auth.token, requestId: inv.requestId };
  const begun = await keys.beginIdempotent({ key: claim.key, fingerprint: callFingerprint(route, raw) }, call);
  if (begun.answer) return replay(route, raw, begun.answer, inv);

  let hashed: ReturnType<typeof contentHasher> | undefined;
  const given = raw.content;
  const input: RawInput =
    route.content && given
      ? {
          ...raw,
          content: async () => {
            hashed = contentHasher(await given());
            return hashed.content;
          },
        }
      : raw;
  const finish = async (answer: { status: number; headersJson: string; body: Buffer } | undefined) => {
    // Streamed content that was not read to the end ran nothing: the key is released.
    const contentSha256 = hashed?.digest() ?? '';
    const recorded = answer && (!route.content || contentSha256) ? { ...answer, contentSha256 } : undefined;
    try {
      await keys.finishIdempotent({ key: claim.key, claim: begun.claim, answer: recorded }, call);
    } catch (err) {
      // The answer still goes out; the key stays claimed until its lease ends (then the same call runs again).
      deps.log?.warn({ err, requestId: inv.requestId }, 'could not record an idempotent answer');
    }
  };
  let answer: Answer;
  try {
    answer = await run(input);
  } catch (err) {
    // A fault of ours is recorded as what the caller saw (internal_error), as a 500 is answered.
    const e = err instanceof DomainError ? err : new DomainError('internal', 'internal_error', 'Internal error.');
    const { retryAfterSeconds: _, ...details } = e.details ?? {};
    const error: RecordedError['error'] = { kind: e.kind, code: e.code, message: e.message, requestId: inv.requestId };
    if (Object.keys(details).length) error.details = details;
    // A write refused before its content (content.ts) ran nothing, as one whose content was cut short.
    const released = RELEASED.has(e.httpStatus) || refusedBeforeContent.has(err as object);
    await finish(released ? undefined : { status: e.httpStatus, headersJson: '{}', body: Buffer.from(JSON.stringify({ error })) });
    throw err;
  }
  if (answer.kind !== 'json' || RELEASED.has(answer.status)) {
    await finish(undefined);
    return answer;
  }
  const text = answer.text ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
  await finish({ status: answer.status, headersJson: JSON.stringify(answer.headers), body: Buffer.from(text) });
  return { ...answer, text };
}

/** The recorded answer of a key, given again (a streamed request's content must be the same). */
async function replay(
  route: Route,
  raw: RawInput,
  a: { status: number; headersJson: string; body: Uint8Array; contentSha256: string },
  inv: KeyedCall,
): Promise<Answer> {
  if (route.content && raw.content && (await hashContent(await raw.content())) !== a.contentSha256) throw reused();
  inv.headers?.setHeader(REPLAYED, 'true');
  const text = Buffer.from(a.body).toString('utf8');
  if (a.status >= 400) {
    const e = (JSON.parse(text) as RecordedError).error;
    const kind = isErrorKind(e.kind) ? e.kind : (KIND_BY_STATUS.get(a.status) ?? 'internal');
    // A recorded answer's code was thrown by this platform (registered when it was recorded).
    throw new DomainError(kind, e.code as ErrorCode, e.message, e.details, { requestId: e.requestId });
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(JSON.parse(a.headersJson || '{}') as Record<string, string>)) {
    if (!NOT_REPLAYED.has(k.toLowerCase())) headers[k] = v;
  }
  headers[REPLAYED] = 'true';
  return { kind: 'json', status: a.status, headers, body: text ? JSON.parse(text) : undefined, text };
}
