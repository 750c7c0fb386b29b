/** A file's earlier contents: listed, read, restored (as a new version) and deleted. */
import { DomainError, ifMatchPasses, type Principal } from '@svc/kit';

import type { DriveDomain } from '../items/domain.js';
import { stale } from '../items/errors.js';
import { etagOf } from '../items/rules.js';
import { unifiedDiff } from './diff.js';
import { isText, notAFile, readBlob, readText, TOOL_MAX_BYTES, writeBytes } from './io.js';
import { files } from './paths.js';
import type { VersionRow } from './store.js';
import { splitLines } from './text.js';

const versionNotFound = () => new DomainError('not_found', 'version_not_found', 'Version not found.');

async function fileOf(drive: DriveDomain, p: Principal, id: string) {
  const row = await drive.visible(drive.sql, p, id);
  if (row.kind !== 'file') throw notAFile();
  return row;
}

export async function listVersions(drive: DriveDomain, p: Principal, input: { id: string; limit: number; cursor?: string }) {
  const row = await fileOf(drive, p, input.id);
  if (input.cursor && !/^ver_[0-9a-z]{26}$/.test(input.cursor))
    throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  const limit = Math.min(Math.max(input.limit || 50, 1), 200);
  const rows = await files.versions(drive.sql, row.id, input.cursor, limit + 1);
  const page = rows.slice(0, limit);
  return { versions: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : undefined };
}

async function versionOf(drive: DriveDomain, p: Principal, id: string, versionId: string): Promise<VersionRow> {
  const row = await fileOf(drive, p, id);
  const v = await files.version(drive.sql, row.id, versionId);
  if (!v) throw versionNotFound();
  return v;
}

export async function readVersion(drive: DriveDomain, p: Principal, input: { id: string; versionId: string }) {
  const v = await versionOf(drive, p, input.id, input.versionId);
  if (v.size > TOOL_MAX_BYTES)
    throw new DomainError('too_large', 'file_too_large', `The version has ${v.size} bytes; at most ${TOOL_MAX_BYTES} are read here.`);
  const b = v.size ? await readBlob(drive, v.account_id, v.sha256) : Buffer.alloc(0);
  const text = isText(b);
  return { version: v, content: b.toString(text ? 'utf8' : 'base64'), encoding: text ? 'utf8' : 'base64' };
}

/** Makes an earlier content the file's current one (the content it replaces becomes a version in turn). */
export async function restoreVersion(drive: DriveDomain, p: Principal, input: { id: string; versionId: string; ifMatch?: string }) {
  const v = await versionOf(drive, p, input.id, input.versionId);
  const row = await fileOf(drive, p, input.id);
  if (input.ifMatch !== undefined && !ifMatchPasses(input.ifMatch, etagOf(row))) throw stale(row);
  const b = v.size ? await readBlob(drive, v.account_id, v.sha256) : Buffer.alloc(0);
  return writeBytes(drive, p, { itemId: row.id, ifMatch: input.ifMatch ?? etagOf(row), contentType: v.content_type }, b);
}

export async function deleteVersion(drive: DriveDomain, p: Principal, input: { id: string; versionId: string }) {
  const row = await fileOf(drive, p, input.id);
  await drive.tx(async (q) => {
    const v = await files.version(q, row.id, input.versionId);
    if (!v) return; // Already gone: DELETE is idempotent.
    await files.deleteVersion(q, row.id, v.id);
    await drive.store.release(q, p.accountId, [v.sha256], drive.settings.graceSeconds);
  });
}

/** What changed from an earlier version (text) to the file's current content. */
export async function diffVersion(drive: DriveDomain, p: Principal, input: { id: string; versionId: string }) {
  const v = await versionOf(drive, p, input.id, input.versionId);
  const row = await fileOf(drive, p, input.id);
  const max = 1024 * 1024;
  if (v.size > max) throw new DomainError('too_large', 'file_too_large', `The version has ${v.size} bytes; at most ${max} are compared.`);
  const old = v.size ? await readBlob(drive, v.account_id, v.sha256) : Buffer.alloc(0);
  if (!isText(old)) throw new DomainError('invalid_argument', 'not_text', 'The version is not UTF-8 text.');
  const current = await readText(drive, row, max);
  const { path } = await drive.ancestry(drive.sql, p.accountId, row.id);
  return unifiedDiff(splitLines(old.toString('utf8')), splitLines(current), `a/${path}@${v.id}`, `b/${path}`, 3);
}
