import type { Content } from '@svc/api';
import type { Answer, Dispatcher, Download, RawInput, ScriptTools } from '@svc/dispatch';
import { DomainError, type Principal } from '@svc/kit';

import type { ToolBinding, ToolCatalogue } from './catalogue.js';
import { CALL_TOOL, SEARCH_TOOLS } from './names.js';
import { searchTools } from './search.js';
import { allows, EVERY_TOOL_VIEW, type ToolView, withAllowList } from './views.js';

/** Who calls a tool: the principal as a front verified it (with its signed token), and the request's id. */
export interface ToolContext {
  auth?: { principal: Principal; token: string };
  requestId: string;
  /** Told of a failure that is not the caller's (it answers as `internal_error`). */
  onInternalError?: (err: unknown) => void;
  /** What the caller may see and call (read-only mode, an agent's tool list); absent: every tool. */
  view?: ToolView;
  /** The caller gives up: passed to the operation (Invocation.signal). */
  signal?: AbortSignal;
  /**
   * The front metered this call's request already (MCP meters each message by its tool's class):
   * the dispatcher draws no rate-limit token for it (Invocation.metered). A script's calls are not
   * the front's request: each takes a token of its operation's class, as the same call made
   * directly would.
   */
  metered?: boolean;
  /** This call comes from a script (code mode; `metered` is false for it): under no idempotency key. */
  fromScript?: boolean;
  /**
   * The client's idempotency key for this call (MCP: `params._meta["io.svc/idempotency-key"]` of a
   * tools/call; docs/mcp.md): a POST operation's answer is recorded and replayed for it. Not for a
   * script's calls.
   */
  idempotencyKey?: string;
}

/** A tool's result: the operation's answer, or (isError) the contract's error body `{ error: { code, message, requestId } }`. */
export interface ToolResult {
  structuredContent: Record<string, unknown>;
  isError: boolean;
}

/** The most bytes a tool reads or writes as file content (larger files: read a range; write through the API). */
export const MAX_TOOL_CONTENT_BYTES = 4 * 1024 * 1024;

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

const invalid = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

/** The operations that run a script (run_code and the drive's code tools): their scripts may call tools, but not these. */
export const SCRIPT_OPERATIONS: ReadonlySet<string> = new Set(['code.run', 'code.runFile', 'code.runWithData']);

/**
 * The tools a script may call on behalf of `ctx`'s caller (code mode, docs/run-code.md "Calling
 * tools"): what the caller's view allows (read-only mode, an agent's tool list, a token's
 * toolsets), less the tools that run scripts (a script does not start another: each would hold a
 * sandbox process while waiting for the next) and call_tool (svc.call does what it does). Each
 * call goes through callTool as the caller: the dispatcher's principal, authority and tenancy
 * rules, the view again, and the caller's rate limit (the dispatcher's, per call).
 */
export function scriptTools(dispatcher: Dispatcher, catalogue: ToolCatalogue, ctx: ToolContext): ScriptTools {
  const view = withAllowList(ctx.view ?? EVERY_TOOL_VIEW, (name) => !scriptRunning(catalogue, name), 'script');
  return {
    names: catalogue
      .list()
      .filter((t) => t.name !== CALL_TOOL && allows(view, t))
      .map((t) => t.name),
    async call(name, args, signal) {
      const inner = name === CALL_TOOL && isPlainObject(args) ? args.name : name;
      if (typeof inner === 'string' && scriptRunning(catalogue, inner)) {
        const refused = new DomainError('forbidden', 'tool_not_allowed', `${inner} runs a script, and a script does not start another.`);
        return { result: toolError(refused, ctx).structuredContent, isError: true };
      }
      const r = await callTool(dispatcher, catalogue, name, args, { ...ctx, view, signal, fromScript: true, metered: false });
      return { result: r.structuredContent, isError: r.isError };
    },
  };
}

const scriptRunning = (catalogue: ToolCatalogue, name: string) => {
  const b = catalogue.binding(name);
  return b !== undefined && SCRIPT_OPERATIONS.has(b.route.id);
};

/** A tool the caller's view does not allow: read-only mode (a tool with effects), or a list (an agent's, a token's scopes) that leaves it out. */
export function refusedByView(view: ToolView, name: string): DomainError {
  if (view.allowed && !view.allowed(name)) {
    return new DomainError('forbidden', 'tool_not_allowed', view.refusal?.(name) ?? `This connection's tool list does not include ${name}.`);
  }
  return new DomainError('forbidden', 'read_only_mode', `${name} changes things, and this connection is read-only (readonly=true).`);
}

