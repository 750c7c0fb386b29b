import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import { buildOpenApi, routes } from '@svc/api';

/**
 * The contract check: every answer a suite receives from a test stack is held to the OpenAPI
 * document the stack serves (built here from the same route table, as GET /openapi.json is). The
 * answer's status must be one its operation declares, and a JSON body must validate against the
 * schema declared for that status (OpenAPI 3.1: JSON Schema 2020-12). Server-sent events and file
 * content are not JSON: their status is checked, not their bytes. Paths outside the document
 * (WebDAV, Git, MCP, the sites front, unknown paths) are not checked. An error answer's
 * `error.code` must be one its response lists (`x-svc-error-codes`: the codes of the operation's
 * kind and its route's `errors`), as its status must be one the operation declares.
 *
 * Cheap per suite: the document is built once per build of packages/api (cached in the temp
 * directory under a hash of its dist/), each suite reads it and compiles only the schemas of the
 * answers it gets, when it first gets them.
 *
 * SVC_CONTRACT_CHECK: `fail` (default) fails the test that received a mismatch, `report` only logs
 * it, `off` checks nothing. SVC_CONTRACT_CODES_FILE: a file that each error code answered but not
 * listed is appended to as a line of JSON (`{"id","status","code"}`), to collect a route's `errors`.
 */
export const CONTRACT_MODE = (process.env.SVC_CONTRACT_CHECK ?? 'fail') as 'fail' | 'report' | 'off';

interface Operation {
  id: string;
  method: string;
  path: string;
  re: RegExp;
  /** Literal segments first, for precedence (`/drive/upload` before `/drive/{id}`). */
  rank: string;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }>; 'x-svc-error-codes'?: string[] }>;
}

let operations: Operation[] | undefined;
let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction | null>();

const API_DIST = path.join(__dirname, '../../packages/api/dist');

/** A hash of packages/api's build (its files' names, sizes and times): the document changes only when it does. */
function buildHash(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        const st = fs.statSync(p);
        hash.update(`${path.relative(API_DIST, p)} ${st.size} ${st.mtimeMs}\n`);
      }
    }
  };
  walk(API_DIST);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The document's text, from the cache when this build already made it. References to components
 * point into the schema registered as `openapi`, so a response schema compiles on its own.
 */
function documentText(): string {
  const file = path.join(os.tmpdir(), 'svc-contract', `openapi-${buildHash()}.json`);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    const text = JSON.stringify(buildOpenApi(routes, { version: 'test' })).replaceAll('"#/components/', '"openapi#/components/');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file); // atomic: a suite running beside this one reads the whole file or none
    return text;
  }
}

function load(): Operation[] {
  if (operations) return operations;
  const doc = JSON.parse(documentText()) as { paths: Record<string, Record<string, any>>; components: unknown };
  ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema({ components: doc.components }, 'openapi');
  operations = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const segments = path.split('/').slice(1);
    const source = segments.map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    const rank = segments.map((s) => (s.startsWith('{') ? '1' : '0')).join('');
    for (const [method, op] of Object.entries(item)) {
      operations.push({ id: op.operationId, method, path, re: new RegExp(`^/${source}/?$`, 'i'), rank, responses: op.responses });
    }
  }
  operations.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  return operations;
}

/** Paths another front answers before the API, that an operation's path would match: the hosts' WebSocket. */
const OUTSIDE = [/^\/hosts\/connect\/?$/i];

/** The operation a request reaches (HEAD is a GET's; `/v1` and case do not matter), or undefined. */
export function operationFor(method: string, rawPath: string): Operation | undefined {
  let path = rawPath.split('?')[0]!;
  if (/^\/v1(\/|$)/i.test(path)) path = path.slice(3) || '/';
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  if (OUTSIDE.some((re) => re.test(path))) return undefined;
  return load().find((o) => o.method === m && o.re.test(path));
}

function validator(op: Operation, status: string): ValidateFunction | null {
  const key = `${op.method} ${op.path} ${status}`;
  if (validators.has(key)) return validators.get(key)!;
  const schema = op.responses[status]?.content?.['application/json']?.schema;
  const v = schema ? ajv!.compile(schema as object) : null;
  validators.set(key, v);
  return v;
}

