import { DriveName, MAX_DRIVE_NAME_BYTES } from '@svc/contract';
import { DomainError, parseInput } from '@svc/kit';

import type { ItemRow } from './store.js';

/** The ETag of an item: the quoted SHA-256 of a file's content; an opaque version tag for a folder. */
export function etagOf(r: Pick<ItemRow, 'id' | 'kind' | 'sha256' | 'version'>): string {
  return r.kind === 'file' ? `"${r.sha256}"` : `"${r.id}.${r.version}"`;
}

export const MAX_NAME_BYTES = MAX_DRIVE_NAME_BYTES;

/** A file or folder name, in NFC, as the shared schema says (@svc/contract DriveName): 400 `invalid_name` otherwise. */
export function validName(given: string | undefined): string {
  return parseInput(DriveName, given ?? '', { code: 'invalid_name' });
}

const TYPES: Record<string, string> = {
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  json: 'application/json',
  xml: 'application/xml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  mp3: 'audio/mpeg',
  mp4: 'video/mp4',
  wasm: 'application/wasm',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
};

/** The content type a client gave (sanitized), or one guessed from the name's extension. */
export function contentTypeFor(given: string | undefined, name: string): string {
  const g = given?.trim();
  if (g && g.length <= 255 && /^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(g) && !/[\r\n]/.test(g)) return g;
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  return TYPES[ext] ?? 'application/octet-stream';
}

/** Cursors of a folder listing: the position of the last item served. */
export function encodeCursor(r: Pick<ItemRow, 'kind' | 'name' | 'id'>): string {
  return Buffer.from(JSON.stringify([r.kind === 'folder' ? 0 : 1, r.name, r.id])).toString('base64url');
}

export function decodeCursor(c: string): { rank: number; name: string; id: string } {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(v) &&
      v.length === 3 &&
      (v[0] === 0 || v[0] === 1) &&
      typeof v[1] === 'string' &&
      typeof v[2] === 'string' &&
      /^(file|fld)_[0-9a-z]{26}$/.test(v[2])
    ) {
      return { rank: v[0], name: v[1], id: v[2] };
    }
  } catch {
    // fall through
  }
  throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
}

/** PostgreSQL's SQLSTATE of an error (pg and PGlite both expose `code`). */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code : undefined;
}
