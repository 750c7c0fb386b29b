/**
 * The process entry: `node --require @svc/kit/dist/tracing/register.js apps/stack/dist/main.js`.
 * SIGTERM and SIGINT drain in-flight HTTP and gRPC calls, then close the backends, within SVC_SHUTDOWN_GRACE_MS.
 */
import { ConfigError } from '@svc/kit';

import { startStack } from './index.js';

async function main(): Promise<void> {
  const started = Date.now();
  const stack = await startStack(process.env);
  if (stack.config.SVC_MIGRATE_ONLY) return;
  stack.log.info({ service: stack.config.SVC_SERVICE, port: stack.port, startupMs: Date.now() - started }, 'svc started');
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stack.log.info({ signal }, 'shutting down');
    // stop() ends within SVC_SHUTDOWN_GRACE_MS; should anything still hold the process (a flush of
    // traces that hangs), it ends anyway a little later.
    setTimeout(() => {
      stack.log.error({ graceMs: stack.config.SVC_SHUTDOWN_GRACE_MS }, 'shutdown overran its bound; exiting');
      process.exit(1);
    }, stack.config.SVC_SHUTDOWN_GRACE_MS + 5000).unref();
    stack
      .stop()
      .then(async () => {
        const flush = (globalThis as { __svcTracingShutdown?: () => Promise<void> }).__svcTracingShutdown;
        await flush?.().catch(() => {});
        process.exit(0);
      })
      .catch((err) => {
        stack.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`svc: ${err.message}\n`);
  } else {
    process.stderr.write(`svc: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  }
  process.exit(1);
});
