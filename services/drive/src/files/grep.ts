/**
 * Text search in the files under a folder (docs/drive.md, "Patterns"). The caller's pattern is
 * compiled and matched on a worker thread by RE2's linear-time algorithm (pattern.ts), under a
 * deadline: a search that passes it stops (the worker is terminated) and answers 422
 * `grep_timeout`, and the service's event loop, which serves every other tenant, never runs it.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import { callAborted, DomainError, type Principal } from '@svc/kit';

import type { DriveDomain } from '../items/domain.js';
import type { GrepAnswer, GrepRequest } from './grep-worker.js';
import { readBytes, TOOL_MAX_BYTES } from './io.js';
import { files, likeOf, start } from './paths.js';

const WORKER = path.join(__dirname, 'grep-worker.js');
/** Idle workers kept warm, and for how long. */
const KEEP_IDLE = 2;
const IDLE_MS = 60_000;
/** How long a new worker may take to load before the search gives up (503 grep_unavailable). */
const LOAD_TIMEOUT_MS = 30_000;
/** A worker's heap: a 5 MiB file's text and RE2's state fit many times over; past it the search fails, not the service. */
const WORKER_HEAP_MB = 256;

const timedOut = (ms: number, searched: number) =>
  new DomainError(
    'unprocessable',
    'grep_timeout',
    `The search passed its ${ms} ms limit after ${searched} file(s) (the pattern's cost over this much text): ` +
      'narrow it with folderId or nameGlob, or simplify the pattern.',
    { timeoutMs: ms, filesSearched: searched },
  );

/** One search's worker: requests answered in order, all of them within the deadline. */
class GrepSession {
  private pending: { resolve: (a: GrepAnswer) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;
  private timer: NodeJS.Timeout;
  /** Resolved once the worker has loaded (a kept worker: at once) or the session failed; requests wait for it. */
  private readonly ready: Promise<void>;
  private loaded!: () => void;
  searched = 0;

  constructor(
    private readonly pool: GrepWorkers,
    private readonly worker: Worker,
    private readonly timeoutMs: number,
    warm: boolean,
  ) {
    this.ready = new Promise((r) => (this.loaded = r));
    // The deadline bounds the pattern's cost, so it starts once the worker has loaded; loading a new
    // worker has its own, longer bound (a machine short of CPU), and failing it is the platform's fault.
    if (warm) this.start();
    this.timer ??= setTimeout(
      () => this.fail(new DomainError('unavailable', 'grep_unavailable', 'No search worker could be started in time; try again.')),
      LOAD_TIMEOUT_MS,
    );
    worker.on('message', this.onMessage);
    worker.on('error', this.onError);
    worker.on('exit', this.onExit);
  }

  private start(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fail(timedOut(this.timeoutMs, this.searched)), this.timeoutMs);
    this.loaded();
  }

  private readonly onMessage = (a: GrepAnswer) => {
    if (a.op === 'ready') return this.start();
    const p = this.pending;
    this.pending = null;
    p?.resolve(a);
  };

  private readonly onError = (err: Error) => {
    const oom = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
    this.fail(
      oom
        ? new DomainError('unprocessable', 'grep_too_large', `The search needed more than ${WORKER_HEAP_MB} MiB: narrow it or simplify the pattern.`)
        : new DomainError('internal', 'grep_failed', 'The search failed.', undefined, { cause: err }),
    );
  };

  private readonly onExit = () => this.fail(new DomainError('internal', 'grep_failed', 'The search stopped.'));

  /** Ends the session with an error: the worker is terminated (it may be mid-match), never reused. */
  fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.loaded(); // a request waiting for the load sees the failure
    this.detach();
    void this.worker.terminate();
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  private detach(): void {
    clearTimeout(this.timer);
    this.worker.off('message', this.onMessage);
    this.worker.off('error', this.onError);
    this.worker.off('exit', this.onExit);
  }

