import { ERROR_CODES, type ErrorCode, statusesOf } from '@svc/kit';

import type { Route } from '../route.js';

/**
 * The error codes an operation may answer, per status (OpenAPI's `x-svc-error-codes` on each error
 * response). Codes every operation of a kind answers come from the kind (below: authentication,
 * input, body limits, idempotency, unavailable backends); an operation's own codes are its route's
 * `errors`. The tests' contract check (test/support/contract.ts) refuses an error answer whose code
 * its operation does not list.
 */

type Codes = Partial<Record<number, ErrorCode[]>>;

/** What the gateway answers for any operation it reaches: input it cannot read, a backend down or slow. */
const ANY: Codes = {
  400: ['invalid_request', 'invalid_encoding', 'request_aborted', 'bad_request'],
  503: [
    'database_unavailable',
    'database_busy',
    'cache_unavailable',
    'service_unavailable',
    'storage_unavailable',
    'transaction_timeout',
    'draining',
    'call_aborted',
  ],
  504: ['upstream_timeout'],
};

/** What an operation that takes an API key answers: the credential, the principal's kind, the rate limit. */
const KEYED: Codes = {
  401: ['missing_api_key', 'invalid_api_key', 'invalid_token'],
  403: ['principal_not_allowed'],
  429: ['rate_limited', 'too_many_failed_authentications'],
};

/** A JSON body: it may be malformed, too large or not JSON. */
const BODY: Codes = { 400: ['invalid_json'], 413: ['payload_too_large'], 415: ['unsupported_media_type'] };

/** A POST with an Idempotency-Key (docs/reliability.md). */
const IDEMPOTENT: Codes = {
  400: ['invalid_idempotency_key'],
  409: ['idempotency_key_in_use'],
  422: ['idempotency_key_reused'],
  503: ['idempotency_unavailable'],
};

function merge(into: Map<number, Set<ErrorCode>>, codes: Codes): void {
  for (const [status, list] of Object.entries(codes)) {
    const set = into.get(Number(status)) ?? new Set<ErrorCode>();
    for (const c of list ?? []) set.add(c);
    into.set(Number(status), set);
  }
}

/**
 * The codes of each error status the operation declares (`declared`): the kind's and the route's
 * own. A code of the route's own whose status the operation does not declare is a mistake of the
 * route table (an error thrown here, when the document is built).
 */
export function errorCodes(r: Route, declared: string[], idempotent: boolean): Record<string, ErrorCode[]> {
  const codes = new Map<number, Set<ErrorCode>>();
  if (r.handler.kind === 'unimplemented') merge(codes, { 501: ['not_implemented'] });
  else {
    merge(codes, ANY);
    if (r.body) merge(codes, BODY);
    if (idempotent) merge(codes, IDEMPOTENT);
  }
  if (r.auth === 'key') {
    merge(codes, KEYED);
    // An OAuth token is read-only or not; only a person changes authority or makes a person's decision.
    if (r.method !== 'get') merge(codes, { 403: ['read_only_token'] });
    if (r.authority || r.personOnly) merge(codes, { 403: ['human_principal_required'] });
  }
  for (const code of r.errors ?? []) {
    const statuses = statusesOf(code).filter((s) => declared.includes(String(s)));
    if (!statuses.length) throw new Error(`OpenAPI: ${r.id} lists ${code} (${ERROR_CODES[code].status}), a status it does not declare`);
    for (const s of statuses) merge(codes, { [s]: [code] });
  }
  const out: Record<string, ErrorCode[]> = {};
  for (const status of declared) {
    const list = codes.get(Number(status));
    if (list?.size) out[status] = [...list].sort();
  }
  return out;
}
