/**
 * Searching one file's text line by line (the grep worker's loop): nothing here but plain code and
 * the compiled pattern, so that the worker loads no more than it needs.
 */
import type { LineMatcher } from './pattern.js';

/** Whether bytes look like text: valid UTF-8 without NUL. */
export function isText(b: Uint8Array): boolean {
  if (b.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(b);
    return true;
  } catch {
    return false;
  }
}

export interface LineMatch {
  line: number;
  column: number;
  /** The line's first 500 characters. */
  text: string;
}

/**
 * The first `max` lines of a file that match, in order (lines end at "\n" or "\r\n", as
 * splitLines cuts them); null when the bytes are not text. Lines are cut one at a time, never all
 * at once: a file of a million short lines costs no array of a million strings.
 */
export function searchText(matcher: LineMatcher, bytes: Uint8Array, max: number): LineMatch[] | null {
  if (!isText(bytes)) return null;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const out: LineMatch[] = [];
  let number = 0;
  for (let at = 0; at < text.length && out.length < max;) {
    const nl = text.indexOf('\n', at);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(at, nl >= 0 && end > at && text.charCodeAt(end - 1) === 13 ? end - 1 : end);
    number++;
    const i = matcher.firstIndex(line);
    if (i >= 0) out.push({ line: number, column: i + 1, text: line.slice(0, 500) });
    at = end + 1;
  }
  return out;
}
