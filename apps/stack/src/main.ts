/**
 * The process entry: `node --require @svc/kit/dist/tracing/register.js apps/stack/dist/main.js`.
 * SIGTERM and SIGINT drain in-flight HTTP and gRPC calls, then close the backends, within SVC_SHUTDOWN_GRACE_MS.
 * During the start they stop what has started so far and end the process (exit 0).
 */
import { ConfigError, StartAborted } from '@svc/kit';

import { type Stack, startStack } from './index.js';

/** The bound before SIGTERM's stop is cut short (SVC_SHUTDOWN_GRACE_MS plus this). */
const OVERRUN_MS = 5000;

async function main(): Promise<void> {
  const started = Date.now();
  let stack: Stack | undefined;
  let stopping = false;
  const starting = new AbortController();
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Should anything still hold the process (a flush of traces that hangs, a start step that does
    // not end), it ends anyway a little after the bound.
    const graceMs = stack?.config.SVC_SHUTDOWN_GRACE_MS ?? (Number(process.env.SVC_SHUTDOWN_GRACE_MS) || 10_000);
    setTimeout(() => {
      process.stderr.write(`svc: shutdown overran its bound (${graceMs} ms); exiting\n`);
      process.exit(1);
    }, graceMs + OVERRUN_MS).unref();
    if (!stack) {
      // Still starting: startStack stops what it started and throws StartAborted (below).
      starting.abort();
      return;
    }
    stack.log.info({ signal }, 'shutting down');
    const s = stack;
    s.stop()
      .then(async () => {
        const flush = (globalThis as { __svcTracingShutdown?: () => Promise<void> }).__svcTracingShutdown;
        await flush?.().catch(() => {});
        process.exit(0);
      })
      .catch((err) => {
        s.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  // From the first moment: in a container the process is PID 1, which ignores a signal it has no
  // handler for, so a SIGTERM during the start would otherwise wait for the SIGKILL.
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    stack = await startStack(process.env, { signal: starting.signal });
  } catch (err) {
    if (err instanceof StartAborted) process.exit(0);
    throw err;
  }
  if (stack.config.SVC_MIGRATE_ONLY) return;
  stack.log.info({ service: stack.config.SVC_SERVICE, port: stack.port, startupMs: Date.now() - started }, 'svc started');
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`svc: ${err.message}\n`);
  } else {
    process.stderr.write(`svc: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  }
  process.exit(1);
});