/** The contract's error body of a failure, as a tool result. */
export function toolError(err: unknown, ctx: Pick<ToolContext, 'requestId' | 'onInternalError'>): ToolResult {
  // A DomainError's message is public (the HTTP API shows it as is); anything else is not.
  if (!(err instanceof DomainError) || err.httpStatus >= 500) ctx.onInternalError?.(err);
  const e = err instanceof DomainError ? err : new DomainError('internal', 'internal_error', 'Internal error.');
  // A refusal replayed under an idempotency key names the request that first answered it.
  const body: Record<string, unknown> = { code: e.code, message: e.message, requestId: e.requestId ?? ctx.requestId };
  if (e.details && Object.keys(e.details).length) body.details = e.details;
  return { structuredContent: { error: body }, isError: true };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The operation's input from a tool's arguments: each argument to the part of the request it belongs to. */
export function rawInputOf(b: ToolBinding, args: Record<string, unknown>): RawInput {
  const a = b.args;
  const params: Record<string, unknown> = {};
  const query: Record<string, unknown> = {};
  const headers: Record<string, unknown> = {};
  let body: Record<string, unknown> | undefined;
  let wholeBody: unknown;
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined) continue;
    if (a.params.has(key)) params[a.params.get(key)!] = value;
    else if (a.query.has(key)) query[a.query.get(key)!] = value;
    else if (a.headers.has(key)) headers[a.headers.get(key)!] = value;
    else if (a.body.has(key)) (body ??= {})[a.body.get(key)!] = value;
    else if (a.wholeBody && key === 'body') wholeBody = value;
    else if (!((a.content && (key === 'content' || key === 'encoding' || key === 'contentType')) || (a.bytes && key === 'encoding'))) {
      throw invalid(`arguments.${key}: ${b.def.name} takes no such argument.`);
    }
  }
  for (const p of a.params.values()) {
    // Path parameters are text in a URL; a number or an object here is a mistake to name, not coerce.
    if (params[p] === undefined) throw invalid(`arguments.${p}: is required.`);
    if (typeof params[p] !== 'string') throw invalid(`arguments.${p}: must be a string.`);
  }
  const raw: RawInput = { params, query, headers };
  // An operation with a body gets one (an empty object when no field was given, as a client would send `{}`).
  if (b.route.body) raw.body = a.wholeBody ? wholeBody : (body ?? {});
  if (a.content) raw.content = contentOf(args);
  return raw;
}

/** The `content` argument (text or base64) as the bytes of the operation's body. */
function contentOf(args: Record<string, unknown>): () => Promise<Content> {
  const { content, encoding = 'utf8', contentType } = args;
  if (typeof content !== 'string') throw invalid('arguments.content: must be a string (text, or base64 with encoding "base64").');
  if (encoding !== 'utf8' && encoding !== 'base64') throw invalid('arguments.encoding: must be "utf8" or "base64".');
  if (contentType !== undefined && (typeof contentType !== 'string' || contentType.length > 200 || /[\r\n\0]/.test(contentType))) {
    throw invalid('arguments.contentType: must be a media type (at most 200 characters).');
  }
  let bytes: Buffer;
  if (encoding === 'base64') {
    const compact = content.replace(/\s+/g, '');
    if (compact.length % 4 !== 0 || !BASE64_RE.test(compact)) throw invalid('arguments.content: is not valid base64.');
    bytes = Buffer.from(compact, 'base64');
  } else bytes = Buffer.from(content, 'utf8');
  if (bytes.length > MAX_TOOL_CONTENT_BYTES) {
    throw new DomainError(
      'too_large',
      'payload_too_large',
      `A tool writes at most ${MAX_TOOL_CONTENT_BYTES} bytes of content; use the HTTP API for larger files.`,
    );
  }
  const base = typeof contentType === 'string' ? contentType.split(';')[0]!.trim().toLowerCase() : '';
  const type = base && base !== 'application/octet-stream' ? (contentType as string) : undefined;
  return async () => ({
    stream: (async function* () {
      if (bytes.length) yield bytes;
    })(),
    type,
    length: bytes.length,
    fields: {},
  });
}

/** Reads a download whole (it is capped), closing it early when it goes over. */
async function readAll(d: Download): Promise<Buffer> {
  if (!d.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const c of d.body) {
      size += c.length;
      if (size > MAX_TOOL_CONTENT_BYTES) {
        throw new DomainError(
          'too_large',
          'content_too_large',
          `The file is larger than a tool reads at once (${MAX_TOOL_CONTENT_BYTES} bytes): ask for a range (range: "bytes=0-1048575").`,
        );
      }
      chunks.push(Buffer.from(c)); // a lent chunk (Download.body): copied
    }
  } finally {
    if (size > MAX_TOOL_CONTENT_BYTES) d.cancel();
  }
  return Buffer.concat(chunks);
}

