/**
 * Five-field cron expressions in UTC (minute hour day-of-month month day-of-week): `*`, numbers,
 * ranges `a-b`, steps `*\/n` and `a-b/n`, lists `a,b`, names (JAN–DEC, SUN–SAT; 7 is Sunday too).
 * As in cron, when both day fields are restricted a day matching either one matches.
 */

export interface Cron {
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  anyDay: boolean;
  anyWeekday: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

export class CronError extends Error {}

function field(text: string, min: number, max: number, what: string, names?: string[]): Set<number> {
  const out = new Set<number>();
  const num = (s: string): number => {
    const i = names ? names.indexOf(s.toUpperCase()) : -1;
    const n = i >= 0 ? i + (names === MONTHS ? 1 : 0) : /^\d{1,2}$/.test(s) ? Number(s) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) throw new CronError(`${what}: "${s}" is not in ${min}–${max}`);
    return n;
  };
  for (const part of text.split(',')) {
    const m = /^([^/]+)(?:\/(\d{1,2}))?$/.exec(part);
    if (!m) throw new CronError(`${what}: "${part}" is not valid`);
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (step < 1) throw new CronError(`${what}: a step must be at least 1`);
    let lo: number;
    let hi: number;
    if (m[1] === '*') [lo, hi] = [min, max];
    else if (m[1]!.includes('-')) {
      const [a, b] = m[1]!.split('-');
      [lo, hi] = [num(a!), num(b!)];
      if (lo > hi) throw new CronError(`${what}: the range ${m[1]} is backwards`);
    } else {
      lo = num(m[1]!);
      hi = m[2] === undefined ? lo : max;
    }
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

export function parseCron(expr: string): Cron {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw new CronError('must have 5 fields: minute hour day-of-month month day-of-week');
  const weekdays = field(parts[4]!, 0, 7, 'day-of-week', DAYS);
  if (weekdays.has(7)) {
    weekdays.delete(7);
    weekdays.add(0);
  }
  return {
    minutes: field(parts[0]!, 0, 59, 'minute'),
    hours: field(parts[1]!, 0, 23, 'hour'),
    days: field(parts[2]!, 1, 31, 'day-of-month'),
    months: field(parts[3]!, 1, 12, 'month', MONTHS),
    weekdays,
    anyDay: parts[2] === '*' || parts[2] === '?',
    anyWeekday: parts[4] === '*' || parts[4] === '?',
  };
}

function dayMatches(c: Cron, d: Date): boolean {
  const dom = c.days.has(d.getUTCDate());
  const dow = c.weekdays.has(d.getUTCDay());
  if (c.anyDay && c.anyWeekday) return true;
  if (c.anyDay) return dow;
  if (c.anyWeekday) return dom;
  return dom || dow;
}

/** The first time after `after` (to the minute) that the expression matches; null within 5 years when none (Feb 30). */
export function nextCron(c: Cron, after: Date): Date | null {
  const d = new Date(after.getTime());
  d.setUTCSeconds(0, 0);
  d.setUTCMinutes(d.getUTCMinutes() + 1);
  const limit = after.getTime() + 5 * 366 * 24 * 3600 * 1000;
  while (d.getTime() <= limit) {
    if (!c.months.has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(c, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!c.hours.has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0, 0);
    } else if (!c.minutes.has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0, 0);
    } else return d;
  }
  return null;
}
