/** What the sandbox pool does to its child processes: their permissions, memory readings and priority. */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import path from 'node:path';

/** Node's flag for its permission model (named `--permission` from Node 22.13). */
const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';

/** A process's resident set size in bytes, from /proc (Linux). */
const statusBuf = Buffer.alloc(4096);

/**
 * A child's resident memory, from /proc/<pid>/status through a descriptor kept open: one read of
 * procfs (microseconds, no disk), where reading the file anew through the thread pool cost the
 * service's thread about 5 ms of CPU at each of a busy run's 50 polls a second.
 */
export function residentBytes(w: { statusFd?: number }, pid: number): number | undefined {
  try {
    w.statusFd ??= openSync(`/proc/${pid}/status`, 'r');
    const n = readSync(w.statusFd, statusBuf, 0, statusBuf.length, 0);
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(statusBuf.toString('latin1', 0, n));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined; // the process is gone
  }
}

export function closeStatus(w: { statusFd?: number }): void {
  if (w.statusFd === undefined) return;
  try {
    closeSync(w.statusFd);
  } catch {
    // already closed
  }
  w.statusFd = undefined;
}

/**
 * Node's permission model for the child, as a second wall behind WebAssembly: it may read only its
 * own code and QuickJS's packages, write nothing, start no process and no worker thread.
 */
export function permissionArgs(): string[] {
  return [PERMISSION_FLAG, ...readable().map((dir) => `--allow-fs-read=${dir}`)];
}

let readableDirs: string[] | undefined;

function readable(): string[] {
  if (readableDirs) return readableDirs;
  const umbrella = packageRoot('quickjs-emscripten', __dirname);
  const core = packageRoot('quickjs-emscripten-core', umbrella);
  const variants = ['release-sync', 'release-asyncify', 'debug-sync', 'debug-asyncify'].map((v) =>
    packageRoot(`@jitl/quickjs-wasmfile-${v}`, umbrella),
  );
  readableDirs = [__dirname, umbrella, core, packageRoot('@jitl/quickjs-ffi-types', core), ...variants, ...searchedBefore(umbrella)];
  return readableDirs;
}

/**
 * The node_modules folders Node looks in, from this package up, before the one that holds
 * QuickJS. Under the permission model a folder there that exists but may not be read stops the
 * lookup (Node 22): so it is when this package is bundled inside another one (svc-host's install:
 * node_modules/@svc/host/node_modules/@svc/quickjs). They hold packages (code) only.
 */
function searchedBefore(umbrella: string): string[] {
  const holder = path.dirname(umbrella);
  const out: string[] = [];
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const folder = path.join(dir, 'node_modules');
    if (folder === holder) break;
    if (path.basename(dir) !== 'node_modules' && existsSync(folder)) out.push(folder);
    if (path.dirname(dir) === dir) break;
  }
  return out;
}

/** The folder of an installed package, as `require` finds it from `from`. */
function packageRoot(name: string, from: string): string {
  const main = require.resolve(name, { paths: [from] });
  const marker = path.join('node_modules', name);
  const at = main.lastIndexOf(marker);
  if (at < 0) throw new Error(`cannot locate the package ${name}`);
  return main.slice(0, at + marker.length);
}

/** Makes a child process nicer (never less nice than it is); best effort: a platform may refuse. */
export function lowerPriority(pid: number | undefined, nice: number): void {
  if (!pid || nice <= 0) return;
  try {
    setPriority(pid, Math.max(getPriority(pid), Math.min(19, nice)));
  } catch {
    // Not permitted here, or the process is already gone: it runs at the service's priority.
  }
}
