/** The rules of sites that need no storage: slugs, file paths, content types, manifest digests. */
import { createHash } from 'node:crypto';

import mime from 'mime-types';

import { DomainError, nameProblem, normalizeName } from '@svc/kit';

/** A site's title: trimmed, NFC, at most 100 characters, no control or invisible format characters (packages/kit/src/names.ts). */
export function validTitle(raw: string): string {
  const title = normalizeName(raw.trim());
  const problem = title.length > 100 ? 'must be at most 100 characters' : nameProblem(title);
  if (problem) throw new DomainError('invalid_argument', 'invalid_request', `title: ${problem}.`);
  return title;
}

/** Names a public host or path could confuse with the platform's own. */
const RESERVED_SLUGS = new Set(['api', 'www', 'admin', 'app', 'assets', 'static', 'sites', 'mail', 'status', 'docs']);

/**
 * A site's slug: a DNS label in lowercase (1–63 of a-z, 0-9 and "-", not starting or ending with
 * "-"), so that it works as a path segment and as a host name; no punycode prefix, no reserved name.
 */
export function validSlug(slug: string): string {
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(slug)) {
    throw new DomainError(
      'invalid_argument',
      'invalid_slug',
      'A slug is 1–63 lowercase letters, digits and "-", and neither starts nor ends with "-" (a DNS label).',
    );
  }
  if (slug.startsWith('xn--') || RESERVED_SLUGS.has(slug)) {
    throw new DomainError('invalid_argument', 'invalid_slug', `The slug "${slug}" is reserved; choose another.`);
  }
  return slug;
}

export const MAX_PATH_BYTES = 1024;
const MAX_SEGMENT_BYTES = 255;

const badPath = (path: string, why: string) =>
  new DomainError('invalid_argument', 'invalid_path', `File path ${JSON.stringify(path.slice(0, 200))}: ${why}`);

/**
 * A file's path in a site, normalized: Unicode NFC, "." segments dropped. Refused: an absolute
 * path ("/x", "C:x"), "..", empty segments ("a//b", "a/"), backslashes, control characters
 * (NUL among them), a segment over 255 bytes or a path over 1024.
 */
export function normalizeSitePath(raw: string): string {
  if (typeof raw !== 'string' || raw === '') throw badPath(String(raw), 'a path is required.');
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw badPath(raw, 'control characters are not allowed.');
  if (raw.includes('\\')) throw badPath(raw, 'use "/" between folders, not "\\".');
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) throw badPath(raw, 'paths are relative to the site root (no leading "/").');
  const segments = raw.normalize('NFC').split('/');
  const out: string[] = [];
  for (const s of segments) {
    if (s === '.') continue;
    if (s === '..') throw badPath(raw, '".." is not allowed.');
    if (s === '') throw badPath(raw, 'empty folder names ("//", or a trailing "/") are not allowed.');
    if (Buffer.byteLength(s, 'utf8') > MAX_SEGMENT_BYTES) throw badPath(raw, `a name is at most ${MAX_SEGMENT_BYTES} bytes.`);
    out.push(s);
  }
  const path = out.join('/');
  if (path === '') throw badPath(raw, 'it names no file.');
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) throw badPath(raw, `a path is at most ${MAX_PATH_BYTES} bytes.`);
  return path;
}

/** The content type a site file is served with: by its extension, else the drive's (a folder deploy), else octet-stream. */
export function siteContentType(path: string, fallback?: string | null): string {
  const byName = mime.contentType(path.slice(path.lastIndexOf('/') + 1));
  if (byName) return byName;
  if (fallback && /^[\w.+-]+\/[\w.+-]+(\s*;[^\r\n]*)?$/.test(fallback) && fallback.length <= 255) return fallback;
  return 'application/octet-stream';
}

/** Paths in byte order of their UTF-8 (PostgreSQL's COLLATE "C", the order listings use). */
export const byPath = (a: { path: string }, b: { path: string }) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path));

/** The digest of a manifest: SHA-256 of its sorted lines "<path>\0<sha256>\n" (equal manifests, equal digests). */
export function manifestDigest(files: Array<{ path: string; sha256: string }>): string {
  const h = createHash('sha256');
  for (const f of [...files].sort(byPath)) h.update(`${f.path}\0${f.sha256}\n`);
  return h.digest('hex');
}

/** A listing cursor: the id of the last entry served (ids sort by time). */
export function encodeIdCursor(id: string): string {
  return Buffer.from(id).toString('base64url');
}

export function decodeIdCursor(cursor: string, prefix: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!new RegExp(`^${prefix}_[0-9a-z]{26}$`).test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}

export function tooLarge(what: string): DomainError {
  return new DomainError('too_large', 'site_too_large', what);
}
