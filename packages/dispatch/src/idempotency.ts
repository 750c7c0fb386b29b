/**
 * Idempotency keys as a dispatcher policy (docs/reliability.md, "Idempotency-Key"): a front that
 * received a key with a POST operation's call passes it (Invocation.idempotency) and the dispatcher
 * claims it at the keys service, records the answer, and replays it for the same key and the same
 * request for 24 hours; the same key with another request is 422 `idempotency_key_reused`, and
 * while the first still runs 409 `idempotency_key_in_use`. The records are the API's: one key names
 * one request whichever front it came through. MCP passes the key of a `tools/call` in its
 * `_meta` (docs/mcp.md); the API front keeps its own (it records the HTTP answer as sent).
 */
import { createHash } from 'node:crypto';

import type { Route } from '@svc/api';
import { keysClient } from '@svc/clients';
import { DomainError, type ErrorCode, isErrorKind, type Logger, type Registry } from '@svc/kit';

import type { Answer } from './answers.js';

/** An invocation's key, and what the request it names is (a front's fingerprint of it). */
export interface IdempotencyClaim {
  key: string;
  /** Identifies the request: the same key with another fingerprint is refused. */
  fingerprint: string;
}

/** On a replayed answer: it was recorded, not run again (Stripe's header, as the API sends it). */
export const REPLAYED = 'Idempotent-Replayed';

/** Which operations take a key: a POST that needs a key (the others are idempotent, or anyone's). */
export const takesIdempotencyKey = (route: Route): boolean => route.method === 'post' && route.auth === 'key' && !route.internal;

/** A fingerprint of a call: SHA-256 of its operation and its input as the front received it. */
export function callFingerprint(route: Route, input: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(['POST', route.id, input]))
    .digest('hex');
}

/** Answers that say nothing was done and to come back later: the key is released, so the retry runs. */
export const RELEASED = new Set([429, 503]);

/** A recorded refusal: its kind, code, message and details, thrown again on a replay. */
interface RecordedError {
  error: { kind: string; code: string; message: string; details?: Record<string, unknown> };
}

/**
 * Runs `run` under an idempotency key: a replay answers the recorded answer (or throws the recorded
 * error again); a first call's JSON answer or refusal is recorded before it is returned, as the
 * API records whatever it answers. Not recorded (the key is released, so the same call runs again):
 * 429 and 503 (nothing was done), and an answer that is not JSON (content, events).
 */
export async function idempotent(
  deps: { registry: Registry; log?: Logger },
  claim: IdempotencyClaim,
  inv: { requestId: string; auth?: { token: string } },
  run: () => Promise<Answer>,
): Promise<Answer> {
  // No credential: the operation refuses it (401) before anything is claimed.
  if (!inv.auth) return run();
  const keys = keysClient(deps.registry);
  const call = { principalToken: inv.auth.token, requestId: inv.requestId };
  const begun = await keys.beginIdempotent({ key: claim.key, fingerprint: claim.fingerprint }, call);
  if (begun.answer) {
    const a = begun.answer;
    const text = Buffer.from(a.body).toString('utf8');
    if (a.status >= 400) {
      const e = (JSON.parse(text) as RecordedError).error;
      // A recorded answer's code was thrown by this platform (registered when it was recorded).
      throw new DomainError(isErrorKind(e.kind) ? e.kind : 'internal', e.code as ErrorCode, e.message, e.details);
    }
    const headers = { ...(JSON.parse(a.headersJson || '{}') as Record<string, string>), [REPLAYED]: 'true' };
    return { kind: 'json', status: a.status, headers, body: text ? JSON.parse(text) : undefined, text };
  }
  const finish = async (answer: { status: number; headersJson: string; body: Buffer; contentSha256: string } | undefined) => {
    try {
      await keys.finishIdempotent({ key: claim.key, claim: begun.claim, answer }, call);
    } catch (err) {
      // The answer still goes out; the key stays claimed until its lease ends (then the same call runs again).
      deps.log?.warn({ err, requestId: inv.requestId }, 'could not record an idempotent answer');
    }
  };
  let answer: Answer;
  try {
    answer = await run();
  } catch (err) {
    // A fault of ours is recorded as what the caller saw (internal_error), as the API records a 500.
    const e = err instanceof DomainError ? err : new DomainError('internal', 'internal_error', 'Internal error.');
    const body: RecordedError = { error: { kind: e.kind, code: e.code, message: e.message, details: e.details } };
    await finish(
      RELEASED.has(e.httpStatus)
        ? undefined
        : { status: e.httpStatus, headersJson: '{}', body: Buffer.from(JSON.stringify(body)), contentSha256: '' },
    );
    throw err;
  }
  if (answer.kind !== 'json' || RELEASED.has(answer.status)) {
    await finish(undefined);
    return answer;
  }
  const text = answer.text ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
  await finish({ status: answer.status, headersJson: JSON.stringify(answer.headers), body: Buffer.from(text), contentSha256: '' });
  return { ...answer, text };
}
