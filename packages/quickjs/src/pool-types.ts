/** The sandbox pool's requests, answers, options, events and errors (pool.ts). */
import type { RunLimits } from './limits.js';
import type { RunTools } from './pool-tools.js';
import type { RunOutcome } from './protocol.js';

/** A call to run code: the code and any limits the caller lowers. */
export interface RunRequest extends Partial<RunLimits> {
  code: string;
  /** A JSON object whose members become globals before the code runs (its inputs). */
  globalsJson?: string;
  /** Compile only: a syntax check (the result is null; a syntax error is the run's error). */
  checkOnly?: boolean;
  /**
   * Whose run it is (an account): waiting calls are served in turns between tenants, not in
   * arrival order (FairQueue). Calls without one share the tenant ''.
   */
  tenant?: string;
  /** Code mode: the script gets `svc` and may call these tools. */
  tools?: RunTools;
  /**
   * The caller gave up: a call still waiting leaves the queue, a running script's process is
   * killed (SIGKILL) and replaced; the call rejects with SandboxAbortedError either way.
   */
  signal?: AbortSignal;
}

/** A run's outcome with the limits it ran under and how long it waited for a process. */
export interface RunResult extends RunOutcome {
  limits: RunLimits;
  queuedMs: number;
}

export interface SandboxOptions {
  /** Warm child processes kept ready, each running one script at a time (default 2). */
  poolSize?: number;
  /** The operator's maxima; callers may ask for any limit up to them (default DEFAULT_MAX_LIMITS). */
  maxLimits?: Partial<RunLimits>;
  /** Calls that may wait for a free process; past it a call is refused as busy (default 32). */
  maxQueue?: number;
  /**
   * Processes one tenant's runs may hold at once (default: all of them). A tenant's call past it
   * waits even while a process is idle, so that the others always find one.
   */
  tenantShare?: number;
  /** How long a call may wait for a free process (default 10 s). */
  queueTimeoutMs?: number;
  /** Time past a run's own time limit before its process is killed (default 500 ms). */
  killGraceMs?: number;
  /**
   * Resident memory a busy process may add to its idle size, past twice the run's memory limit,
   * before it is killed (default 64 MiB).
   */
  rssHeadroomMb?: number;
  /** Runs after which a process is replaced by a fresh one (default 1000). */
  runsPerProcess?: number;
  /**
   * How much nicer than the service a child process runs (0–19, default 10): a run's CPU yields to
   * the requests the service's own thread serves, so one tenant's scripts cannot slow everyone's calls.
   */
  nice?: number;
  /** Told of processes that died on their own or failed to start. */
  onEvent?: (event: SandboxEvent) => void;
}

export type SandboxEvent =
  | { type: 'killed'; reason: 'timeout' | 'memory_limit'; pid: number }
  | { type: 'crashed'; pid: number; code: number | null; signal: string | null; stderr: string }
  | { type: 'spawn_failed'; error: string };

/** Every process is busy and the queue is full, or a call waited too long. */
export class SandboxBusyError extends Error {
  override name = 'SandboxBusyError';
  readonly code = 'sandbox_busy';
}

/** The caller aborted the run (RunRequest.signal): it was taken off the queue, or its process was killed. */
export class SandboxAbortedError extends Error {
  override name = 'SandboxAbortedError';
  readonly code = 'sandbox_aborted';
}

/** The pool is closed. */
export class SandboxClosedError extends Error {
  override name = 'SandboxClosedError';
  readonly code = 'sandbox_closed';
}
