/**
 * A caller's search pattern, compiled for RE2's linear-time matching (re2js, RE2 in JavaScript),
 * never for V8's backtracking RegExp: `^(a+)+$` costs what `^a+$` costs (docs/drive.md, "Patterns").
 * Imported by the grep worker too, so it needs nothing but re2js.
 */
import { RE2JS } from 're2js';

/** A pattern refused: the message names what, for the caller (`pattern: …`). */
export class PatternError extends Error {
  override name = 'PatternError';
}

/** The longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 1000;

/**
 * The largest compiled program (RE2's instructions, about one per character and one per repeated
 * copy). Matching costs up to a step per instruction per character of text, so this bounds the
 * cost per byte: `\w{1000}` repeated ten times is 10,000 instructions and matched 2 KB in 0.5 s.
 */
export const MAX_PROGRAM_SIZE = 2000;

/**
 * What RE2 cannot run in linear time, found in the JavaScript syntax before translation so that
 * the answer names it (re2js's own messages would say "invalid escape sequence", or turn `\k<n>`
 * into a literal).
 */
function unsupported(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `backreferences (\\${next}) are not supported (linear-time engine)`;
      if (!inClass && next === 'k' && pattern[i + 2] === '<') return 'backreferences (\\k<name>) are not supported (linear-time engine)';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') inClass = true;
    else if (c === '(' && pattern[i + 1] === '?') {
      const kind = pattern.slice(i + 2, i + 4);
      if (kind[0] === '=' || kind[0] === '!') return `lookahead (?${kind[0]}…) is not supported (linear-time engine)`;
      if (kind === '<=' || kind === '<!') return `lookbehind (?${kind}…) is not supported (linear-time engine)`;
    }
  }
  return null;
}

/** Finds a compiled pattern in one line of text: the index (UTF-16) of its first match, or -1. */
export interface LineMatcher {
  firstIndex(line: string): number;
}

/**
 * Compiles a search pattern: a JavaScript regular expression when `regex` (checked with
 * JavaScript's syntax first, then run by RE2), otherwise a literal. Throws PatternError.
 */
export function compilePattern(pattern: string, opts: { regex: boolean; ignoreCase: boolean }): LineMatcher {
  if (!pattern) throw new PatternError('pattern: required.');
  if (pattern.length > MAX_PATTERN_LENGTH) throw new PatternError(`pattern: at most ${MAX_PATTERN_LENGTH} characters.`);
  let source = RE2JS.quote(pattern);
  if (opts.regex) {
    try {
      // Parsed only (V8 compiles a RegExp at its first use): the syntax callers write is JavaScript's.
      new RegExp(pattern);
    } catch (err) {
      throw new PatternError(`pattern: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`);
    }
    const why = unsupported(pattern);
    if (why) throw new PatternError(`pattern: ${why}`);
    source = RE2JS.translateRegExp(pattern);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, opts.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (err) {
    throw new PatternError(`pattern: ${(err as Error).message.replace(/^error parsing regexp: /, '')} (linear-time engine)`);
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) {
    throw new PatternError(
      `pattern: too large for the linear-time engine (${re.programSize()} instructions, at most ${MAX_PROGRAM_SIZE}): ` +
        'use fewer or smaller counted repetitions ({n}).',
    );
  }
  return {
    firstIndex(line: string): number {
      // test() runs RE2's DFA without captures; only a matching line is searched again for where.
      if (!re.test(line)) return -1;
      const m = re.matcher(line);
      return m.find() ? m.start() : -1;
    },
  };
}