  async ask(m: GrepRequest): Promise<GrepAnswer> {
    await this.ready;
    if (this.failure) throw this.failure;
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(m);
    });
  }

  async compile(pattern: string, regex: boolean, ignoreCase: boolean): Promise<void> {
    const a = await this.ask({ op: 'compile', pattern, regex, ignoreCase });
    if (a.op === 'compiled' && a.error) throw new DomainError('invalid_argument', 'invalid_pattern', a.error);
    if (a.op !== 'compiled') throw new DomainError('internal', 'grep_failed', 'The search failed.');
  }

  /** The matching lines of one file (at most `max`), or null when it is not text. */
  async search(bytes: Uint8Array, max: number) {
    const a = await this.ask({ op: 'search', bytes, max });
    if (a.op !== 'searched') throw new DomainError('internal', 'grep_failed', 'The search failed.');
    return a.matches;
  }

  /** Gives a healthy worker back to the pool. */
  close(): void {
    if (this.failure) return;
    this.failure = new Error('closed');
    this.detach();
    this.pool.release(this.worker);
  }
}

/** Worker threads for grep: one per search in flight, a few kept warm between searches. */
export class GrepWorkers {
  private readonly idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  /** How much nicer than the service each worker runs (it lowers its own thread's priority when it starts). */
  private readonly niceOf = new WeakMap<Worker, number>();

  /** A worker `nice` steps nicer than the service (a kept one of the same niceness, or a new one). */
  open(timeoutMs: number, nice: number): GrepSession {
    const i = this.idle.findLastIndex((e) => this.niceOf.get(e.worker) === nice);
    const kept = i >= 0 ? this.idle.splice(i, 1)[0] : undefined;
    if (kept) clearTimeout(kept.timer);
    let worker = kept?.worker;
    if (!worker) {
      // No inherited execArgv: the parent's --require hooks (tracing) have no business here.
      worker = new Worker(WORKER, { name: 'grep', execArgv: [], workerData: { nice }, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
      this.niceOf.set(worker, nice);
    }
    worker.unref();
    return new GrepSession(this, worker, timeoutMs, kept !== undefined);
  }

  release(worker: Worker): void {
    if (this.idle.length >= KEEP_IDLE) {
      void worker.terminate();
      return;
    }
    const entry = { worker, timer: setTimeout(() => this.drop(entry), IDLE_MS) };
    entry.timer.unref();
    this.idle.push(entry);
  }

  private drop(entry: { worker: Worker; timer: NodeJS.Timeout }): void {
    const i = this.idle.indexOf(entry);
    if (i >= 0) this.idle.splice(i, 1);
    void entry.worker.terminate();
  }
}

/** The process's grep workers (unreferenced: they never keep it alive). */
export const grepWorkers = new GrepWorkers();

/** Text search in the files under a folder: matching lines with their paths and numbers. */
export async function grep(
  drive: DriveDomain,
  p: Principal,
  input: { folderId?: string; projectId?: string; pattern: string; regex: boolean; ignoreCase: boolean; maxMatches: number; nameGlob?: string },
  /** The caller gave up (a run's tool call aborted, docs/threads.md): the worker is terminated mid-match. */
  signal?: AbortSignal,
) {
  const session = grepWorkers.open(drive.settings.grepTimeoutMs, drive.settings.grepNice);
  const onAbort = () => session.fail(callAborted());
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await session.compile(input.pattern, input.regex, input.ignoreCase);
    const max = Math.min(Math.max(input.maxMatches || 100, 1), 1000);
    const { start: s, prefix } = await start(drive, p, input.folderId, input.projectId);
    const rows = await files.walk(drive.sql, p.accountId, s, 100, 2001, {
      kind: 'file',
      maxSize: TOOL_MAX_BYTES,
      // A glob without * or ? names the file exactly.
      ...(input.nameGlob ? { nameLike: /[*?]/.test(input.nameGlob) ? likeOf(input.nameGlob) : likeOf(input.nameGlob).slice(1, -1) } : {}),
    });
    const matches: Array<{ fileId: string; path: string; line: number; column: number; text: string }> = [];
    let skipped = 0;
    let truncated = rows.length > 2000;
    let budget = 50 * 1024 * 1024;
    for (const r of rows.slice(0, 2000)) {
      if (matches.length >= max) {
        truncated = true;
        break;
      }
      if (budget - r.size < 0) {
        skipped++;
        truncated = true;
        continue;
      }
      budget -= r.size;
      const found = await session.search(await readBytes(drive, r), max - matches.length);
      if (!found) {
        skipped++;
        continue;
      }
      session.searched++;
      const where = prefix ? `${prefix}/${r.path}` : r.path;
      for (const m of found) matches.push({ fileId: r.id, path: where, ...m });
    }
    return { matches, filesSearched: session.searched, filesSkipped: skipped, truncated };
  } finally {
    signal?.removeEventListener('abort', onAbort);
    session.close();
  }
}
