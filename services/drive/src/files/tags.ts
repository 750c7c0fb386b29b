/** Tags: short labels on files and folders, to organise and find them. */
import { DomainError, type Principal } from '@svc/kit';

import { type DriveDomain, writer } from '../items/domain.js';
import { files, type PathItem } from './paths.js';

const TAG = /^[\p{L}\p{N}][\p{L}\p{N} _.:/-]{0,63}$/u;

/** A tag as it is stored and compared: trimmed, Unicode NFC (as names are), lowercase. */
const tagOf = (t: string) => t.trim().normalize('NFC').toLowerCase();

export function validTags(tags: string[]): string[] {
  const out = [...new Set(tags.map(tagOf))];
  for (const t of out) {
    if (!TAG.test(t))
      throw new DomainError(
        'invalid_argument',
        'invalid_tag',
        `"${t}": a tag is 1–64 letters, digits, spaces and _ . : / -, starting with a letter or digit.`,
      );
  }
  if (out.length > 50) throw new DomainError('invalid_argument', 'invalid_tag', 'At most 50 tags per item.');
  return out;
}

export async function getTags(drive: DriveDomain, p: Principal, id: string) {
  const row = await drive.visible(drive.sql, p, id);
  return { id: row.id, tags: await files.tags(drive.sql, row.id) };
}

/** Adds tags (`replace`: the item's tags become exactly these). */
export async function setTags(drive: DriveDomain, p: Principal, input: { id: string; tags: string[] }, replace: boolean) {
  writer(p);
  const tags = validTags(input.tags);
  return drive.tx(async (q) => {
    const row = await drive.visible(q, p, input.id, true);
    if (replace) await files.removeTags(q, row.id, 'all');
    await files.addTags(q, p.accountId, row.id, tags);
    const all = await files.tags(q, row.id);
    if (all.length > 50) throw new DomainError('invalid_argument', 'invalid_tag', 'At most 50 tags per item.');
    await drive.emit(q, `drive.${row.kind}.tagged`, row, { tags: all });
    return { id: row.id, tags: all };
  });
}

export async function removeTags(drive: DriveDomain, p: Principal, input: { id: string; tags: string[] }) {
  writer(p);
  const tags = input.tags.map(tagOf);
  return drive.tx(async (q) => {
    const row = await drive.visible(q, p, input.id, true);
    await files.removeTags(q, row.id, tags);
    const all = await files.tags(q, row.id);
    await drive.emit(q, `drive.${row.kind}.tagged`, row, { tags: all });
    return { id: row.id, tags: all };
  });
}

export async function listTags(drive: DriveDomain, p: Principal, projectId: string | undefined) {
  const scoped = p.projectId || projectId ? drive.rootProject(p, projectId) : undefined;
  return files.tagCounts(drive.sql, p.accountId, scoped);
}

export async function taggedItems(drive: DriveDomain, p: Principal, input: { tag: string; projectId?: string; limit: number; cursor?: string }) {
  const [tag] = validTags([input.tag]);
  if (input.cursor && !/^(file|fld)_[0-9a-z]{26}$/.test(input.cursor))
    throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  const scoped = p.projectId || input.projectId ? drive.rootProject(p, input.projectId) : undefined;
  const limit = Math.min(Math.max(input.limit || 50, 1), 200);
  const rows = await files.tagged(drive.sql, p.accountId, scoped, tag!, input.cursor, limit + 1);
  const page = rows.slice(0, limit);
  const items: PathItem[] = [];
  for (const row of page) {
    const { path } = await drive.ancestry(drive.sql, p.accountId, row.id);
    items.push({ row, path, depth: path.split('/').length });
  }
  return { items, nextCursor: rows.length > limit ? page[page.length - 1]!.id : undefined };
}
