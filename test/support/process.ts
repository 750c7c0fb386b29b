import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

import { until } from './wait';

export const ROOT = path.resolve(__dirname, '..', '..');

/**
 * A loopback port free now and never handed out before by this process (the faults harness's
 * helper, scripts/faults/backends.js: two services given one port, the second cannot bind it).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const freePort: () => Promise<number> = require('../../scripts/faults/backends.js').freePort;

/**
 * Runs the image's entrypoint (`node --require tracing main.js`) as a child process. `group`: in a
 * process group of its own (its pid is the group's), so that `process.kill(-pid)` ends it with the
 * processes it started (the code sandbox's), as a container's kill would.
 */
export function spawnSvc(env: Record<string, string>, options: { group?: boolean } = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['--require', './packages/kit/dist/tracing/register.js', './apps/stack/dist/main.js'], {
    cwd: ROOT,
    detached: options.group ?? false,
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      ...(process.env.SVC_GRPC_TRANSPORT ? { SVC_GRPC_TRANSPORT: process.env.SVC_GRPC_TRANSPORT } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

/** Waits for a process-level condition (a port answering, an event seen), retrying while the probe throws. */
export const waitFor = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  until(probe, ms, { every: 100, what, retryErrors: true });

export function exitCode(child: ChildProcess, ms = 15_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
