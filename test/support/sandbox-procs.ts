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

/** Whether a process exists (a zombie not yet reaped counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
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
