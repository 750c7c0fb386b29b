/**
 * Git objects. Written by `git fast-import`, one process per batch (a profile's new versions, a
 * deployment): blobs, the trees of their paths and commits with fixed times, into one pack, so
 * the same content always makes the same ids. Read, and refs kept, with isomorphic-git (no git
 * process at all).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import type * as IsoGit from 'isomorphic-git';

import { lazy } from '@svc/kit';

/** isomorphic-git, loaded at the first Git request (not at start). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const git = lazy(() => require('isomorphic-git') as typeof IsoGit);

/** Who a commit names as author and committer, and when (seconds since the epoch, UTC). */
export interface Signature {
  name: string;
  email: string;
  timestamp: number;
}

/** One commit for fast-import: its files (path → content), parents (commit ids) and message. */
export interface NewCommit {
  files: Map<string, Buffer>;
  parents: string[];
  who: Signature;
  message: string;
}

/** A path as fast-import reads it: C-style quoted when it starts with a quote or holds a newline. */
function quotePath(p: string): string {
  if (!p.startsWith('"') && !p.includes('\n')) return p;
  return `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A name or email as a signature line may hold (no angle brackets, no newlines). */
const clean = (s: string) => s.replace(/[<>\n\r]/g, '') || 'svc';

/**
 * Writes `commits` (in order; a parent may name an earlier one of the batch as `:<index + 1>`)
 * with `git fast-import` into `gitdir`, and returns their ids in the same order. Nothing of a
 * failed import is referenced by any ref.
 */
export async function importCommits(gitdir: string, home: string, commits: NewCommit[]): Promise<string[]> {
  if (!commits.length) return [];
  const marks = path.join(gitdir, `import-marks-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const child = spawn('git', ['fast-import', '--quiet', '--force', '--done', `--export-marks=${marks}`], {
    cwd: gitdir,
    env: { PATH: process.env.PATH, HOME: home, GIT_DIR: gitdir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  child.stdin.on('error', () => undefined);
  const write = async (b: Buffer | string) => {
    if (!child.stdin.write(b)) await new Promise((r) => child.stdin.once('drain', r));
  };
  try {
    for (const [i, c] of commits.entries()) {
      const who = `${clean(c.who.name)} <${clean(c.who.email)}> ${c.who.timestamp} +0000`;
      const message = Buffer.from(c.message.endsWith('\n') ? c.message : `${c.message}\n`);
      // Each commit starts from nothing (reset), names its parents, and lists every file.
      await write(`reset refs/svc/import\ncommit refs/svc/import\nmark :${i + 1}\nauthor ${who}\ncommitter ${who}\ndata ${message.length}\n`);
      await write(message);
      const [first, ...rest] = c.parents;
      let head = first ? `from ${first}\n` : '';
      for (const p of rest) head += `merge ${p}\n`;
      await write(`${head}deleteall\n`);
      for (const [p, content] of c.files) {
        await write(`M 100644 inline ${quotePath(p)}\ndata ${content.length}\n`);
        await write(content);
        await write('\n');
      }
      await write('\n');
    }
    await write('done\n');
    child.stdin.end();
    const code = await exited;
    if (code !== 0) throw new Error(`git fast-import exited with ${code}: ${stderr.trim()}`);
    const byMark = new Map<string, string>();
    for (const line of (await fs.promises.readFile(marks, 'utf8')).split('\n')) {
      const [mark, oid] = line.split(' ');
      if (mark && oid) byMark.set(mark, oid);
    }
    await git.deleteRef({ fs, gitdir, ref: 'refs/svc/import' }).catch(() => undefined);
    return commits.map((_, i) => byMark.get(`:${i + 1}`)!);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await fs.promises.rm(marks, { force: true });
  }
}

/**
 * What a repository may gather before it is packed again: packs (a large fast-import writes one)
 * and loose objects (a small one, under git's fastimport.unpackLimit, writes them loose).
 */
const LIMITS = { packs: 24, loose: 2048 };

/** Repacks (`git repack -ad`, one process) once imports have left more packs or loose objects than `limits`. */
export async function compact(gitdir: string, home: string, limits = LIMITS): Promise<boolean> {
  const objects = path.join(gitdir, 'objects');
  const packs = (await fs.promises.readdir(path.join(objects, 'pack')).catch(() => [] as string[])).filter((n) => n.endsWith('.pack')).length;
  let loose = 0;
  if (packs <= limits.packs) {
    for (const d of await fs.promises.readdir(objects)) {
      if (/^[0-9a-f]{2}$/.test(d)) loose += (await fs.promises.readdir(path.join(objects, d))).length;
    }
    if (loose <= limits.loose) return false;
  }
  await new Promise<void>((resolve, reject) => {
    const child = spawn('git', ['repack', '-adq'], {
      env: { PATH: process.env.PATH, HOME: home, GIT_DIR: gitdir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git repack exited with ${code}`))));
  });
  return true;
}

/** A bare repository, by its git directory. */
export class Repo {
  constructor(readonly gitdir: string) {}

  /** Creates the bare repository (HEAD → refs/heads/main) unless it exists. */
  static async open(gitdir: string): Promise<Repo> {
    if (!fs.existsSync(path.join(gitdir, 'HEAD'))) {
      await git.init({ fs, gitdir, bare: true, defaultBranch: 'main' });
    }
    return new Repo(gitdir);
  }

  async setRef(ref: string, oid: string): Promise<void> {
    await git.writeRef({ fs, gitdir: this.gitdir, ref, value: oid, force: true });
  }

  async deleteRef(ref: string): Promise<void> {
    await git.deleteRef({ fs, gitdir: this.gitdir, ref }).catch(() => undefined);
  }

  async ref(ref: string): Promise<string | undefined> {
    try {
      return await git.resolveRef({ fs, gitdir: this.gitdir, ref });
    } catch {
      return undefined;
    }
  }

  async refs(prefix: string): Promise<string[]> {
    return (await git.listRefs({ fs, gitdir: this.gitdir, filepath: prefix }).catch(() => [] as string[])).map((r) => `${prefix}/${r}`);
  }
}

/** A file of a tree as read back: its path, mode and content. */
export interface TreeFile {
  path: string;
  mode: string;
  content: Buffer;
}

/**
 * The files of a commit's tree, read from the first of `gitdirs` that has each object (a push's
 * temporary repository, then the repository it was pushed onto). Symbolic links and submodules
 * are refused (`invalid`); reading stops with `tooLarge` once the contents pass `maxBytes`.
 */
export async function readCommitFiles(
  gitdirs: string[],
  commit: string,
  maxBytes: number,
): Promise<{ files: TreeFile[] } | { invalid: string } | { tooLarge: true }> {
  const read = async <T>(fn: (gitdir: string) => Promise<T>): Promise<T> => {
    let last: unknown;
    for (const gitdir of gitdirs) {
      try {
        return await fn(gitdir);
      } catch (err) {
        // Not in this repository: try the next one. Any other failure (an object git itself would
        // call unsafe, a path with "\\" or "..") is the answer.
        if ((err as { code?: string }).code !== 'NotFoundError') throw err;
        last = err;
      }
    }
    throw last;
  };
  const cache = {};
  const { commit: c } = await read((gitdir) => git.readCommit({ fs, gitdir, oid: commit, cache }));
  const files: TreeFile[] = [];
  let bytes = 0;
  const walk = async (oid: string, prefix: string): Promise<string | undefined> => {
    const { tree } = await read((gitdir) => git.readTree({ fs, gitdir, oid, cache }));
    for (const e of tree) {
      const p = prefix + e.path;
      if (e.type === 'tree') {
        const problem = await walk(e.oid, `${p}/`);
        if (problem) return problem;
      } else if (e.type === 'commit') {
        return `${p} is a submodule; a site holds files only`;
      } else if (e.mode === '120000') {
        return `${p} is a symbolic link; a site holds files only`;
      } else {
        const { blob } = await read((gitdir) => git.readBlob({ fs, gitdir, oid: e.oid, cache }));
        bytes += blob.byteLength;
        if (bytes > maxBytes) return 'too large';
        files.push({ path: p, mode: e.mode, content: Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength) });
      }
    }
    return undefined;
  };
  let problem: string | undefined;
  try {
    problem = await walk(c.tree, '');
  } catch (err) {
    if ((err as { code?: string }).code !== 'UnsafeFilepathError') throw err;
    return { invalid: `a path is not safe (${(err as Error).message})` };
  }
  if (problem === 'too large') return { tooLarge: true };
  if (problem) return { invalid: problem };
  return { files };
}
