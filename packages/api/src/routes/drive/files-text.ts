/** Drive routes on text files: read lines, count, search, diff, CSV; write, append, edit, lines. */
import { z } from 'zod';

import { route } from '../../route.js';
import { DriveItem, QUOTA_ERRORS } from './files.js';
import { driveItem } from './files.js';
import { CONTENT_DAMAGED, DrivePath, FileId, fileParams, FolderId, IfMatch, ifMatchOf, itemReply, ProjectQuery, QueryBool } from './kit.js';
import { KEY } from './kit.js';

const Etag = z.string().describe('The ETag of the version read (for If-Match on a write).');
const Text = z.string().max(5 * 1024 * 1024);

export const driveTextRoutes = [
  route({
    ...KEY,
    id: 'drive.grep',
    statuses: {
      500: CONTENT_DAMAGED,
      422: 'The search passed its time limit (`grep_timeout`): narrow it or simplify the pattern.',
    },
    method: 'get',
    path: '/drive/grep',
    summary:
      'Search the text of the files under a folder (or the whole drive): each matching line with the file’s id and path, ' +
      'its line and column. Binary files and files over 5 MiB are skipped. A search that runs past its time limit answers 422 grep_timeout.',
    errors: ['concurrency_limit', 'content_damaged', 'grep_timeout', 'invalid_pattern', 'item_not_found'],
    query: z.object({
      pattern: z.string().min(1).max(1000).describe('The text to find (a literal unless regex=true).'),
      regex: QueryBool.describe(
        'The pattern is a JavaScript regular expression, matched in linear time (RE2): backreferences and lookaround are refused (400 invalid_pattern).',
      ),
      ignoreCase: QueryBool.describe('Match letters of either case.'),
      folderId: FolderId.optional().describe('Search under this folder (default: the whole drive).'),
      nameGlob: z.string().min(1).max(255).optional().describe('Only files whose name matches this glob ("*.md").'),
      projectId: ProjectQuery,
      maxMatches: z.coerce.number().int().min(1).max(1000).default(100).describe('Stop after this many matches (1–1,000; default 100).'),
    }),
    response: z
      .object({
        matches: z.array(
          z.object({
            fileId: z.string(),
            path: z.string(),
            line: z.number().int(),
            column: z.number().int(),
            text: z.string().describe('The line (its first 500 characters).'),
          }),
        ),
        filesSearched: z.number().int(),
        filesSkipped: z.number().int().describe('Binary files, or files past the bytes one search reads.'),
        truncated: z.boolean().describe('More matches may exist than were answered.'),
      })
      .meta({ id: 'DriveGrepResult' }),
    handler: {
      rpc: 'drive.grep',
      request: (i) => ({
        pattern: i.query.pattern,
        regex: i.query.regex,
        ignoreCase: i.query.ignoreCase,
        folderId: i.query.folderId,
        nameGlob: i.query.nameGlob,
        projectId: i.query.projectId,
        maxMatches: i.query.maxMatches,
      }),
      response: (r) => r,
    },
  }),
  route({
    ...KEY,
    id: 'drive.diff',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/diff',
    summary: 'A unified diff of two text files (`from` → `to`), with counts of lines added and removed.',
    errors: ['content_damaged', 'item_not_found'],
    query: z.object({
      from: FileId.describe('The old file.'),
      to: FileId.describe('The new file.'),
      context: z.coerce.number().int().min(0).max(100).default(3).describe('Unchanged lines around each change.'),
    }),
    response: z
      .object({
        diff: z.string().describe('The unified diff; "" when the texts are equal.'),
        additions: z.number().int(),
        deletions: z.number().int(),
        identical: z.boolean(),
      })
      .meta({ id: 'DriveDiff' }),
    handler: {
      rpc: 'drive.diffFiles',
      request: (i) => ({ fromId: i.query.from, toId: i.query.to, context: i.query.context }),
      response: (r) => r,
    },
  }),
  route({
    ...KEY,
    id: 'drive.writeText',
    statuses: { ...QUOTA_ERRORS, 201: 'The file did not exist: it was created.' },
    method: 'put',
    effect: 'updates',
    path: '/drive/text',
    summary:
      'Write a text file at a path from the drive root, making missing folders: creates it (201) or replaces its content (200, ' +
      'keeping the earlier content as a version). `If-Match` replaces only that version; `If-None-Match: *` only creates.',
    errors: ['invalid_name', 'name_taken', 'precondition_failed'],
    headers: IfMatch.extend({ 'if-none-match': z.string().max(2000).optional().describe('`*`: fail with 412 if the file exists.') }),
    body: z
      .object({
        path: DrivePath,
        content: Text.describe('The whole text (UTF-8).'),
        contentType: z.string().max(255).optional().describe('Default: from the name’s extension.'),
        projectId: ProjectQuery,
      })
      .strict()
      .meta({ id: 'WriteTextRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.writeText',
      request: (i) => ({
        path: i.body.path,
        content: i.body.content,
        contentType: i.body.contentType,
        projectId: i.body.projectId,
        ifMatch: ifMatchOf(i.headers),
        ifNoneMatch: i.headers['if-none-match'] as string | undefined,
      }),
      response: (r) => itemReply(r, true),
    },
  }),
  route({
    ...KEY,
    id: 'drive.readLines',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/:id/lines',
    summary: 'Lines of a text file, numbered from 1: `start` to `end` (default: all; at most 2,000 lines per call), with the total.',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    query: z.object({
      start: z.coerce.number().int().min(1).default(1).describe('The first line to read, 1-based (default 1).'),
      end: z.coerce.number().int().min(1).optional().describe('The last line (default: the end of the file).'),
    }),
    response: z
      .object({
        lines: z.array(z.object({ number: z.number().int(), text: z.string() })),
        totalLines: z.number().int(),
        etag: Etag,
        truncated: z.boolean().describe('Lines asked for were left out (over 2,000 lines or 1 MiB).'),
      })
      .meta({ id: 'DriveLines' }),
    handler: { rpc: 'drive.readLines', request: (i) => ({ id: i.params.id, start: i.query.start, end: i.query.end ?? 0 }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.textStats',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/:id/stats',
    summary: 'Counts of a text file: lines, words, characters, bytes, its line endings and whether it ends with a newline.',
    errors: ['content_damaged', 'item_not_found', 'not_text'],
    params: fileParams,
    response: z
      .object({
        lines: z.number().int(),
        words: z.number().int(),
        characters: z.number().int(),
        bytes: z.number().int(),
        etag: Etag,
        lineEndings: z.enum(['lf', 'crlf', 'mixed', 'none']),
        endsWithNewline: z.boolean(),
      })
      .meta({ id: 'DriveTextStats' }),
    handler: {
      rpc: 'drive.textStats',
      request: (i) => ({ id: i.params.id, includeDetails: false }),
      response: (r) => ({ ...r, lineEndings: r.lineEndings as 'lf' }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.readCsv',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/:id/csv',
    summary: 'A CSV file as rows of cells (RFC 4180 quoting), a page at a time; the header row as the columns.',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    query: z.object({
      header: z
        .enum(['true', 'false', '1', '0'])
        .default('true')
        .transform((v) => v === 'true' || v === '1')
        .describe('The first row names the columns (default true).'),
      offset: z.coerce.number().int().min(0).default(0).describe('Data rows to skip.'),
      limit: z.coerce.number().int().min(1).max(1000).default(100).describe('How many rows to return at most (1–1,000; default 100).'),
      delimiter: z.string().length(1).optional().describe('Default: guessed from the first line ("," ";" or tab).'),
    }),
    response: z
      .object({
        columns: z.array(z.string()),
        rows: z.array(z.array(z.string())),
        totalRows: z.number().int().describe('Data rows in the file.'),
        delimiter: z.string(),
        etag: Etag,
      })
      .meta({ id: 'DriveCsv' }),
    handler: {
      rpc: 'drive.readCsv',
      request: (i) => ({ id: i.params.id, header: i.query.header, offset: i.query.offset, limit: i.query.limit, delimiter: i.query.delimiter ?? '' }),
      response: (r) => ({ ...r, rows: r.rows.map((x) => x.cells) }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.append',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'post',
    effect: 'updates',
    path: '/drive/:id/append',
    summary: 'Append text to a text file (a new version). With `newline`, the text starts on a new line.',
    errors: ['content_damaged', 'item_not_found', 'locked', 'precondition_failed'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({
        text: Text.min(1).describe('The text to add at the end.'),
        newline: z.boolean().default(false).describe('Start on a new line if the file does not end with one.'),
      })
      .strict()
      .meta({ id: 'AppendTextRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.appendText',
      request: (i) => ({ id: i.params.id, text: i.body.text, newline: i.body.newline, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.edit',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'post',
    effect: 'updates',
    path: '/drive/:id/edit',
    summary:
      'Replace exact text in a text file: `find` must occur exactly `expectedOccurrences` times (default 1), else 422 and ' +
      'nothing is written; `replaceAll` replaces every occurrence.',
    errors: ['content_damaged', 'item_not_found', 'occurrences_mismatch', 'text_not_found'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({
        find: z
          .string()
          .min(1)
          .max(1024 * 1024)
          .describe('The exact text to replace.'),
        replace: z
          .string()
          .max(1024 * 1024)
          .describe('Its replacement ("" deletes it).'),
        expectedOccurrences: z
          .number()
          .int()
          .min(1)
          .max(100_000)
          .optional()
          .describe('How many times `find` must occur (default 1); any other count is 422 and nothing is written.'),
        replaceAll: z.boolean().default(false).describe('Replace every occurrence, however many.'),
      })
      .strict()
      .meta({ id: 'EditTextRequest' }),
    response: z.object({ item: DriveItem, replacements: z.number().int() }).meta({ id: 'EditTextResult' }),
    bodyLimit: '3mb',
    handler: {
      rpc: 'drive.editText',
      request: (i) => ({
        id: i.params.id,
        find: i.body.find,
        replace: i.body.replace,
        expected: i.body.expectedOccurrences ?? 0,
        replaceAll: i.body.replaceAll,
        ifMatch: ifMatchOf(i.headers),
      }),
      response: (r) => ({ item: driveItem(r.item!), replacements: r.replacements }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.replaceLines',
    statuses: {
      500: CONTENT_DAMAGED,
      422: 'The lines are outside the file (`line_out_of_range`, with `details.totalLines`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/drive/:id/lines',
    summary: 'Replace lines `start`–`end` (1-based, inclusive) of a text file with `text` ("" deletes them).',
    errors: ['content_damaged', 'item_not_found', 'line_out_of_range'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({
        start: z.number().int().min(1).describe('The first line to replace, 1-based.'),
        end: z.number().int().min(1).describe('The last line to replace (at least start).'),
        text: Text.describe('The new lines.'),
      })
      .strict()
      .refine((b) => b.end >= b.start, { message: 'end: at least start', path: ['end'] })
      .meta({ id: 'ReplaceLinesRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.replaceLines',
      request: (i) => ({ id: i.params.id, start: i.body.start, end: i.body.end, text: i.body.text, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.insertLines',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'post',
    effect: 'updates',
    path: '/drive/:id/lines',
    summary: 'Insert lines into a text file after line `after` (0: at the top).',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({
        after: z.number().int().min(0).describe('The line the text goes after; 0 puts it first.'),
        text: Text.min(1).describe('The lines to insert.'),
      })
      .strict()
      .meta({ id: 'InsertLinesRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.replaceLines',
      request: (i) => ({ id: i.params.id, start: i.body.after + 1, end: i.body.after, text: i.body.text, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
];
