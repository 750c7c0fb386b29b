/**
 * The rule every user-given name follows (drive items, agents, threads, tasks, profiles, branches,
 * sites, API keys, organizations): no control characters, no bidirectional controls
 * (U+202A–U+202E, U+2066–U+2069, U+200E/F) nor any other invisible format character (Unicode
 * category Cf, such as U+200B or U+FEFF), and stored in Unicode NFC. Plain functions: the route
 * table's schemas and the services call them.
 */
import type { z } from 'zod';

const CONTROL = /\p{Cc}/u;
const FORMAT = /\p{Cf}/u;

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** Why `name` is not an acceptable name, as the end of a sentence ("must not …"), or null. */
export function nameProblem(name: string): string | null {
  const control = CONTROL.exec(name);
  if (control) return `must not hold control characters (${codePoint(control[0])})`;
  const format = FORMAT.exec(name);
  if (format) return `must not hold bidirectional controls or invisible format characters (${codePoint(format[0])})`;
  return null;
}

/** A name as it is stored and compared: Unicode NFC. */
export function normalizeName(name: string): string {
  return name.normalize('NFC');
}

/** The rule on a zod string schema: normalized to NFC, then {@link nameProblem} (a 400 naming the field). */
export const visibleName = <T extends z.ZodString>(s: T): T =>
  s.normalize('NFC').superRefine((v, ctx) => {
    const problem = nameProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
