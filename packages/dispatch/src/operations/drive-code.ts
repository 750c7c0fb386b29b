import { type RouteInput, runCodeJson } from '@svc/api';
import { mcpClient } from '@svc/clients';
import { DomainError } from '@svc/kit';
import type { mcp_run_code } from '@svc/proto';

import { type ContentDeps, download } from '../content.js';
import type { OperationContext, OperationHandler } from '../dispatcher.js';
import { runWithTools } from './code-mode.js';

/**
 * Runs code as the caller: by default a RunCode call to the mcp service, or RunCodeWithTools when
 * the caller brings tools (code mode); a test may pass its own.
 */
export type RunCodeFn = (
  req: mcp_run_code.RunCodeRequest,
  op: OperationContext,
  bounds?: { maxToolCalls?: number; maxConcurrentToolCalls?: number },
) => Promise<mcp_run_code.RunCodeResponse>;

/** The most bytes of drive files one run reads (its code and its data files together). */
export const RUN_DATA_MAX_BYTES = 8 * 1024 * 1024;
const RUN_DEADLINE_MS = 140_000;
/** Code that names the global `svc` (code mode's; docs/run-code.md "Calling tools"). */
const MENTIONS_SVC = /(^|[^\w$])svc\b/;

interface DataFile {
  id: string;
  name: string;
  contentType: string | null;
  size: number;
  /** The content as text (UTF-8), or null when it is not text (then `base64`). */
  text: string | null;
  base64?: string;
}

/** Reads drive files whole, as the caller (another account's file: 404), within a byte budget. */
async function readFiles(deps: ContentDeps, caller: { token: string; requestId: string }, ids: string[]): Promise<DataFile[]> {
  let budget = RUN_DATA_MAX_BYTES;
  const out: DataFile[] = [];
  for (const id of ids) {
    const d = await download(deps, caller, { id, headOnly: false });
    const item = d.header.item!;
    if (item.kind !== 'file') {
      d.cancel();
      throw new DomainError('conflict', 'not_a_file', `${id} is a folder; a run reads files.`);
    }
    budget -= item.size;
    if (budget < 0) {
      d.cancel();
      throw new DomainError('too_large', 'run_data_too_large', `The files of a run may hold at most ${RUN_DATA_MAX_BYTES} bytes together.`);
    }
    const chunks: Buffer[] = [];
    if (d.body) for await (const c of d.body) chunks.push(Buffer.from(c)); // a lent chunk: copied
    const bytes = Buffer.concat(chunks);
    let text: string | null = null;
    try {
      text = bytes.includes(0) ? null : new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = null;
    }
    out.push({
      id: item.id,
      name: item.name,
      contentType: item.contentType ?? null,
      size: item.size,
      text,
      ...(text === null ? { base64: bytes.toString('base64') } : {}),
    });
  }
  return out;
}

/**
 * Runs with drive content: `code.runFile` runs a JavaScript file of the drive; `code.runWithData`
 * runs the code sent. Both may pass `input` (any JSON, the global `input`) and drive files as
 * read-only data (the global `files`: id, name, contentType, size, text or base64). The files are
 * read as the caller, so another account's file is not found.
 */
/** The body of code.run, code.runFile and code.runWithData as their schemas parse it (@svc/api, routes/mcp/run-code.ts). */
interface CodeBody {
  code: string;
  fileId: string;
  dataFileIds?: string[];
  input?: unknown;
  timeoutMs?: number;
  memoryLimitMb?: number;
  maxOutputBytes?: number;
  maxToolCalls?: number;
  maxConcurrentToolCalls?: number;
}
const bodyOf = (input: RouteInput) => input.body as CodeBody;

export function driveCodeOperations(deps: ContentDeps & { runCode?: RunCodeFn }): Record<string, OperationHandler> {
  // A script whose caller brings tools runs in code mode (its calls come back here); else RunCode.
  const runCode =
    deps.runCode ??
    (async (req: mcp_run_code.RunCodeRequest, op: OperationContext, bounds: { maxToolCalls?: number; maxConcurrentToolCalls?: number } = {}) => {
      // Only code that names `svc` can call tools: the rest runs as before, without the catalogue's helpers.
      const tools = MENTIONS_SVC.test(req.code) ? await op.scriptTools() : undefined;
      if (tools) return runWithTools(deps.registry, req, op, tools, bounds, RUN_DEADLINE_MS);
      return mcpClient(deps.registry).runCode(req, {
        principalToken: op.auth!.token,
        requestId: op.requestId,
        deadlineMs: RUN_DEADLINE_MS,
        signal: op.signal,
      });
    });
  const limitsOf = (input: RouteInput) => ({
    timeoutMs: bodyOf(input).timeoutMs,
    memoryLimitMb: bodyOf(input).memoryLimitMb,
    maxOutputBytes: bodyOf(input).maxOutputBytes,
  });
  const boundsOf = (input: RouteInput) => ({
    maxToolCalls: bodyOf(input).maxToolCalls,
    maxConcurrentToolCalls: bodyOf(input).maxConcurrentToolCalls,
  });
  const runWith = async (code: string, input: RouteInput, data: DataFile[], op: OperationContext) => {
    const globals = JSON.stringify({ input: bodyOf(input).input ?? null, files: data });
    const res = await runCode({ code, ...limitsOf(input), globalsJson: globals, checkOnly: false }, op, boundsOf(input));
    return runCodeJson(res);
  };

  const run: OperationHandler = async (input, ctx) =>
    runCodeJson(await runCode({ code: bodyOf(input).code, ...limitsOf(input), checkOnly: false }, ctx, boundsOf(input)));

  const runFile: OperationHandler = async (input, ctx) => {
    const caller = { token: ctx.auth!.token, requestId: ctx.requestId };
    const [script] = await readFiles(deps, caller, [bodyOf(input).fileId]);
    if (script!.text === null) throw new DomainError('invalid_argument', 'not_text', 'The file is not UTF-8 text.');
    if (script!.text.length > 512 * 1024) throw new DomainError('too_large', 'code_too_large', 'The file holds more than 512 KiB of code.');
    const data = await readFiles(deps, caller, bodyOf(input).dataFileIds ?? []);
    return runWith(script!.text, input, data, ctx);
  };

  const runWithData: OperationHandler = async (input, ctx) => {
    const caller = { token: ctx.auth!.token, requestId: ctx.requestId };
    const data = await readFiles(deps, caller, bodyOf(input).dataFileIds ?? []);
    return runWith(bodyOf(input).code, input, data, ctx);
  };

  return { 'code.run': run, 'code.runFile': runFile, 'code.runWithData': runWithData };
}
