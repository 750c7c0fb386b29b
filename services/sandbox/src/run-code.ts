import { AccountLimiter, callAborted, type CallContext, DomainError, type Handlers, type Logger, setting } from '@svc/kit';
import type { mcp, mcp_run_code } from '@svc/proto';
import {
  LIMIT_BOUNDS,
  LimitError,
  type RunResult,
  Sandbox,
  SandboxAbortedError,
  SandboxBusyError,
  SandboxClosedError,
  type SandboxEvent,
} from '@svc/quickjs';

import { codeModeHandler, type RunWith } from './code-mode.js';

/**
 * run_code (docs/run-code.md): the mcp service runs JavaScript in @svc/quickjs's pool of QuickJS
 * processes. Its settings, declared with the module's and checked when the stack starts:
 * - SVC_MCP_RUN_CODE_POOL_SIZE: warm processes, each running one script at a time (default 2);
 * - SVC_MCP_RUN_CODE_MAX_QUEUE: calls that may wait for a process; past it 429 (default 32);
 * - SVC_MCP_RUN_CODE_ACCOUNT_SHARE: processes one account's runs may hold at once, even when others
 *   are idle, so that another account always finds one (default a quarter of the pool, at least 1);
 *   waiting calls are served in turns between accounts, not in arrival order;
 * - SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT: calls one account may have running and waiting at once on this
 *   replica; past it 429 `concurrency_limit` (default the share plus a quarter of the queue: 9); an
 *   agent may have half of it, rounded up;
 * - SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS, _MAX_MEMORY_MB, _MAX_OUTPUT_BYTES: the most a caller may ask
 *   for (defaults 30000 ms, 256 MiB, 1 MiB); a caller who asks for nothing gets 5000 ms, 64 MiB,
 *   64 KiB (or the maximum, when the operator set it lower);
 * - SVC_MCP_CODE_MODE_MAX_TOOL_CALLS, SVC_MCP_CODE_MODE_MAX_CONCURRENT: code mode's bounds, the most
 *   tool calls one run makes (default 100) and how many it has in flight at once (default 4); a
 *   caller may ask for less (code-mode.ts).
 */
export const runCodeSettings = {
  SVC_MCP_RUN_CODE_POOL_SIZE: setting.int(1, 2, 64),
  SVC_MCP_RUN_CODE_MAX_QUEUE: setting.int(0, 32, 10_000),
  SVC_MCP_RUN_CODE_ACCOUNT_SHARE: setting.optionalInt(1, 64),
  SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT: setting.optionalInt(1, 100_000),
  SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS: setting.int(LIMIT_BOUNDS.timeoutMs.min, 30_000, LIMIT_BOUNDS.timeoutMs.max),
  SVC_MCP_RUN_CODE_MAX_MEMORY_MB: setting.int(LIMIT_BOUNDS.memoryLimitMb.min, 256, LIMIT_BOUNDS.memoryLimitMb.max),
  SVC_MCP_RUN_CODE_MAX_OUTPUT_BYTES: setting.int(LIMIT_BOUNDS.maxOutputBytes.min, 1024 * 1024, LIMIT_BOUNDS.maxOutputBytes.max),
  SVC_MCP_CODE_MODE_MAX_TOOL_CALLS: setting.int(1, 100, 10_000),
  SVC_MCP_CODE_MODE_MAX_CONCURRENT: setting.int(1, 4, 64),
};

type Derived = 'SVC_MCP_RUN_CODE_ACCOUNT_SHARE' | 'SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT';
export type RunCodeEnv = { [K in Exclude<keyof typeof runCodeSettings, Derived>]: number } & { [K in Derived]?: number };

/**
 * An account's fair share (docs/run-code.md, "Fair shares"): the processes its runs may hold at once
 * (a quarter of the pool, at least 1, at most the pool), and the calls it may have in progress,
 * running and waiting (the share plus a quarter of the queue).
 */
export function accountShare(env: RunCodeEnv): { processes: number; calls: number } {
  const pool = env.SVC_MCP_RUN_CODE_POOL_SIZE;
  const processes = Math.min(pool, env.SVC_MCP_RUN_CODE_ACCOUNT_SHARE ?? Math.max(1, Math.floor(pool / 4)));
  return { processes, calls: env.SVC_MCP_RUN_CODE_MAX_PER_ACCOUNT ?? processes + Math.floor(env.SVC_MCP_RUN_CODE_MAX_QUEUE / 4) };
}

/** Longest code a call may send, in characters. */
export const MAX_CODE_CHARS = 512 * 1024;

type RunCodeHandler = (req: mcp_run_code.RunCodeRequest, ctx: CallContext) => Promise<mcp_run_code.RunCodeResponse>;

