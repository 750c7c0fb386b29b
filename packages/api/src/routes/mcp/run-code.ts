import { z } from 'zod';

import type { mcp_run_code } from '@svc/proto';
import { RUN_ERROR_CODES, RUN_LIMIT_BOUNDS } from '@svc/quickjs/contract';

import { Nullable, route } from '../../route.js';

/**
 * run_code over HTTP (docs/run-code.md): JavaScript in the sandbox of the mcp service, QuickJS in
 * WebAssembly in a child process that is killed when a run passes its limits. A script's own
 * failure (a syntax error, an exception, a limit) is a 200 answer with `error`; a request the
 * service refuses (a limit above the operator's maximum, every sandbox busy) is an error answer.
 */

/** The widest bounds of the sandbox (the contract's, which it enforces); the operator's maxima may be lower. */
const BOUNDS = {
  timeoutMs: RUN_LIMIT_BOUNDS.timeoutMs.max,
  memoryLimitMb: RUN_LIMIT_BOUNDS.memoryLimitMb.max,
  maxOutputBytes: RUN_LIMIT_BOUNDS.maxOutputBytes.max,
  codeChars: 512 * 1024,
} as const;

/** How long the gateway waits for an answer: the longest run, a wait in the queue, and the kill. */
const RUN_CODE_DEADLINE_MS = BOUNDS.timeoutMs + 20_000;

const RunCodeBody = z
  .object({
    code: z
      .string()
      .min(1)
      .max(BOUNDS.codeChars)
      .describe(
        'JavaScript. The result is the value of the last expression statement; code with `export` runs as a module (the result is ' +
          '`export default`, top-level `await` allowed); code with a top-level `return` runs as the body of an async function.',
      ),
    timeoutMs: z
      .number()
      .int()
      .min(RUN_LIMIT_BOUNDS.timeoutMs.min)
      .max(BOUNDS.timeoutMs)
      .optional()
      .describe("Wall-clock limit in ms (default 5000; at most the operator's maximum, 30000 unless set)."),
    memoryLimitMb: z
      .number()
      .int()
      .min(RUN_LIMIT_BOUNDS.memoryLimitMb.min)
      .max(BOUNDS.memoryLimitMb)
      .optional()
      .describe("Memory of the interpreter in MiB (default 64, at least 16; at most the operator's maximum, 256 unless set)."),
    maxOutputBytes: z
      .number()
      .int()
      .min(RUN_LIMIT_BOUNDS.maxOutputBytes.min)
      .max(BOUNDS.maxOutputBytes)
      .optional()
      .describe(
        "Bytes of console output and result JSON together, each console entry counting its text plus 32 (default 65536; at most the operator's maximum, 1 MiB unless set).",
      ),
    maxToolCalls: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe(
        "The most tool calls the script may make with svc.call (code mode; default and most the operator's maximum, 100 unless set); past it a call fails with tool_call_limit.",
      ),
    maxConcurrentToolCalls: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe(
        "How many of the script's tool calls may be in flight at once; the rest wait their turn (default and most the operator's maximum, 4 unless set).",
      ),
  })
  .strict()
  .meta({ id: 'RunCodeRequest' });

const RunCodeLimits = z.object({ timeoutMs: z.number().int(), memoryLimitMb: z.number().int(), maxOutputBytes: z.number().int() });

const RunCodeResult = z
  .object({
    result: z.unknown().describe('The result as JSON (null when the run failed, and for undefined); BigInt values become strings.'),
    logs: z
      .array(z.object({ level: z.enum(['log', 'info', 'warn', 'error', 'debug']), message: z.string() }))
      .describe('The console calls, in order, each with its arguments formatted and joined by spaces.'),
    logsTruncated: z.boolean().describe('Console output past the output limit was left out.'),
    error: Nullable(
      z.object({
        code: z.enum(RUN_ERROR_CODES),
        message: z.string(),
        name: z.string().optional().describe("The error's name inside the script (TypeError, SyntaxError, ...)."),
        line: z.number().int().optional().describe('1-based line in the code.'),
        column: z.number().int().optional(),
        stack: z.string().optional().describe("The script's own stack frames (script.js:line:column)."),
      }),
    ).describe('Why the run failed; null when it succeeded.'),
    mode: z.enum(['script', 'module', 'function']).describe('How the code was run.'),
    durationMs: z.number().describe('How long the script ran.'),
    queuedMs: z.number().describe('How long the call waited for a free sandbox.'),
    limits: RunCodeLimits.describe('The limits the run had.'),
    toolCalls: z.number().int().describe('Tool calls the script made (svc.call, code mode).'),
  })
  .meta({ id: 'RunCodeResult' });

