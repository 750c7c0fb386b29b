import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

import { until } from './wait';

/**
 * The code sandbox's processes (@svc/quickjs's pool: `node …/quickjs/dist/child.js`) that are
 * children of `parent` (this process, for a stack started in it): what a test looks at to see a
 * run's script killed.
 */
export function sandboxChildren(parent: number = process.pid): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)]).toString();
  } catch {
    return []; // ps answers 1 when there is no such process
  }
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.includes('quickjs') && l.includes('child.js'))
    .map((l) => Number(l.split(/\s+/)[0]));
}

/** Whether a process is alive: it exists and is not a zombie (killed, not yet reaped by its parent). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false; // gone between the two looks
  }
}

/** CPU time the process has used, in clock ticks (/proc/<pid>/stat, utime + stime). */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Waits until the process is running something: it used `ticks` more clock ticks of CPU (a busy-looping script). */
export async function busy(pid: number, ticks = 10): Promise<void> {
  const start = cpuTicks(pid);
  await until(() => cpuTicks(pid) >= start + ticks, 30_000, { what: `process ${pid} to be busy` });
}

/**
 * Of the children of this process, the sandbox process that is running something (busy-looping):
 * another suite's stack, stopped earlier in the same jest process, may have left one that is not.
 * Each process is measured from when it is first seen, so a process spawned meanwhile (the pool
 * replacing one it killed) is not taken for the busy one by the CPU its own start-up used (half a
 * second of CPU is more than a start-up takes and less than the scripts these tests run).
 */
export async function busyChild(ticks = 50): Promise<number> {
  const start = new Map<number, number>();
  const look = () => {
    for (const pid of sandboxChildren()) {
      try {
        if (!start.has(pid)) start.set(pid, cpuTicks(pid));
      } catch {
        // gone meanwhile
      }
    }
  };
  look();
  let found: number | undefined;
  await until(
    () => {
      look();
      for (const [pid, first] of start) {
        try {
          if (cpuTicks(pid) >= first + ticks) found = pid;
        } catch {
          // gone meanwhile
        }
      }
      return found !== undefined;
    },
    30_000,
    { what: 'a sandbox process to be busy' },
  );
  return found!;
}
