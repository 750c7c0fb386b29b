import { DomainError } from './errors.js';
import type { Logger } from './log.js';

/** Backoff between two attempts: 250 ms doubling, at most 5 s. */
const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 5000;

/** Why a start gave up: told to stop (SIGTERM) before it was done. */
export class StartAborted extends Error {
  override name = 'StartAborted';
  constructor() {
    super('stopped while starting');
  }
}

/** Whether an error says the other side is not up (yet): worth another try at start. */
export function notUpYet(err: unknown): boolean {
  return err instanceof DomainError && (err.kind === 'unavailable' || err.kind === 'deadline_exceeded');
}

/**
 * Runs `attempt` until it succeeds, for a start that needs another service up (the accounts service
 * imports the operator's key through keys): while the error says that service is not up
 * (`notUpYet`), it logs one line per try (`waiting for <what> to start`, warn, with the wait so far
 * and the bound) and tries again with backoff, for at most `maxMs` (SVC_START_WAIT_SECONDS); then it
 * throws an error naming what it waited for, and any other error at once. `signal` (SIGTERM during the start) ends the
 * wait at once with StartAborted. In Kubernetes the process would otherwise exit and be restarted.
 */
export async function waitForDependency<T>(
  what: string,
  attempt: () => Promise<T>,
  opts: { log: Logger; maxMs: number; signal?: AbortSignal },
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    if (opts.signal?.aborted) throw new StartAborted();
    try {
      return await attempt();
    } catch (err) {
      const waitedMs = Date.now() - started;
      if (!notUpYet(err)) throw err;
      if (waitedMs >= opts.maxMs) {
        throw new Error(`${what} did not start within ${opts.maxMs} ms (SVC_START_WAIT_SECONDS): ${(err as Error).message}`, { cause: err });
      }
      const retryInMs = Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** (n - 1), opts.maxMs - waitedMs);
      opts.log.warn(
        { dependency: what, attempt: n, waitedMs, retryInMs, giveUpAfterMs: opts.maxMs, err: (err as Error).message },
        `waiting for ${what} to start`,
      );
      await sleep(retryInMs, opts.signal);
    }
  }
}

/** Resolves after ms, or at once when signal aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
