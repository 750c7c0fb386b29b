/**
 * Finding a caller's text in a file's (drive edit's `find`, up to 1 MiB, in up to 5 MiB): V8's own
 * search (String#indexOf, #split) goes quadratic for needles over a few hundred characters (a
 * 1,000-character `find` in 5 MiB of one letter took 3.8 s, 4,000 characters 15 s, on the event
 * loop), so longer needles are found by Knuth–Morris–Pratt: at most 2 × (text + needle) steps.
 */

/** Needles up to this long are left to V8 (measured: 256 characters in 5 MiB, 41 ms at worst). */
const NATIVE_MAX = 256;

/** Where `find` occurs in `text`, left to right and not overlapping (where String#split cuts). */
export function occurrences(text: string, find: string): number[] {
  const at: number[] = [];
  const m = find.length;
  if (!m) return at;
  if (m <= NATIVE_MAX) {
    for (let i = text.indexOf(find); i >= 0; i = text.indexOf(find, i + m)) at.push(i);
    return at;
  }
  // fail[j]: the length of the longest proper border of find[0..j].
  const fail = new Int32Array(m);
  for (let j = 1, k = 0; j < m; j++) {
    while (k > 0 && find.charCodeAt(j) !== find.charCodeAt(k)) k = fail[k - 1]!;
    if (find.charCodeAt(j) === find.charCodeAt(k)) k++;
    fail[j] = k;
  }
  for (let i = 0, k = 0; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== find.charCodeAt(k)) k = fail[k - 1]!;
    if (text.charCodeAt(i) === find.charCodeAt(k)) k++;
    if (k === m) {
      at.push(i - m + 1);
      // Not overlapping: the next occurrence starts after this one.
      k = 0;
    }
  }
  return at;
}

/** `text` with the `length` characters at each of `at` (ascending, not overlapping) replaced. */
export function replaceAt(text: string, at: number[], length: number, replacement: string): string {
  const parts: string[] = [];
  let from = 0;
  for (const i of at) {
    parts.push(text.slice(from, i), replacement);
    from = i + length;
  }
  parts.push(text.slice(from));
  return parts.join('');
}
