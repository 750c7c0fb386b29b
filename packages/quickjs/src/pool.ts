import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';

import { FairQueue } from './fair-queue.js';
import { checkMaxLimits, DEFAULT_MAX_LIMITS, resolveLimits, type RunLimits } from './limits.js';
import { closeStatus, lowerPriority, permissionArgs, residentBytes } from './pool-process.js';
import { type RunTools, takeToolCall, type ToolCalls, toolCount } from './pool-tools.js';
import { type RunRequest, type RunResult, SandboxAbortedError, SandboxBusyError, SandboxClosedError, type SandboxOptions } from './pool-types.js';
import type { ChildMessage, ParentMessage, RunError } from './protocol.js';
import type { ToolCallOut } from './tool-calls.js';

const MIB = 1024 * 1024;
const RSS_POLL_MS = 20;
const START_TIMEOUT_MS = 15_000;
const STDERR_KEEP = 2048;

interface Job {
  id: number;
  tenant: string;
  code: string;
  globalsJson?: string;
  checkOnly?: boolean;
  limits: RunLimits;
  enqueued: number;
  resolve(r: RunResult): void;
  reject(e: Error): void;
  queueTimer?: NodeJS.Timeout;
  /** The caller's signal, and what this pool does when it aborts (removed once the job settles). */
  signal?: AbortSignal;
  onAbort?: () => void;
  tools?: RunTools;
  toolCalls?: ToolCalls;
}

interface Running {
  job: Job;
  started: number;
  wallTimer: NodeJS.Timeout;
  rssTimer?: NodeJS.Timeout;
  killedFor?: 'timeout' | 'memory_limit' | 'aborted';
}

class Worker {
  state: 'starting' | 'idle' | 'busy' | 'dead' = 'starting';
  idleRss = 0;
  runs = 0;
  /** Its next interpreter is ready (a run sent now starts at once). */
  fresh = false;
  running?: Running;
  stderr = '';
  /** Its /proc status file, open while it lives (read in one call at each poll of its memory). */
  statusFd?: number;
  constructor(readonly child: ChildProcess) {}
}

/** Where the child's code is: beside this file, in the build output. */
const CHILD = path.join(__dirname, 'child.js');

/**
 * A pool of warm child processes that run JavaScript in QuickJS (WebAssembly), one script per
 * process at a time. Inside, each run has its own interpreter with a small stack, a memory limit
 * and an interrupt deadline; outside, the pool kills a process with SIGKILL when a run passes its
 * wall-clock time or its resident-memory cap, and replaces any process that died.
 */
export class Sandbox {
  readonly maxLimits: RunLimits;
  private readonly poolSize: number;
  private readonly maxQueue: number;
  private readonly tenantShare: number;
  private readonly queueTimeoutMs: number;
  private readonly killGraceMs: number;
  private readonly rssHeadroom: number;
  private readonly runsPerProcess: number;
  private readonly workers = new Set<Worker>();
  private readonly queue = new FairQueue<Job>();
  /** Runs in progress per tenant, for the queue's turns. */
  private readonly running = new Map<string, number>();
  private readonly runningOf = (tenant: string) => this.running.get(tenant) ?? 0;
  private nextId = 1;
  private closed = false;
  private failures = 0;
  private readonly counters = { runs: 0, killed: 0, crashed: 0, spawned: 0, aborted: 0 };

  constructor(private readonly options: SandboxOptions = {}) {
    this.maxLimits = checkMaxLimits({ ...DEFAULT_MAX_LIMITS, ...options.maxLimits });
    this.poolSize = Math.max(1, options.poolSize ?? 2);
    this.maxQueue = Math.max(0, options.maxQueue ?? 32);
    this.tenantShare = Math.max(1, Math.min(this.poolSize, options.tenantShare ?? this.poolSize));
    this.queueTimeoutMs = options.queueTimeoutMs ?? 10_000;
    this.killGraceMs = options.killGraceMs ?? 500;
    this.rssHeadroom = (options.rssHeadroomMb ?? 64) * MIB;
    this.runsPerProcess = options.runsPerProcess ?? 1000;
  }

