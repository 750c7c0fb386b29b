export {
  checkMaxLimits,
  DEFAULT_LIMITS,
  DEFAULT_MAX_LIMITS,
  LIMIT_BOUNDS,
  LimitError,
  resolveLimits,
  type RunLimits,
  STACK_SIZE_BYTES,
} from './limits.js';
export { Sandbox } from './pool.js';
export { MAX_TOOL_ANSWER_CHARS, type RunTools } from './pool-tools.js';
export {
  type RunRequest,
  type RunResult,
  SandboxAbortedError,
  SandboxBusyError,
  SandboxClosedError,
  type SandboxEvent,
  type SandboxOptions,
} from './pool-types.js';
export {
  LOG_LEVELS,
  type LogEntry,
  type LogLevel,
  RUN_ERROR_CODES,
  type RunError,
  type RunErrorCode,
  type RunMode,
  type RunOutcome,
} from './protocol.js';
export { MAX_TOOL_ARGS_CHARS, type ToolLimits } from './tool-calls.js';
