import type { Case } from './cases';
import type { HttpAnswer } from './send';

export type FailureKind = 'server-error' | 'no-answer' | 'error-body' | 'answer-schema' | 'leak' | 'cross-tenant';

export interface Failure {
  kind: FailureKind;
  message: string;
}

/** What of the other tenant must never be seen: its ids, its keys, the marker in its resources. */
export interface Secrets {
  ids: () => string[];
  strings: string[];
}

const CONTRACT_KEYS = ['code', 'message', 'requestId'];

/**
 * Writes that answer 200 with a result per item (an id they cannot see is that item's
 * `item_not_found`) or that take an id as a filter (nothing matches another tenant's agent): a 2xx
 * with the other tenant's ids is their normal answer. That they changed nothing of the other
 * tenant is checked by the before/after snapshot, and its ids and marker must still not show.
 */
const PER_ITEM = new Set(['drive.readMany', 'drive.batchTag', 'drive.batchMove', 'drive.batchDelete', 'threads.archiveIdle']);

/** Whether an answer's text is the contract's error body: `{"error":{"code","message","requestId"}}`. */
export function errorBodyProblem(a: HttpAnswer): string | null {
  const type = String(a.headers['content-type'] ?? '');
  if (!/^application\/json\b/.test(type)) return `content type ${JSON.stringify(type)} (not application/json)`;
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `body is not JSON: ${JSON.stringify(a.text.slice(0, 120))}`;
  }
  const keys = body && typeof body === 'object' ? Object.keys(body) : [];
  const e = body?.error;
  if (keys.length !== 1 || keys[0] !== 'error' || !e || typeof e !== 'object') return `body is not {"error":{...}}: ${a.text.slice(0, 160)}`;
  for (const k of CONTRACT_KEYS) if (typeof e[k] !== 'string' || e[k] === '') return `error.${k} missing or not a string: ${a.text.slice(0, 160)}`;
  // `details` (an object) is the contract's one documented addition (a 412's current version, a merge's conflicts).
  if ('details' in e && (typeof e.details !== 'object' || e.details === null || Array.isArray(e.details))) return `error.details is not an object`;
  const extra = Object.keys(e).filter((k) => !CONTRACT_KEYS.includes(k) && k !== 'details');
  if (extra.length) return `error has fields beyond the contract: ${extra.join(', ')}`;
  if (!/^[a-z][a-z0-9_]*$/.test(e.code)) return `error.code ${JSON.stringify(e.code)} is not snake_case`;
  return null;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Every way an answer to a case breaks the rules (empty: it keeps them). */
export function checkAnswer(c: Case, a: HttpAnswer, secrets: Secrets): Failure[] {
  const out: Failure[] = [];
  if (a.error && a.status === 0) return [{ kind: 'no-answer', message: a.error }];
  const head = c.request.method === 'HEAD';
  const ownMethod = c.request.method === c.route.method.toUpperCase() || (head && c.route.method === 'get');
  if (a.status >= 500) {
    const contract = errorBodyProblem(a);
    // A 503 the operation documents (readiness: its own body saying what is down) is an answer too.
    const documented = a.status === 503 && c.route.response.safeParse(safeJson(a.text)).success;
    if (!((a.status === 503 || a.status === 504) && (contract === null || documented || head))) {
      out.push({ kind: 'server-error', message: `${a.status} ${a.text.slice(0, 300)}` });
      return out;
    }
  }
  // `/sites/<slug>/…` (a slug never holds "_", so a param that is not an id lands there) is the
  // public sites front: a web page's answers, plain text by design (docs/sites.md), not the API's.
  const sitesFront = /^sandbox\b/.test(String(a.headers['content-security-policy'] ?? ''));
  if (a.status >= 400 && a.status !== 503 && !head && !sitesFront) {
    const problem = errorBodyProblem(a);
    if (problem) out.push({ kind: 'error-body', message: `${a.status}: ${problem}` });
  }
  const json = /^application\/json\b/.test(String(a.headers['content-type'] ?? ''));
  if (
    a.status >= 200 &&
    a.status < 300 &&
    a.status !== 204 &&
    !head &&
    json &&
    !c.pathChanged &&
    ownMethod &&
    (c.route.answer ?? 'json') === 'json'
  ) {
    let body: unknown;
    try {
      body = JSON.parse(a.text);
      const parsed = c.route.response.safeParse(body);
      if (!parsed.success) out.push({ kind: 'answer-schema', message: `${a.status}: ${JSON.stringify(parsed.error.issues[0]).slice(0, 300)}` });
    } catch {
      out.push({ kind: 'answer-schema', message: `${a.status}: not JSON: ${a.text.slice(0, 120)}` });
    }
  }
  // A write that succeeds with the other tenant's ids acted on its resources (a read's answer is
  // searched for its data below: a filter by another tenant's id may well answer an empty list).
  // A key acting in an account it has no part in (x-svc-account) must get nothing at all.
  const foreign = c.foreignAccount && c.route.auth === 'key';
  if (c.otherTenant && (c.request.method !== 'GET' || foreign) && a.status >= 200 && a.status < 300 && !(PER_ITEM.has(c.route.id) && !foreign)) {
    out.push({ kind: 'cross-tenant', message: `${a.status} for ${c.detail}: ${a.text.slice(0, 200)}` });
  }
  // The other tenant's ids and marker: only those the request did not carry itself.
  const sent = `${c.request.path} ${JSON.stringify(c.request.headers)} ${c.request.body?.toString() ?? ''}`;
  const seen = `${a.text} ${a.headers.location ?? ''} ${a.headers.etag ?? ''}`;
  for (const s of [...secrets.strings, ...secrets.ids()]) {
    if (seen.includes(s) && !sent.includes(s)) out.push({ kind: 'leak', message: `the answer (${a.status}) shows ${s}: ${a.text.slice(0, 200)}` });
  }
  return out;
}
