/** Archives: a folder zipped into a file, and a zip or tar file extracted into a folder. */
import { gunzipSync } from 'node:zlib';

import { strToU8, unzipSync, zipSync } from 'fflate';

import { DomainError, eachAtMost, type Principal } from '@svc/kit';

import { type DriveDomain, writer } from '../items/domain.js';
import { validName } from '../items/rules.js';
import type { ItemRow } from '../items/store.js';
import { createFolder } from '../items/tree.js';
import { charge, precheck } from '../quotas/quotas.js';
import { notAFolder, readBytes, TOOL_MAX_BYTES, writeBytes } from './io.js';
import { files } from './paths.js';

const MAX_ENTRIES = 2000;
/** Files an extract writes at once. */
const EXTRACT_PARALLEL = 4;

const invalid = (why: string) => new DomainError('invalid_argument', 'invalid_archive', `The archive could not be read: ${why}`);

/** Zips everything under a folder into a new file (by default "<folder>.zip" next to it). */
export async function zipFolder(drive: DriveDomain, p: Principal, input: { id: string; parentId?: string; name?: string }) {
  writer(p);
  const folder = await drive.visible(drive.sql, p, input.id);
  if (folder.kind !== 'folder') throw notAFolder();
  const name = validName(input.name || `${folder.name}.zip`);
  const rows = await files.walk(drive.sql, p.accountId, { folderId: folder.id }, 100, MAX_ENTRIES + 1);
  if (rows.length > MAX_ENTRIES) throw new DomainError('too_large', 'too_many_files', `The folder holds more than ${MAX_ENTRIES} items.`);
  const total = rows.reduce((n, r) => n + (r.kind === 'file' ? r.size : 0), 0);
  if (total > TOOL_MAX_BYTES)
    throw new DomainError('too_large', 'folder_too_large', `The folder holds ${total} bytes; at most ${TOOL_MAX_BYTES} are zipped here.`);
  const entries: Record<string, Uint8Array> = {};
  for (const r of rows) {
    if (r.kind === 'folder') entries[`${r.path}/`] = strToU8('');
    else entries[r.path] = await readBytes(drive, r);
  }
  const zip = Buffer.from(zipSync(entries, { level: 6 }));
  const parentId = input.parentId ?? folder.parent_id ?? undefined;
  return writeBytes(
    drive,
    p,
    { parentId, projectId: parentId ? undefined : (folder.project_id ?? undefined), name, ifNoneMatch: '*', contentType: 'application/zip' },
    zip,
  );
}

/** The entries of a ustar/GNU tar (optionally gzipped): files and folders. */
export function untar(buf: Buffer): Array<{ path: string; content?: Buffer }> {
  if (buf[0] === 0x1f && buf[1] === 0x8b) {
    try {
      buf = gunzipSync(buf, { maxOutputLength: TOOL_MAX_BYTES * 4 });
    } catch (err) {
      throw invalid((err as Error).message);
    }
  }
  const out: Array<{ path: string; content?: Buffer }> = [];
  let off = 0;
  let longName: string | undefined;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (a: number, n: number) =>
      h
        .subarray(a, a + n)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = parseInt(str(124, 12).trim() || '0', 8);
    if (!Number.isFinite(size) || size < 0) throw invalid('a bad entry size');
    const type = String.fromCharCode(h[156]!);
    const prefix = str(345, 155);
    let name = longName ?? (prefix ? `${prefix}/${str(0, 100)}` : str(0, 100));
    longName = undefined;
    const body = buf.subarray(off + 512, off + 512 + size);
    if (body.length < size) throw invalid('it is cut short');
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = body.toString('utf8').replace(/\0.*$/s, '');
      continue;
    }
    name = name.replace(/^\.\//, '');
    if (type === '5') out.push({ path: name });
    else if (type === '0' || type === '\0' || type === '7') out.push({ path: name, content: Buffer.from(body) });
  }
  return out;
}

function entriesOf(bytes: Buffer, format: string): Array<{ path: string; content?: Buffer }> {
  if (format === 'zip') {
    let count = 0;
    let total = 0;
    try {
      const entries = unzipSync(bytes, {
        filter: (f) => {
          count++;
          total += f.originalSize;
          if (count > MAX_ENTRIES || total > TOOL_MAX_BYTES * 4)
            throw new DomainError('too_large', 'archive_too_large', 'The archive holds too much.');
          return true;
        },
      });
      return Object.entries(entries).map(([path, c]) => (path.endsWith('/') ? { path } : { path, content: Buffer.from(c) }));
    } catch (err) {
      if (err instanceof DomainError) throw err;
      throw invalid((err as Error).message);
    }
  }
  return untar(bytes);
}

