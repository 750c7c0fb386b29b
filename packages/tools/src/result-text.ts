/**
 * The text block of a tool result (docs/mcp.md, "Calls"): the result is sent once, as
 * structuredContent; the text beside it is that JSON when it is short, else an abridged copy (long
 * strings and arrays cut, with what was cut said) for clients that read only text. A 4 MiB file
 * read is 4 MiB of content in the answer, not twice that.
 */

/** Results up to this many bytes of JSON are their own text. */
export const FULL_TEXT_MAX = 2048;
/** In an abridged text: strings cut to this many characters, arrays to this many items. */
const STRING_KEEP = 160;
const ITEMS_KEEP = 5;
const DEPTH_KEEP = 6;

function abridge(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return v.length > STRING_KEEP ? `${v.slice(0, STRING_KEEP)}… (${v.length - STRING_KEEP} more characters)` : v;
  if (v === null || typeof v !== 'object') return v;
  if (depth >= DEPTH_KEEP) return Array.isArray(v) ? `[${v.length} items]` : '{…}';
  if (Array.isArray(v)) {
    const kept = v.slice(0, ITEMS_KEEP).map((x) => abridge(x, depth + 1));
    return v.length > ITEMS_KEEP ? [...kept, `… ${v.length - ITEMS_KEEP} more items`] : kept;
  }
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, abridge(x, depth + 1)]));
}

/** The text of a result carried in full as structuredContent. */
export function resultText(result: Record<string, unknown>): string {
  const full = JSON.stringify(result);
  if (full.length <= FULL_TEXT_MAX) return full;
  const short = JSON.stringify(abridge(result, 0));
  const text = short.length <= 4 * FULL_TEXT_MAX ? short : `${short.slice(0, 4 * FULL_TEXT_MAX)}…`;
  return `The full result (${full.length} characters of JSON) is the structuredContent; abridged: ${text}`;
}
