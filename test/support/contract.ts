import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import { buildOpenApi, routes } from '@svc/api';

/**
 * The contract check: every answer a suite receives from a test stack is held to the OpenAPI
 * document the stack serves (built here from the same route table, as GET /openapi.json is). The
 * answer's status must be one its operation declares, and a JSON body must validate against the
 * schema declared for that status (OpenAPI 3.1: JSON Schema 2020-12). Server-sent events and file
 * content are not JSON: their status is checked, not their bytes. Paths outside the document
 * (WebDAV, Git, MCP, the sites front, unknown paths) are not checked.
 *
 * SVC_CONTRACT_CHECK: `fail` (default) fails the test that received a mismatch, `report` only logs
 * it, `off` checks nothing.
 */
export const CONTRACT_MODE = (process.env.SVC_CONTRACT_CHECK ?? 'fail') as 'fail' | 'report' | 'off';

interface Operation {
  id: string;
  method: string;
  path: string;
  re: RegExp;
  /** Literal segments first, for precedence (`/drive/upload` before `/drive/{id}`). */
  rank: string;
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

let doc: Record<string, any> | undefined;
let operations: Operation[] | undefined;
let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction | null>();

function load(): Operation[] {
  if (operations) return operations;
  doc = buildOpenApi(routes, { version: 'test' });
  ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi');
  operations = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
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

/** The operation a request reaches (HEAD is a GET's; `/v1` and case do not matter), or undefined. */
export function operationFor(method: string, rawPath: string): Operation | undefined {
  let path = rawPath.split('?')[0]!;
  if (/^\/v1(\/|$)/i.test(path)) path = path.slice(3) || '/';
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  return load().find((o) => o.method === m && o.re.test(path));
}

const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function validator(op: Operation, status: string): ValidateFunction | null {
  const key = `${op.method} ${op.path} ${status}`;
  if (validators.has(key)) return validators.get(key)!;
  let v: ValidateFunction | null = null;
  if (op.responses[status]?.content?.['application/json']?.schema) {
    const ref = `openapi#/paths/${pointer(op.path)}/${op.method}/responses/${status}/content/application~1json/schema`;
    v = ajv!.compile({ $ref: ref });
  }
  validators.set(key, v);
  return v;
}

export interface Observed {
  method: string;
  path: string;
  status: number;
  contentType: string;
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
  if (a.text === undefined || a.method.toUpperCase() === 'HEAD' || !/^application\/json\b/i.test(a.contentType)) return null;
  const v = validator(op, status);
  if (!v) return null;
  let body: unknown;
  try {
    body = a.text === '' ? undefined : JSON.parse(a.text);
  } catch {
    return `${where} ${status}: the body is not JSON: ${a.text.slice(0, 200)}`;
  }
  if (v(body)) return null;
  const e = v.errors![0]!;
  return `${where} ${status}: the body does not match its schema at ${e.instancePath || '/'} (${e.schemaPath}): ${e.message}${
    e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''
  }; body: ${a.text.slice(0, 300)}`;
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
    const problem = contractProblem({ method, path: url.pathname, status: res.status, contentType, text });
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