export interface Observed {
  method: string;
  path: string;
  status: number;
  contentType: string;
  /** The answer's Retry-After (null: none); checked when given (undefined: not seen). */
  retryAfter?: string | null;
  /** The body's text when it is JSON (undefined: not read, e.g. a stream or bytes). */
  text?: string;
}

/** What is wrong with an answer (null: it keeps the contract, or is outside the document). */
export function contractProblem(a: Observed): string | null {
  const op = operationFor(a.method, a.path);
  if (!op) return null;
  const status = String(a.status);
  const where = `${a.method.toUpperCase()} ${a.path.split('?')[0]} (${op.id})`;
  if (!op.responses[status]) {
    return `${where} answered ${status}, which the operation does not declare (declared: ${Object.keys(op.responses).join(', ')})${a.text ? `: ${a.text.slice(0, 300)}` : ''}`;
  }
  // Every 503 says when to retry (docs/reliability.md, "Retries").
  if (a.status === 503 && a.retryAfter === null) return `${where} answered 503 without Retry-After${a.text ? `: ${a.text.slice(0, 300)}` : ''}`;
  if (a.text === undefined || a.method.toUpperCase() === 'HEAD' || !/^application\/json\b/i.test(a.contentType)) return null;
  const v = validator(op, status);
  if (!v) return null;
  let body: unknown;
  try {
    body = a.text === '' ? undefined : JSON.parse(a.text);
  } catch {
    return `${where} ${status}: the body is not JSON: ${a.text.slice(0, 200)}`;
  }
  if (v(body)) return unlistedCode(op, status, body, where, a.text);
  const e = v.errors![0]!;
  return `${where} ${status}: the body does not match its schema at ${e.instancePath || '/'} (${e.schemaPath}): ${e.message}${
    e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''
  }; body: ${a.text.slice(0, 300)}`;
}

/** An error answer (the Error body, not the operation's own) whose code its response does not list. */
function unlistedCode(op: Operation, status: string, body: unknown, where: string, text: string): string | null {
  const response = op.responses[status]!;
  if (!response.content?.['application/json']?.schema?.$ref?.endsWith('/Error')) return null;
  const code = (body as { error: { code: string } }).error.code;
  const listed = response['x-svc-error-codes'] ?? [];
  if (listed.includes(code)) return null;
  if (process.env.SVC_CONTRACT_CODES_FILE) fs.appendFileSync(process.env.SVC_CONTRACT_CODES_FILE, `${JSON.stringify({ id: op.id, status, code })}\n`);
  return `${where} answered ${status} ${code}, a code the operation does not list (listed: ${listed.join(', ') || 'none'}): ${text.slice(0, 300)}`;
}

// The hook: every fetch to a registered stack is checked -------------------------------------------------

const origins = new Set<string>();
const problems: string[] = [];
let installed = false;

/** Checks every answer fetched from `url` (a test stack's base URL) from now on. */
export function watchStack(url: string): void {
  if (CONTRACT_MODE === 'off') return;
  origins.add(new URL(url).origin);
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const res = await original(input, init);
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (!origins.has(url.origin)) return res;
    const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
    const contentType = res.headers.get('content-type') ?? '';
    const json = /^application\/json\b/i.test(contentType);
    const text = json && method.toUpperCase() !== 'HEAD' ? await res.clone().text() : undefined;
    const problem = contractProblem({
      method,
      path: url.pathname,
      status: res.status,
      contentType,
      text,
      retryAfter: res.headers.get('retry-after'),
    });
    if (problem) note(problem);
    return res;
  } as typeof fetch;
}

function note(problem: string): void {
  if (CONTRACT_MODE === 'report') process.stderr.write(`contract: ${problem}\n`);
  else problems.push(problem);
}

/** Throws with every mismatch seen since the last call (the hooks below call it after each test). */
export function assertContract(): void {
  if (!problems.length) return;
  const found = problems.splice(0);
  throw new Error(`answers that break the OpenAPI contract (test/support/contract.ts):\n- ${found.join('\n- ')}`);
}

if (typeof afterEach === 'function' && CONTRACT_MODE === 'fail') {
  afterEach(assertContract);
  afterAll(assertContract);
}
