import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { ControlError } from '../units/units.js';

const MAX_PATH = 1024;

/** Is `child` the folder `root` or inside it (both real, absolute paths)? */
export function within(root: string, child: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * A path inside the project folder, from what a caller gave: relative, `/`-separated, no `..`
 * segment, no NUL, no drive or absolute path. Returns the normalized relative path (`a/b.md`).
 */
export function checkRelative(given: string): string {
  if (typeof given !== 'string' || given.length === 0 || given.length > MAX_PATH) {
    throw new ControlError('invalid_path', `path: must be 1 to ${MAX_PATH} characters`, 400);
  }
  if (given.includes('\0')) throw new ControlError('invalid_path', 'path: must not contain NUL', 400);
  if (path.posix.isAbsolute(given) || path.win32.isAbsolute(given) || /^[A-Za-z]:/.test(given)) {
    throw new ControlError('path_outside_project', `path: ${JSON.stringify(given)} is absolute; paths are relative to the project folder`, 403);
  }
  const parts = given.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) {
    throw new ControlError('path_outside_project', `path: ${JSON.stringify(given)} has a ".." segment; paths stay inside the project folder`, 403);
  }
  if (parts.length === 0) throw new ControlError('invalid_path', 'path: names no file', 400);
  return parts.join('/');
}

/**
 * The real location of a project path, refused when it (or the folder it would be created in)
 * resolves outside the project through a symlink. `mustExist` false: the file may not exist yet,
 * then its nearest existing ancestor is checked.
 */
export async function confine(root: string, rel: string, mustExist: boolean): Promise<{ abs: string; real: string | null }> {
  const abs = path.join(root, rel);
  let real: string | null = null;
  try {
    real = await fs.promises.realpath(abs);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // A symlink pointing at nothing is refused too: writing through it would create its target.
    const link = await fs.promises.lstat(abs).catch(() => null);
    if (link?.isSymbolicLink()) {
      throw new ControlError('path_outside_project', `path: ${rel} is a symlink to a missing target; refused`, 403);
    }
    if (mustExist) throw new ControlError('not_found', `There is no file ${rel} in the project.`, 404);
  }
  if (real !== null) {
    if (!within(root, real)) throw new ControlError('path_outside_project', `path: ${rel} leads outside the project folder (symlink); refused`, 403);
    return { abs, real };
  }
  // Not there yet: the nearest existing ancestor must be inside.
  let dir = path.dirname(abs);
  for (;;) {
    const r = await fs.promises.realpath(dir).catch(() => null);
    if (r !== null) {
      if (!within(root, r)) throw new ControlError('path_outside_project', `path: ${rel} leads outside the project folder (symlink); refused`, 403);
      break;
    }
    dir = path.dirname(dir);
  }
  return { abs, real: null };
}

/**
 * Writes a file so that a reader sees the old bytes or the new ones, never a part: a temporary
 * file in the same folder, fsync'd, renamed over the target, then the folder fsync'd (the rename
 * itself on disk).
 */
export async function writeAtomic(file: string, data: string | Buffer, mode = 0o644): Promise<void> {
  const dir = path.dirname(file);
  await fs.promises.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fs.promises.open(tmp, 'wx', mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  try {
    await fs.promises.rename(tmp, file);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  await syncDir(dir);
}

export async function syncDir(dir: string): Promise<void> {
  let dh: fs.promises.FileHandle | undefined;
  try {
    dh = await fs.promises.open(dir, 'r');
    await dh.sync();
  } catch (err) {
    // Some platforms (Windows) cannot open or fsync a folder; the rename is still atomic there.
    if (!['EISDIR', 'EPERM', 'EINVAL', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    await dh?.close();
  }
}

/** Runs `fn` after every earlier call with the same key has finished (a per-key mutex in this process). */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }
}
