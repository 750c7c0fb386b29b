import rangeParser from 'range-parser';

/** What a Range header asks of content of a given size. */
export type RangeAnswer = { kind: 'whole' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

const WHOLE: RangeAnswer = { kind: 'whole' };

/**
 * Applies a Range header value (RFC 9110 14.2) to content of `size` bytes, with range-parser.
 * One byte range is served (its end clamped to the content); another unit, several ranges or a
 * malformed value get the whole content (a server may ignore Range); a range that starts past
 * the end, or any range of empty content, is unsatisfiable (416).
 */
export function byteRange(size: number, header: string | undefined): RangeAnswer {
  if (header === undefined || header.length > 1024) return WHOLE;
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes' || header.includes(',')) return WHOLE;
  const ranges = rangeParser(size, header);
  if (ranges === -2) return WHOLE;
  if (ranges !== -1) return { kind: 'partial', start: ranges[0]!.start, end: ranges[0]!.end };
  // range-parser 1.3.0 calls two well-formed requests unsatisfiable that RFC 9110 14.1 does not:
  // a suffix longer than the content (`bytes=-500` of 100 bytes: the whole content, as a range;
  // fixed upstream after 1.3.0), and a last position before the first (`bytes=5-1`: invalid, so
  // the header is ignored).
  const [first = '', last = ''] = header
    .slice(eq + 1)
    .split('-')
    .map((s) => s.trim());
  if (first === '' && Number(last) > 0 && size > 0) return { kind: 'partial', start: 0, end: size - 1 };
  if (first !== '' && last !== '' && Number(last) < Number(first)) return WHOLE;
  return { kind: 'unsatisfiable' };
}
