/**
 * Git objects written and read with isomorphic-git (no git process per object): blobs, trees of
 * nested paths, commits with fixed times (so the same content always makes the same ids), refs.
 */
import fs from 'node:fs';
import path from 'node:path';

import * as git from 'isomorphic-git';

/** Who a commit names as author and committer, and when (seconds since the epoch, UTC). */
export interface Signature {
  name: string;
  email: string;
  timestamp: number;
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

  async blob(content: Uint8Array): Promise<string> {
    return git.writeBlob({ fs, gitdir: this.gitdir, blob: content });
  }

  /** Writes the trees of `files` (slash-separated paths → blob ids): the root tree's id. */
  async tree(files: Map<string, string>): Promise<string> {
    type Dir = Map<string, string | Dir>;
    const root: Dir = new Map();
    for (const [p, oid] of files) {
      const parts = p.split('/');
      let dir = root;
      for (const name of parts.slice(0, -1)) {
        let next = dir.get(name);
        if (typeof next !== 'object') dir.set(name, (next = new Map()));
        dir = next;
      }
      dir.set(parts[parts.length - 1]!, oid);
    }
    const write = async (dir: Dir): Promise<string> => {
      const entries: git.TreeEntry[] = [];
      for (const [name, v] of dir) {
        if (typeof v === 'string') entries.push({ mode: '100644', path: name, oid: v, type: 'blob' });
        else entries.push({ mode: '040000', path: name, oid: await write(v), type: 'tree' });
      }
      // isomorphic-git orders the entries as git does (a tree's name sorts as if it ended in "/").
      return git.writeTree({ fs, gitdir: this.gitdir, tree: entries });
    };
    return write(root);
  }

  async commit(tree: string, parents: string[], who: Signature, message: string): Promise<string> {
    const sig = { name: who.name, email: who.email, timestamp: who.timestamp, timezoneOffset: 0 };
    return git.writeCommit({
      fs,
      gitdir: this.gitdir,
      commit: { tree, parent: parents, author: sig, committer: sig, message: message.endsWith('\n') ? message : `${message}\n` },
    });
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
