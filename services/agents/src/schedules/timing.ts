import { nextCron, parseCron } from './cron.js';
import type { Timing } from './store.js';

/**
 * The next firing time after `after`: a cron expression's next match, an interval's next step
 * from `anchor` (the previous firing time; from `after` when none), or a one-time `at` still ahead.
 * Null when there is none (then the schedule is completed), or when it would pass `endsAt`.
 */
export function nextFire(t: Timing, after: Date, anchor: Date | null = null, endsAt: Date | null = null): Date | null {
  let next: Date | null = null;
  if (t.cron) next = nextCron(parseCron(t.cron), after);
  else if (t.interval_seconds) {
    const step = t.interval_seconds * 1000;
    if (!anchor) next = new Date(after.getTime() + step);
    else {
      const k = Math.max(1, Math.floor((after.getTime() - anchor.getTime()) / step) + 1);
      next = new Date(anchor.getTime() + k * step);
    }
  } else if (t.at) next = t.at.getTime() > after.getTime() ? t.at : null;
  if (next && endsAt && next.getTime() > endsAt.getTime()) return null;
  return next;
}
