/** Text files: lines, counts, search, differences, CSV, and edits written back as new versions. */
import { DomainError, type Principal } from '@svc/kit';

import type { DriveDomain } from '../items/domain.js';
import { contentTypeFor } from '../items/rules.js';
import type { ItemRow } from '../items/store.js';
import { unifiedDiff } from './diff.js';
import { readText, rewriteText, segments, writeBytes } from './io.js';
import { occurrences, replaceAt } from './occurrences.js';
import { makeFolders } from './paths.js';

const bad = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

/** Lines without their terminators ("a\nb\n" is two lines; "" is none). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

const eolOf = (text: string) => (text.includes('\r\n') ? '\r\n' : '\n');

/** Lines [start, end] of a text file (1-based; end 0: to the end), at most 2,000 lines or 1 MiB. */
export async function readLines(drive: DriveDomain, p: Principal, input: { id: string; start: number; end: number }) {
  const row = await drive.visible(drive.sql, p, input.id);
  const s = input.start || 1;
  if (s < 1 || input.end < 0 || (input.end && input.end < s)) throw bad('start: at least 1; end: 0 (to the end) or at least start.');
  const lines = splitLines(await readText(drive, row));
  const last = Math.min(input.end || lines.length, lines.length, s + 1999);
  const out: Array<{ number: number; text: string }> = [];
  let bytes = 0;
  for (let n = s; n <= last; n++) {
    bytes += lines[n - 1]!.length;
    if (bytes > 1024 * 1024) break;
    out.push({ number: n, text: lines[n - 1]! });
  }
  const wanted = Math.min(input.end || lines.length, lines.length);
  return { lines: out, totalLines: lines.length, etag: `"${row.sha256}"`, truncated: out.length < Math.max(0, wanted - s + 1) };
}

export async function textStats(drive: DriveDomain, p: Principal, id: string) {
  const row = await drive.visible(drive.sql, p, id);
  const text = await readText(drive, row);
  const crlf = (text.match(/\r\n/g) ?? []).length;
  const lf = (text.match(/\n/g) ?? []).length - crlf;
  return {
    lines: splitLines(text).length,
    words: (text.match(/\S+/g) ?? []).length,
    characters: [...text].length,
    bytes: row.size,
    etag: `"${row.sha256}"`,
    lineEndings: crlf && lf ? 'mixed' : crlf ? 'crlf' : lf ? 'lf' : 'none',
    endsWithNewline: text.endsWith('\n'),
  };
}

export async function diffFiles(drive: DriveDomain, p: Principal, input: { fromId: string; toId: string; context: number }) {
  const a = await drive.visible(drive.sql, p, input.fromId);
  const b = await drive.visible(drive.sql, p, input.toId);
  const max = 1024 * 1024;
  const [ta, tb] = [await readText(drive, a, max), await readText(drive, b, max)];
  const context = input.context === undefined || input.context === 0 ? 3 : Math.min(Math.max(input.context, 0), 100);
  const pathA = (await drive.ancestry(drive.sql, p.accountId, a.id)).path;
  const pathB = (await drive.ancestry(drive.sql, p.accountId, b.id)).path;
  return unifiedDiff(splitLines(ta), splitLines(tb), `a/${pathA}`, `b/${pathB}`, context);
}

/** RFC 4180 CSV: quoted fields may hold the delimiter, quotes ("") and line breaks. */
export function parseCsv(text: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === delimiter) {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

export async function readCsv(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; header: boolean; offset: number; limit: number; delimiter: string },
) {
  if (input.delimiter.length > 1) throw bad('delimiter: one character.');
  if (input.offset < 0) throw bad('offset: at least 0.');
  const row = await drive.visible(drive.sql, p, input.id);
  const text = (await readText(drive, row)).replace(/^\uFEFF/, '');
  const first = text.slice(0, text.search(/\r?\n|$/));
  const counts = [',', ';', '\t'].map((d) => [d, first.split(d).length] as const).sort((x, y) => y[1] - x[1]);
  const delimiter = input.delimiter || counts[0]![0];
  const all = parseCsv(text, delimiter);
  const columns = input.header ? (all.shift() ?? []) : [];
  const limit = Math.min(Math.max(input.limit || 100, 1), 1000);
  const rows = all.slice(input.offset, input.offset + limit).map((cells) => ({ cells }));
  return { columns, rows, totalRows: all.length, delimiter, etag: `"${row.sha256}"` };
}