/** Extracts an archive file (zip, tar, tar.gz) into a folder: a new one named after the archive unless one is given. */
export async function extractArchive(drive: DriveDomain, p: Principal, input: { id: string; parentId?: string; format: string; overwrite: boolean }) {
  writer(p);
  const file = await drive.visible(drive.sql, p, input.id);
  const lower = file.name.toLowerCase();
  const format = input.format || (lower.endsWith('.zip') ? 'zip' : /\.(tar|tgz|tar\.gz)$/.test(lower) ? 'tar' : '');
  if (format !== 'zip' && format !== 'tar')
    throw new DomainError('invalid_argument', 'invalid_request', 'format: zip or tar (not guessable from the name).');
  const entries = entriesOf(await readBytes(drive, file), format);
  if (entries.length > MAX_ENTRIES) throw new DomainError('too_large', 'archive_too_large', `At most ${MAX_ENTRIES} entries.`);
  // Every path is checked before anything is written.
  const clean = entries.map((e) => {
    const segs = e.path.split('/').filter((s) => s !== '' && s !== '.');
    if (!segs.length || segs.some((s) => s === '..')) throw invalid(`the entry "${e.path}" leaves its folder`);
    return { segs: segs.map((s) => validName(s)), content: e.content };
  });
  // The quotas before anything is written: the entries' bytes must fit, and the extract is one write.
  const quotas = drive.settings.quotas;
  await precheck(
    drive.sql,
    p.accountId,
    quotas,
    clean.reduce((n, e) => n + (e.content?.length ?? 0), 0),
  );
  await drive.tx((q) => charge(q, p.accountId, quotas, 0));
  let root: ItemRow;
  if (input.parentId) {
    root = await drive.visible(drive.sql, p, input.parentId);
    if (root.kind !== 'folder') throw notAFolder();
  } else {
    // A folder named after the archive, next to it: "name", else "name (2)", "name (3)", ...
    const base = file.name.replace(/\.(zip|tar|tgz|tar\.gz)$/i, '') || 'archive';
    const place = { accountId: p.accountId, projectId: file.project_id, parentId: file.parent_id };
    let name = base;
    for (let n = 2; await drive.store.byName(drive.sql, place, name); n++) {
      if (n > 100) throw new DomainError('conflict', 'name_taken', `Too many items named like "${base}" here; name a folder (parentId).`);
      name = `${base} (${n})`;
    }
    root = await createFolder(drive, p, {
      parentId: file.parent_id ?? undefined,
      projectId: file.parent_id ? undefined : (file.project_id ?? undefined),
      name,
      lockTokens: [],
    });
  }
  const folders = new Map<string, string>([['', root.id]]);
  let made = 0;
  const folderOf = async (segs: string[]): Promise<string> => {
    const key = segs.join('/');
    const known = folders.get(key);
    if (known) return known;
    const parent = await folderOf(segs.slice(0, -1));
    const place = { accountId: p.accountId, projectId: root.project_id, parentId: parent };
    let row = await drive.store.byName(drive.sql, place, segs[segs.length - 1]!);
    if (row && row.kind !== 'folder') throw new DomainError('conflict', 'name_taken', `"${key}" is a file in the target folder.`);
    if (!row) {
      row = await createFolder(drive, p, { parentId: parent, name: segs[segs.length - 1]!, lockTokens: [] });
      made++;
    }
    folders.set(key, row.id);
    return row.id;
  };
  // The folders first, in the archive's order; then the files, a few at a time (each is its own
  // durable write: its flushes overlap). A path named twice is written in order, one at a time.
  const writes: Array<{ parentId: string; name: string; content: Buffer }> = [];
  for (const e of clean) {
    if (!e.content) await folderOf(e.segs);
    else writes.push({ parentId: await folderOf(e.segs.slice(0, -1)), name: e.segs[e.segs.length - 1]!, content: e.content });
  }
  const paths = new Set(writes.map((w) => `${w.parentId}/${w.name}`));
  const written = await eachAtMost(paths.size === writes.length ? EXTRACT_PARALLEL : 1, writes, (w) =>
    writeBytes(drive, p, { parentId: w.parentId, name: w.name, overwrite: input.overwrite, uncounted: true }, w.content),
  );
  return { folder: root, files: written, folders: made };
}