/** A run as the API shows it. */
export const runCodeJson = (r: mcp_run_code.RunCodeResponse) => ({
  result: r.resultJson === undefined ? null : (JSON.parse(r.resultJson) as unknown),
  logs: r.logs.map((l) => ({ level: l.level as 'log', message: l.message })),
  logsTruncated: r.logsTruncated,
  error: r.error
    ? {
        code: r.error.code as (typeof RUN_ERROR_CODES)[number],
        message: r.error.message,
        ...(r.error.name !== undefined ? { name: r.error.name } : {}),
        ...(r.error.line !== undefined ? { line: r.error.line } : {}),
        ...(r.error.column !== undefined ? { column: r.error.column } : {}),
        ...(r.error.stack !== undefined ? { stack: r.error.stack } : {}),
      }
    : null,
  mode: r.mode as 'script',
  durationMs: r.durationMs,
  queuedMs: r.queuedMs,
  limits: { timeoutMs: r.limits?.timeoutMs ?? 0, memoryLimitMb: r.limits?.memoryLimitMb ?? 0, maxOutputBytes: r.limits?.maxOutputBytes ?? 0 },
  toolCalls: r.toolCalls,
});

const FileId = z.string().regex(/^file_[0-9a-z]{26}$/, 'must be a file id (file_…)');
const Limits = RunCodeBody.pick({
  timeoutMs: true,
  memoryLimitMb: true,
  maxOutputBytes: true,
  maxToolCalls: true,
  maxConcurrentToolCalls: true,
}).shape;
const DataInputs = {
  input: z.unknown().optional().describe('Any JSON: the script reads it as the global `input` (null when absent).'),
  dataFileIds: z
    .array(FileId)
    .max(20)
    .optional()
    .describe(
      'Drive files passed read-only as the global `files`: an array of {id, name, contentType, size, text} (text null and base64 set for binary files); 8 MiB together.',
    ),
};

export const codeRoutes = [
  route({
    id: 'code.run',
    method: 'post',
    effect: 'creates',
    path: '/code/run',
    summary:
      'Run JavaScript in a sandbox (QuickJS in WebAssembly, in a process of its own): no network, no files, no host objects. ' +
      'The script may call the platform’s tools as you (code mode: `await svc.call(name, args)` or `svc.tools.<name>(args)`), ' +
      'under the rules of a direct call. Answers the result as JSON, the console output and, when the run failed, an error with its code and line.',
    errors: ['concurrency_limit', 'invalid_limit', 'sandbox_busy'],
    tag: 'code',
    body: RunCodeBody,
    response: RunCodeResult,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'code.run' },
  }),
  route({
    id: 'code.check',
    method: 'post',
    effect: 'reads',
    path: '/code/check',
    summary:
      'Check JavaScript’s syntax without running it: whether it compiles (as a script, a module or a function body, as code.run would run it), ' +
      'and the syntax error with its line and column when not.',
    tag: 'code',
    body: z.object({ code: RunCodeBody.shape.code }).strict().meta({ id: 'CheckCodeRequest' }),
    response: z
      .object({
        valid: z.boolean(),
        mode: z.enum(['script', 'module', 'function']).describe('How code.run would run it.'),
        error: RunCodeResult.shape.error,
      })
      .meta({ id: 'CheckCodeResult' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'mcp.runCode',
      request: (i) => ({ code: i.body.code, checkOnly: true, timeoutMs: 5000 }),
      response: (res) => {
        const r = runCodeJson(res);
        return { valid: r.error === null, mode: r.mode, error: r.error };
      },
      deadlineMs: RUN_CODE_DEADLINE_MS,
    },
  }),
  route({
    id: 'code.runFile',
    method: 'post',
    effect: 'creates',
    path: '/code/run-file',
    summary:
      'Run a JavaScript file of the drive in the sandbox (as code.run runs code), with optional `input` JSON and drive files as read-only data; ' +
      'the answer is code.run’s.',
    errors: ['item_not_found'],
    tag: 'code',
    body: z
      .object({ fileId: FileId.describe('The script: a UTF-8 text file of at most 512 KiB.'), ...DataInputs, ...Limits })
      .strict()
      .meta({ id: 'RunFileRequest' }),
    bodyLimit: '10mb',
    response: RunCodeResult,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'code.runFile' },
  }),
  route({
    id: 'code.runWithData',
    method: 'post',
    effect: 'creates',
    path: '/code/run-with-data',
    summary:
      'Run JavaScript over data: `input` (any JSON, the global `input`) and drive files read as the caller (the global `files`), ' +
      'to compute over documents without copying them into the code. The answer is code.run’s.',
    errors: ['item_not_found'],
    tag: 'code',
    body: z
      .object({ code: RunCodeBody.shape.code, ...DataInputs, ...Limits })
      .strict()
      .refine((b) => b.input !== undefined || (b.dataFileIds?.length ?? 0) > 0, 'name input or dataFileIds (without data, use code.run)')
      .meta({ id: 'RunWithDataRequest' }),
    bodyLimit: '10mb',
    response: RunCodeResult,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'code.runWithData' },
  }),
];