// Writes --------------------------------------------------------------------------------------

/** Writes a text file at a path (creating missing folders): a new file, or a new version of the one there. */
export async function writeText(
  drive: DriveDomain,
  p: Principal,
  input: { path: string; projectId?: string; content: string; ifMatch?: string; ifNoneMatch?: string; contentType?: string },
): Promise<{ row: ItemRow; created: boolean }> {
  const segs = segments(input.path);
  const name = segs.pop()!;
  const parent = segs.length ? (await makeFolders(drive, p, { path: segs.join('/'), projectId: input.projectId })).row : null;
  return writeBytes(
    drive,
    p,
    {
      parentId: parent?.id,
      projectId: parent ? undefined : input.projectId,
      name,
      ifMatch: input.ifMatch,
      ifNoneMatch: input.ifNoneMatch,
      overwrite: true,
      contentType: input.contentType || contentTypeFor(undefined, name),
    },
    Buffer.from(input.content, 'utf8'),
  );
}

export async function appendText(drive: DriveDomain, p: Principal, input: { id: string; text: string; newline: boolean; ifMatch?: string }) {
  if (!input.text) throw bad('text: required.');
  return (
    await rewriteText(drive, p, input.id, input.ifMatch, (t) => ({
      text: t + (input.newline && t !== '' && !t.endsWith('\n') ? eolOf(t) : '') + input.text,
      extra: null,
    }))
  ).row;
}

/** Replaces exact occurrences of `find`; fails unless there are exactly `expected` (default 1), or any with replaceAll. */
export async function editText(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; find: string; replace: string; expected: number; replaceAll: boolean; ifMatch?: string },
) {
  if (!input.find) throw bad('find: required.');
  if (input.expected < 0) throw bad('expectedOccurrences: at least 1.');
  const { row, extra } = await rewriteText(drive, p, input.id, input.ifMatch, (t) => {
    const at = occurrences(t, input.find);
    const n = at.length;
    const expected = input.expected || 1;
    if (n === 0) throw new DomainError('unprocessable', 'text_not_found', 'The text to replace is not in the file; nothing was written.');
    if (!input.replaceAll && n !== expected) {
      throw new DomainError(
        'unprocessable',
        'occurrences_mismatch',
        `The text occurs ${n} times, not ${expected}; add context to make it unique, or set replaceAll. Nothing was written.`,
        { occurrences: n },
      );
    }
    return { text: replaceAt(t, at, input.find.length, input.replace), extra: n };
  });
  return { row, replacements: extra };
}

/** Replaces lines [start, end] with the text's lines (end = start - 1 inserts before start). */
export async function replaceLines(
  drive: DriveDomain,
  p: Principal,
  input: { id: string; start: number; end: number; text: string; ifMatch?: string },
) {
  if (input.start < 1 || input.end < input.start - 1) throw bad('start: at least 1; end: at least start - 1 (an insertion).');
  return (
    await rewriteText(drive, p, input.id, input.ifMatch, (t) => {
      const lines = splitLines(t);
      if (input.start > lines.length + 1 || input.end > lines.length) {
        throw new DomainError('unprocessable', 'line_out_of_range', `The file has ${lines.length} lines.`, { totalLines: lines.length });
      }
      const eol = eolOf(t);
      const added = input.text === '' ? [] : splitLines(input.text.endsWith('\n') ? input.text : `${input.text}\n`);
      lines.splice(input.start - 1, input.end - input.start + 1, ...added);
      const trailing = t === '' || t.endsWith('\n') ? eol : '';
      return { text: lines.length ? lines.join(eol) + trailing : '', extra: null };
    })
  ).row;
}
