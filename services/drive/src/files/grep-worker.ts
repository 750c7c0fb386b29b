/**
 * The grep worker (a worker thread, grep.ts's GrepWorkers): compiles the caller's pattern and
 * searches each file's bytes it is sent, off the service's event loop. Messages in, one answer out
 * per message, in order.
 */
import { readlinkSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

import { compilePattern, type LineMatcher, PatternError } from './pattern.js';
import { searchText } from './search-text.js';

export type GrepRequest = { op: 'compile'; pattern: string; regex: boolean; ignoreCase: boolean } | { op: 'search'; bytes: Uint8Array; max: number };

export type GrepAnswer =
  | { op: 'ready' }
  | { op: 'compiled'; error?: string }
  | { op: 'searched'; matches: Array<{ line: number; column: number; text: string }> | null }
  | { op: 'failed'; error: string };

let matcher: LineMatcher | null = null;

/**
 * This thread runs nicer than the service's own (workerData.nice, SVC_HEAVY_WORK_NICE): on Linux a
 * thread has its own priority, set by its id (/proc/thread-self names it). Best effort elsewhere.
 * It also names itself `svc-grep`, so that `top -H` or /proc/<pid>/task/<tid>/comm tells it apart.
 */
function lowerThisThreadPriority(nice: number): void {
  if (process.platform !== 'linux') return;
  try {
    writeFileSync('/proc/thread-self/comm', 'svc-grep');
  } catch {
    // Only a name.
  }
  if (!(nice > 0)) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.max(getPriority(tid), Math.min(19, nice)));
  } catch {
    // Not permitted here: the search runs at the service's priority.
  }
}
lowerThisThreadPriority((workerData as { nice?: number } | undefined)?.nice ?? 0);

function answer(m: GrepRequest): GrepAnswer {
  if (m.op === 'compile') {
    try {
      matcher = compilePattern(m.pattern, m);
      return { op: 'compiled' };
    } catch (err) {
      if (err instanceof PatternError) return { op: 'compiled', error: err.message };
      throw err;
    }
  }
  if (!matcher) return { op: 'failed', error: 'no pattern compiled' };
  return { op: 'searched', matches: searchText(matcher, m.bytes, m.max) };
}

parentPort?.on('message', (m: GrepRequest) => {
  let a: GrepAnswer;
  try {
    a = answer(m);
  } catch (err) {
    a = { op: 'failed', error: (err as Error).message };
  }
  parentPort!.postMessage(a);
});

// Loaded: the session's deadline starts now (loading is not the pattern's cost).
parentPort?.postMessage({ op: 'ready' } satisfies GrepAnswer);