/** The sandbox pool of the mcp service, and its RunCode handler. */
export function runCode(env: RunCodeEnv, log: Logger, nice = 10) {
  const share = accountShare(env);
  const sandbox = new Sandbox({
    poolSize: env.SVC_MCP_RUN_CODE_POOL_SIZE,
    maxQueue: env.SVC_MCP_RUN_CODE_MAX_QUEUE,
    tenantShare: share.processes,
    nice,
    maxLimits: {
      timeoutMs: env.SVC_MCP_RUN_CODE_MAX_TIMEOUT_MS,
      memoryLimitMb: env.SVC_MCP_RUN_CODE_MAX_MEMORY_MB,
      maxOutputBytes: env.SVC_MCP_RUN_CODE_MAX_OUTPUT_BYTES,
    },
    onEvent: (e: SandboxEvent) => {
      if (e.type === 'killed') log.info({ sandbox: e }, 'a sandbox process was killed at its limit and is being replaced');
      else log.warn({ sandbox: e }, 'a sandbox process failed');
    },
  });
  // Fair shares (docs/run-code.md): an account's calls in progress here, running and waiting, are capped.
  const perAccount = new AccountLimiter({ name: 'run_code', what: 'code runs', perAccount: share.calls });
  const runWith: RunWith = async (req, ctx, extra = {}) => {
    if (req.code.length > MAX_CODE_CHARS) throw new DomainError('too_large', 'code_too_large', `code may be at most ${MAX_CODE_CHARS} characters.`);
    let r: RunResult;
    let release: (() => void) | undefined;
    try {
      if (req.globalsJson !== undefined) checkGlobals(req.globalsJson);
      release = perAccount.acquire(ctx.principal);
      r = await sandbox.run({
        tenant: ctx.principal.accountId,
        code: req.code,
        timeoutMs: req.timeoutMs,
        memoryLimitMb: req.memoryLimitMb,
        maxOutputBytes: req.maxOutputBytes,
        globalsJson: req.globalsJson,
        checkOnly: req.checkOnly,
        tools: extra.tools,
        // The caller gave up (a run's tool call aborted, docs/threads.md): the script's process is killed.
        signal: ctx.signal,
      });
    } catch (err) {
      throw domainError(err);
    } finally {
      release?.();
    }
    log.debug({ accountId: ctx.principal.accountId, mode: r.mode, error: r.error?.code, durationMs: r.durationMs }, 'code ran');
    return response(r);
  };
  const handler: RunCodeHandler = (req, ctx) => runWith(req, ctx);
  const withTools = codeModeHandler(runWith, {
    maxCalls: env.SVC_MCP_CODE_MODE_MAX_TOOL_CALLS,
    maxConcurrent: env.SVC_MCP_CODE_MODE_MAX_CONCURRENT,
  });
  return {
    sandbox,
    perAccount,
    handlers: { runCode: handler, runCodeWithTools: withTools } satisfies Partial<Handlers<typeof mcp.McpServiceService>>,
    /** Starts the pool in the background: a call that comes before a process is ready waits for it. */
    async start() {
      sandbox.start().catch((err: Error) => log.error({ err: err.message }, 'the code sandbox could not start a process'));
    },
    stop: () => sandbox.close(),
  };
}

/** The most JSON a run's inputs may hold, in characters. */
export const MAX_GLOBALS_CHARS = 8 * 1024 * 1024;

/** Inputs are a JSON object whose member names are identifiers (each becomes a global). */
function checkGlobals(json: string): void {
  if (json.length > MAX_GLOBALS_CHARS)
    throw new DomainError('too_large', 'inputs_too_large', `The inputs may be at most ${MAX_GLOBALS_CHARS} characters of JSON.`);
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_inputs', 'The inputs are not valid JSON.');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.keys(v).every((k) => /^[A-Za-z_$][\w$]*$/.test(k))) {
    throw new DomainError('invalid_argument', 'invalid_inputs', 'The inputs are a JSON object whose names are identifiers.');
  }
}

function domainError(err: unknown): unknown {
  if (err instanceof LimitError) return new DomainError('invalid_argument', 'invalid_limit', err.message, { field: err.field });
  if (err instanceof SandboxBusyError) return new DomainError('rate_limited', 'sandbox_busy', err.message, { retryAfterSeconds: 1 });
  if (err instanceof SandboxAbortedError) return callAborted(err);
  if (err instanceof SandboxClosedError)
    return new DomainError('unavailable', 'sandbox_unavailable', 'The code sandbox is shutting down; try again shortly.');
  return err;
}

export function response(r: RunResult): mcp_run_code.RunCodeResponse {
  return {
    resultJson: r.resultJson ?? undefined,
    logs: r.logs,
    logsTruncated: r.logsTruncated,
    error: r.error,
    mode: r.mode,
    durationMs: r.durationMs,
    queuedMs: r.queuedMs,
    limits: r.limits,
    toolCalls: r.toolCalls ?? 0,
  };
}
