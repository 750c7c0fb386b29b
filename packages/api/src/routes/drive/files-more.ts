/** Drive routes: a version's diff, CSV writes, and the WebDAV side of items (locks, custom properties). */
import { z } from 'zod';

import type { drive } from '@svc/proto';

import { route, Success, Timestamp } from '../../route.js';
import { DriveItem, QUOTA_ERRORS } from './files.js';
import { CONTENT_DAMAGED, DrivePath, FileId, fileParams, idParams, IfMatch, ifMatchOf, itemReply, KEY, ProjectQuery } from './kit.js';

const Diff = z
  .object({
    diff: z.string().describe('The unified diff; "" when equal.'),
    additions: z.number().int(),
    deletions: z.number().int(),
    identical: z.boolean(),
  })
  .meta({ id: 'DriveVersionDiff' });

/** CSV text of rows (RFC 4180: a cell with the delimiter, a quote or a line break is quoted). */
export function csvText(rows: string[][], delimiter = ','): string {
  const cell = (c: string) => (c.includes(delimiter) || /["\r\n]/.test(c) || /^\s|\s$/.test(c) ? `"${c.replace(/"/g, '""')}"` : c);
  return rows.map((r) => r.map(cell).join(delimiter)).join('\n') + (rows.length ? '\n' : '');
}

const Cell = z.union([z.string(), z.number(), z.boolean(), z.null()]).transform((v) => (v === null ? '' : String(v)));
const Rows = z
  .array(z.array(Cell).max(1000))
  .max(100_000)
  .describe('Rows of cells (strings, numbers, booleans or null for an empty cell), at most 1,000 cells a row.');
const Delimiter = z.enum([',', ';', '\t', '|']).default(',').describe('The cell separator (default ",").');

const Lock = z
  .object({
    token: z.string().describe('The lock token (urn:uuid:…).'),
    rootId: z.string().describe('The locked item (this one, or a folder above it locked deep).'),
    rootPath: z.string(),
    scope: z.enum(['exclusive', 'shared']),
    deep: z.boolean().describe('It covers a folder’s members too.'),
    expiresAt: Timestamp,
    holder: z.object({ kind: z.string(), id: z.string() }),
  })
  .meta({ id: 'DriveLock' });
const lock = (l: drive.Lock) => ({
  token: l.token,
  rootId: l.rootId,
  rootPath: l.rootPath,
  scope: l.scope as 'exclusive',
  deep: l.deep,
  expiresAt: l.expiresAt,
  holder: { kind: l.holder?.kind ?? '', id: l.holder?.id ?? '' },
});

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const xmlUnescape = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
/** A property's text when its element holds only text (else null: structured XML). */
const textOf = (xml: string): string | null => {
  const m = /^<([^\s>/]+)[^>]*?(?:\/>|>([^<]*)<\/\1>)$/s.exec(xml.trim());
  return m ? xmlUnescape(m[2] ?? '') : null;
};
const PropName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z_][\w.-]*$/, 'must be an XML name (letters, digits, _ . -)')
  .describe('The property’s name, an XML name (letters, digits, _ . -).');
const Namespace = z.string().max(1024).default('urn:svc:properties').describe('The property’s XML namespace (default urn:svc:properties).');
const PropValue = z.string().max(60_000).describe('The property’s value, as text (at most 60,000 characters).');
const Property = z
  .object({
    namespace: z.string(),
    name: z.string(),
    value: z.string().nullable().describe('The text of the property (null when its value is structured XML: see xml).'),
    xml: z.string().describe('The whole property element, as WebDAV clients set it.'),
  })
  .meta({ id: 'DriveProperty' });
const properties = (i: drive.Item) => ({
  properties: i.properties.map((x) => ({ namespace: x.ns, name: x.name, value: textOf(x.xml), xml: x.xml })),
});
const Properties = z.object({ properties: z.array(Property) }).meta({ id: 'DriveProperties' });

export const driveMoreRoutes = [
  route({
    ...KEY,
    id: 'drive.writeCsv',
    statuses: { ...QUOTA_ERRORS, 201: 'The file did not exist: it was created.' },
    method: 'put',
    effect: 'updates',
    path: '/drive/csv',
    summary:
      'Write rows as a CSV file at a path from the drive root (RFC 4180 quoting; missing folders are made): creates it (201) or replaces it (200, the ' +
      'earlier content kept as a version).',
    headers: IfMatch,
    body: z
      .object({
        path: DrivePath,
        columns: z.array(z.string()).max(1000).optional().describe('The header row.'),
        rows: Rows.describe('The data rows: cells as strings, numbers, booleans or null (empty).'),
        delimiter: Delimiter,
        projectId: ProjectQuery,
      })
      .strict()
      .meta({ id: 'WriteCsvRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.writeText',
      request: (i) => ({
        path: i.body.path,
        content: csvText([...(i.body.columns ? [i.body.columns] : []), ...i.body.rows], i.body.delimiter),
        contentType: 'text/csv; charset=utf-8',
        projectId: i.body.projectId,
        ifMatch: ifMatchOf(i.headers),
      }),
      response: (r) => itemReply(r, true),
    },
  }),
  route({
    ...KEY,
    id: 'drive.appendCsv',
    statuses: { ...QUOTA_ERRORS, 500: CONTENT_DAMAGED },
    method: 'post',
    effect: 'updates',
    path: '/drive/:id/csv',
    summary: 'Append rows to a CSV file (RFC 4180 quoting), each on a line of its own.',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({ rows: Rows.min(1), delimiter: Delimiter })
      .strict()
      .meta({ id: 'AppendCsvRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.appendText',
      request: (i) => ({ id: i.params.id, text: csvText(i.body.rows, i.body.delimiter), newline: true, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.versions.diff',
    statuses: { 500: CONTENT_DAMAGED },
    method: 'get',
    path: '/drive/:id/versions/:versionId/diff',
    summary: 'A unified diff from an earlier version of a text file to its current content: what changed since.',
    errors: ['content_damaged', 'item_not_found', 'version_not_found'],
    params: z.object({
      id: FileId,
      versionId: z
        .string()
        .regex(/^ver_[0-9a-z]{26}$/, 'must be a version id (ver_…)')
        .describe('The older version to compare with the current content (ver_…).'),
    }),
    response: Diff,
    handler: { rpc: 'drive.diffVersion', request: (i) => ({ id: i.params.id, versionId: i.params.versionId }), response: (r) => r },
  }),
  route({
    ...KEY,
    id: 'drive.locks.list',
    method: 'get',
    path: '/drive/:id/locks',
    summary: 'The WebDAV locks covering an item: its own and those of folders above it locked deep (a write needs their token).',
    errors: ['item_not_found'],
    params: idParams,
    response: z.object({ locks: z.array(Lock) }).meta({ id: 'DriveLocks' }),
    handler: {
      rpc: 'drive.getItem',
      request: (i) => ({ id: i.params.id, includeDetails: true }),
      response: (r) => ({ locks: r.item!.locks.map(lock) }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.locks.release',
    statuses: {
      409: 'No lock with that token covers the item (`lock_token_mismatch`).',
    },
    method: 'delete',
    path: '/drive/:id/locks',
    summary: 'Release a WebDAV lock you hold on an item (a client that crashed left it): 403 lock_not_yours for another holder’s.',
    errors: ['item_not_found', 'lock_token_mismatch'],
    params: idParams,
    query: z.object({ token: z.string().min(1).max(200).describe('The lock token (urn:uuid:…).') }),
    response: Success,
    handler: {
      rpc: 'drive.unlockItem',
      request: (i) => ({ id: i.params.id, token: i.query.token }),
      response: () => ({ success: true as const }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.properties.list',
    method: 'get',
    path: '/drive/:id/properties',
    summary: 'An item’s custom (WebDAV dead) properties: namespace, name, text value and XML.',
    errors: ['item_not_found'],
    params: idParams,
    response: Properties,
    handler: { rpc: 'drive.getItem', request: (i) => ({ id: i.params.id, includeDetails: true }), response: (r) => properties(r.item!) },
  }),
  route({
    ...KEY,
    id: 'drive.properties.set',
    method: 'put',
    effect: 'overwrites',
    path: '/drive/:id/properties',
    summary: 'Set a custom property of an item to a text value (WebDAV clients see it in PROPFIND); answers the item’s properties.',
    errors: ['item_not_found'],
    params: idParams,
    body: z.object({ namespace: Namespace, name: PropName, value: PropValue }).strict().meta({ id: 'SetPropertyRequest' }),
    response: Properties,
    handler: {
      rpc: 'drive.setProperties',
      request: (i) => ({
        id: i.params.id,
        patches: [
          {
            ns: i.body.namespace,
            name: i.body.name,
            xml: `<${i.body.name} xmlns="${xmlEscape(i.body.namespace).replace(/"/g, '&quot;')}">${xmlEscape(i.body.value)}</${i.body.name}>`,
          },
        ],
        lockTokens: [],
      }),
      response: (r) => properties(r.item!),
    },
  }),
  route({
    ...KEY,
    id: 'drive.properties.delete',
    method: 'delete',
    path: '/drive/:id/properties',
    summary: 'Remove a custom property of an item (absent: nothing to do); answers the item’s properties.',
    errors: ['item_not_found'],
    params: idParams,
    query: z.object({ namespace: Namespace, name: PropName }),
    response: Properties,
    handler: {
      rpc: 'drive.setProperties',
      request: (i) => ({ id: i.params.id, patches: [{ ns: i.query.namespace, name: i.query.name }], lockTokens: [] }),
      response: (r) => properties(r.item!),
    },
  }),
];