  /** Starts the pool's processes; resolves once one is ready (the rest come up in the background). */
  async start(): Promise<void> {
    if (this.closed) throw new SandboxClosedError('The sandbox is closed.');
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no sandbox process became ready')), START_TIMEOUT_MS);
      this.onReady = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    while (this.workers.size < this.poolSize) this.spawn();
    return ready;
  }

  private onReady?: () => void;

  /**
   * Runs a script. Rejects with a LimitError when a limit asked for passes the operator's maximum,
   * SandboxBusyError when no process frees up in time; a script's own failure is a result with an
   * `error`, never a rejection.
   */
  run(request: RunRequest): Promise<RunResult> {
    if (this.closed) return Promise.reject(new SandboxClosedError('The sandbox is closed.'));
    let limits: RunLimits;
    try {
      limits = resolveLimits(request, this.maxLimits);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (request.signal?.aborted) return Promise.reject(new SandboxAbortedError('The run was aborted before it started.'));
    if (this.workers.size === 0) this.spawn();
    return new Promise<RunResult>((resolve, reject) => {
      const settle = () => {
        if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
      };
      const job: Job = {
        id: this.nextId++,
        tenant: request.tenant ?? '',
        code: request.code,
        globalsJson: request.globalsJson,
        checkOnly: request.checkOnly,
        limits,
        enqueued: performance.now(),
        resolve: (r) => {
          settle();
          resolve(r);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
        signal: request.signal,
        tools: request.tools,
      };
      if (request.signal) {
        job.onAbort = () => this.abort(job);
        request.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      const idle = this.runningOf(job.tenant) < this.tenantShare ? this.idleWorker() : undefined;
      if (idle) return this.dispatch(idle, job);
      if (this.queue.length >= this.maxQueue) {
        return reject(new SandboxBusyError(`Every sandbox is busy and ${this.queue.length} calls are waiting; try again shortly.`));
      }
      job.queueTimer = setTimeout(() => {
        this.queue.remove(job.tenant, job);
        if (this.runningOf(job.tenant) === 0) this.queue.idle(job.tenant);
        reject(new SandboxBusyError(`No sandbox was free within ${this.queueTimeoutMs} ms; try again shortly.`));
      }, this.queueTimeoutMs);
      this.queue.push(job.tenant, job);
    });
  }

  /** Counts for metrics and tests. */
  stats() {
    const states = { starting: 0, idle: 0, busy: 0 };
    for (const w of this.workers) if (w.state !== 'dead') states[w.state]++;
    return { ...states, queued: this.queue.length, ...this.counters, pids: [...this.workers].map((w) => w.child.pid) };
  }

  /** Kills every process and refuses further calls; calls waiting are refused, running ones end as killed. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.drain()) {
      clearTimeout(job.queueTimer);
      job.reject(new SandboxClosedError('The sandbox closed.'));
    }
    // A process is unref'd (it does not keep the parent alive): referenced again while its exit is
    // awaited, or a parent with nothing else to do would end before close() resolves.
    const exits = [...this.workers].map((w) =>
      w.child.exitCode !== null || w.child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            w.child.ref();
            w.child.once('exit', () => resolve());
          }),
    );
    for (const w of this.workers) w.child.kill('SIGKILL');
    await Promise.all(exits);
  }

  /** The caller gave up on a job: off the queue if it waits, its process killed if it runs. */
  private abort(job: Job): void {
    if (this.queue.remove(job.tenant, job)) {
      clearTimeout(job.queueTimer);
      if (this.runningOf(job.tenant) === 0) this.queue.idle(job.tenant);
      this.counters.aborted++;
      return job.reject(new SandboxAbortedError('The run was aborted while it waited for a process.'));
    }
    for (const w of this.workers) if (w.running?.job === job) return this.kill(w, 'aborted');
  }

  /** An idle process, one with its next interpreter ready first. */
  private idleWorker(): Worker | undefined {
    let any: Worker | undefined;
    for (const w of this.workers) {
      if (w.state !== 'idle') continue;
      if (w.fresh) return w;
      any ??= w;
    }
    return any;
  }

  private spawn(): void {
    const execArgv = ['--max-old-space-size=128', '--disallow-code-generation-from-strings', ...permissionArgs()];
    let child: ChildProcess;
    try {
      child = fork(CHILD, [String(resolveLimits({}, this.maxLimits).memoryLimitMb)], {
        execArgv,
        env: {},
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'json',
      });
    } catch (err) {
      this.options.onEvent?.({ type: 'spawn_failed', error: (err as Error).message });
      return this.respawnLater();
    }
    this.counters.spawned++;
    lowerPriority(child.pid, this.options.nice ?? 10);
    const w = new Worker(child);
    this.workers.add(w);
    // Neither the process nor its channel keeps the parent alive: a run holds its own timer.
    child.unref();
    (child as unknown as { channel?: { unref(): void } }).channel?.unref();
    child.stderr?.on('data', (chunk: Buffer) => {
      w.stderr = (w.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
    });
    const startTimer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    startTimer.unref();
    child.on('message', (msg: ChildMessage) => this.onMessage(w, msg, startTimer));
    child.on('error', () => child.kill('SIGKILL'));
    child.on('exit', (code, signal) => {
      clearTimeout(startTimer);
      this.onExit(w, code, signal);
    });
  }

  private onMessage(w: Worker, msg: ChildMessage, startTimer: NodeJS.Timeout): void {
    if (msg.type === 'ready' && w.state !== 'starting') {
      w.fresh = true;
      return;
    }
    if (msg.type === 'ready') {
      clearTimeout(startTimer);
      w.fresh = true;
      this.failures = 0;
      w.idleRss = msg.rss;
      w.state = 'idle';
      this.onReady?.();
      this.onReady = undefined;
      return this.next(w);
    }
    if (msg.type === 'call' && w.running && msg.id === w.running.job.id) return this.toolCall(w, w.running.job, msg);
    if (msg.type !== 'done' || !w.running || msg.id !== w.running.job.id) return;
    const { job, started } = this.finishRun(w);
    w.fresh = false;
    this.counters.runs++;
    w.runs++;
    job.resolve({ ...msg.outcome, ...toolCount(job), limits: job.limits, queuedMs: ms(started - job.enqueued) });
    // A process that ran its share, or kept memory it did not have when idle, is replaced.
    if (w.runs >= this.runsPerProcess || msg.rss > w.idleRss + 2 * this.maxLimits.memoryLimitMb * MIB) {
      w.state = 'dead';
      w.child.kill('SIGKILL');
      return;
    }
    w.state = 'idle';
    this.next(w);
  }

  private onExit(w: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    const wasStarting = w.state === 'starting';
    w.state = 'dead';
    closeStatus(w);
    this.workers.delete(w);
    if (w.running) {
      const { job, started, killedFor } = this.finishRun(w);
      if (killedFor === 'aborted') job.reject(new SandboxAbortedError('The run was aborted: its process was killed.'));
      else {
        const error: RunError = killedFor
          ? killedFor === 'timeout'
            ? {
                code: 'timeout',
                message: `The script ran past its time limit (${job.limits.timeoutMs} ms) and its process was killed; its console output is lost.`,
              }
            : {
                code: 'memory_limit',
                message: `The script's process went past its memory cap (${job.limits.memoryLimitMb} MiB limit) and was killed; its console output is lost.`,
              }
          : { code: 'sandbox_error', message: 'The sandbox process died while running the script.' };
        if (!killedFor) {
          this.counters.crashed++;
          this.options.onEvent?.({ type: 'crashed', pid: w.child.pid ?? 0, code, signal, stderr: w.stderr });
        }
        job.resolve({
          resultJson: null,
          logs: [],
          logsTruncated: false,
          error,
          mode: 'script',
          durationMs: ms(performance.now() - started),
          ...toolCount(job),
          limits: job.limits,
          queuedMs: ms(started - job.enqueued),
        });
      }
    } else if (wasStarting && !this.closed) {
      this.failures++;
      this.options.onEvent?.({ type: 'crashed', pid: w.child.pid ?? 0, code, signal, stderr: w.stderr });
    }
    if (this.closed) return;
    if (this.failures > 0) this.respawnLater();
    else this.spawn();
  }

  private respawnTimer?: NodeJS.Timeout;

  /** After processes failed to start: try again with a growing delay (at most 5 s). */
  private respawnLater(): void {
    if (this.respawnTimer || this.closed) return;
    const delay = Math.min(5000, 100 * 2 ** Math.min(this.failures, 6));
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = undefined;
      if (this.closed) return;
      while (this.workers.size < this.poolSize) this.spawn();
    }, delay);
    this.respawnTimer.unref();
  }

  private next(w: Worker): void {
    const job = this.queue.shift(this.runningOf, this.tenantShare);
    if (!job) return;
    clearTimeout(job.queueTimer);
    this.dispatch(w, job);
  }

  private dispatch(w: Worker, job: Job): void {
    this.running.set(job.tenant, this.runningOf(job.tenant) + 1);
    this.queue.served(job.tenant);
    w.state = 'busy';
    w.fresh = false;
    const started = performance.now();
    const running: Running = {
      job,
      started,
      wallTimer: setTimeout(() => this.kill(w, 'timeout'), job.limits.timeoutMs + this.killGraceMs),
    };
    w.running = running;
    const pid = w.child.pid;
    if (pid !== undefined && process.platform === 'linux') {
      const cap = w.idleRss + 2 * job.limits.memoryLimitMb * MIB + this.rssHeadroom;
      const poll = () => {
        if (w.running !== running) return;
        const rss = residentBytes(w, pid);
        if (rss !== undefined && rss > cap) return this.kill(w, 'memory_limit');
        running.rssTimer = setTimeout(poll, RSS_POLL_MS);
      };
      running.rssTimer = setTimeout(poll, RSS_POLL_MS);
    }
    const msg: ParentMessage = {
      type: 'run',
      id: job.id,
      code: job.code,
      limits: job.limits,
      globalsJson: job.globalsJson,
      checkOnly: job.checkOnly,
      ...(job.tools ? { tools: { names: job.tools.names, maxCalls: job.tools.maxCalls, maxConcurrent: job.tools.maxConcurrent } } : {}),
    };
    w.child.send(msg, (err) => {
      if (err) this.kill(w);
    });
  }

  /**
   * A tool call of a running script: run through the job's tools (within its bounds, held here
   * again whatever the child claims), and the answer sent back while the same run is in progress.
   */
  private toolCall(w: Worker, job: Job, call: ToolCallOut): void {
    takeToolCall(job, call, (json, isError) => {
      if (w.running?.job !== job || w.state === 'dead') return;
      const m: ParentMessage = { type: 'answer', id: job.id, callId: call.callId, json, isError };
      w.child.send(m, (err) => {
        if (err) this.kill(w);
      });
    });
  }

  private kill(w: Worker, reason?: 'timeout' | 'memory_limit' | 'aborted'): void {
    if (w.running && reason && !w.running.killedFor) {
      w.running.killedFor = reason;
      if (reason === 'aborted') this.counters.aborted++;
      else {
        this.counters.killed++;
        this.options.onEvent?.({ type: 'killed', reason, pid: w.child.pid ?? 0 });
      }
    }
    w.child.kill('SIGKILL');
  }

  private finishRun(w: Worker): Running {
    const r = w.running!;
    w.running = undefined;
    const n = this.runningOf(r.job.tenant) - 1;
    if (n > 0) this.running.set(r.job.tenant, n);
    else {
      this.running.delete(r.job.tenant);
      this.queue.idle(r.job.tenant);
    }
    clearTimeout(r.wallTimer);
    clearTimeout(r.rssTimer);
    // Tool calls still in flight are given up: the run no longer waits for them (docs/run-code.md).
    r.job.toolCalls?.abort.abort();
    return r;
  }
}

const ms = (x: number) => Math.round(x * 100) / 100;
