/**
 * What the sandbox promises in the public contract (docs/run-code.md): the codes a run's failure is
 * reported with, and the bounds no limit can pass. The sandbox reports and enforces them and the
 * route table (@svc/api) advertises them: one list for both. This module imports nothing, so the
 * route table loads it alone (`@svc/quickjs/contract`), without QuickJS or the pool.
 */

/**
 * Why a run failed. `syntax_error` and `script_error` are the script's own; the limit codes say
 * which limit ended it; `sandbox_error` is a failure of the sandbox itself (its process died).
 */
export const RUN_ERROR_CODES = [
  'syntax_error',
  'script_error',
  'timeout',
  'memory_limit',
  'stack_overflow',
  'output_limit',
  'result_not_serializable',
  'unsettled_promise',
  'sandbox_error',
] as const;
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

/** Bounds no setting or request can pass: what the sandbox's pool and its children are built for. */
export const RUN_LIMIT_BOUNDS = Object.freeze({
  timeoutMs: { min: 1, max: 120_000 },
  // The interpreter's memory starts at 16 MiB (its build's initial memory): no limit is below that.
  memoryLimitMb: { min: 16, max: 1024 },
  maxOutputBytes: { min: 1, max: 16 * 1024 * 1024 },
} as const);