/** A file's content as the tool's structured result. */
async function fileResult(d: Download, encoding: unknown): Promise<Record<string, unknown>> {
  const h = d.header;
  const item = h.item!;
  if (h.rangeNotSatisfiable) {
    d.cancel();
    throw new DomainError('invalid_argument', 'range_not_satisfiable', `The range is outside the content (${item.size} bytes).`, { size: item.size });
  }
  const bytes = h.notModified ? Buffer.alloc(0) : await readAll(d);
  let enc: 'utf8' | 'base64';
  if (encoding === 'base64' || encoding === 'utf8') enc = encoding;
  else if (encoding === undefined) enc = isUtf8Text(bytes) ? 'utf8' : 'base64';
  else throw invalid('arguments.encoding: must be "utf8" or "base64".');
  if (enc === 'utf8' && !isUtf8Text(bytes)) throw invalid('The content is not UTF-8 text: read it with encoding "base64".');
  return {
    id: item.id,
    name: item.name,
    contentType: item.contentType ?? null,
    size: item.size,
    etag: item.etag,
    encoding: enc,
    content: bytes.toString(enc),
    range: h.partial ? { start: h.start, end: h.end } : null,
    notModified: h.notModified,
  };
}

const isUtf8Text = (b: Buffer) => !b.includes(0) && Buffer.from(b.toString('utf8'), 'utf8').equals(b);

async function resultOf(b: ToolBinding, answer: Answer, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (answer.kind === 'content') return fileResult(answer.download, args.encoding);
  if (answer.kind === 'events') throw new DomainError('internal', 'internal_error', 'Internal error.');
  const body = answer.text !== undefined && answer.body === undefined ? JSON.parse(answer.text) : answer.body;
  if (b.wrapped || !isPlainObject(body)) return { result: body ?? null };
  return body;
}

/**
 * Calls a tool as the caller: its operation through the dispatcher (the same principal rules,
 * validation, tenancy and errors as the HTTP API), search_tools, or call_tool. A bad call (an
 * unknown tool, wrong arguments, a refusal) is a tool error with the contract's code and message;
 * this never throws.
 */
export async function callTool(dispatcher: Dispatcher, catalogue: ToolCatalogue, name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
  try {
    if (args !== undefined && args !== null && !isPlainObject(args)) throw invalid('arguments: must be an object.');
    const given = (args ?? {}) as Record<string, unknown>;
    if (name === SEARCH_TOOLS) return { structuredContent: searchTools(catalogue, given, ctx.view), isError: false };
    if (name === CALL_TOOL) {
      const inner = given.name;
      for (const key of Object.keys(given))
        if (key !== 'name' && key !== 'arguments') throw invalid(`arguments.${key}: call_tool takes no such argument.`);
      if (typeof inner !== 'string') throw invalid('arguments.name: the name of the tool to call is required.');
      if (inner === CALL_TOOL) throw invalid('arguments.name: call_tool does not call itself.');
      return callTool(dispatcher, catalogue, inner, given.arguments, ctx);
    }
    const b = catalogue.binding(name);
    if (!b) throw new DomainError('not_found', 'unknown_tool', `There is no tool ${JSON.stringify(name.slice(0, 200))}; search_tools finds tools.`);
    if (ctx.view && !allows(ctx.view, b.def)) throw refusedByView(ctx.view, name);
    // A script this tool runs may call tools as this caller (code mode), within this caller's view.
    const tools = SCRIPT_OPERATIONS.has(b.route.id) && ctx.auth ? scriptTools(dispatcher, catalogue, ctx) : undefined;
    const key = ctx.fromScript ? undefined : ctx.idempotencyKey;
    const answer = await dispatcher.invoke(b.route, rawInputOf(b, given), {
      requestId: ctx.requestId,
      auth: ctx.auth,
      signal: ctx.signal,
      tools,
      // The request a key names is the operation and its input, as the API's (the same call through call_tool is the same).
      idempotency: key === undefined ? undefined : { key },
      metered: ctx.metered,
      // Read-only mode holds at the dispatcher too (the view's check above names the tool).
      readOnly: ctx.view?.readOnly,
    });
    return { structuredContent: await resultOf(b, answer, given), isError: false };
  } catch (err) {
    return toolError(err, ctx);
  }
}
