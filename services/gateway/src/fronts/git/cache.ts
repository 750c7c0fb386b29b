/**
 * Where the Git front keeps its repositories: one directory per gateway process (made at start,
 * removed at stop), one bare repository per profile or site in it, and a lock per repository so
 * that one request at a time brings it up to date (others wait, then find it current).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class GitCache {
  readonly root: string;
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(parent = os.tmpdir()) {
    this.root = fs.mkdtempSync(path.join(parent, 'svc-git-'));
  }

  /** The git directory of a repository (`kind`: profiles or sites; `id` a profile or site id). */
  gitdir(kind: 'profiles' | 'sites', id: string): string {
    return path.join(this.root, kind, `${id}.git`);
  }

  /** A fresh directory for one push, inside the cache (removed by the caller). */
  scratch(): string {
    fs.mkdirSync(path.join(this.root, 'tmp'), { recursive: true });
    return fs.mkdtempSync(path.join(this.root, 'tmp', 'push-'));
  }

  /** Runs `fn` once the calls before it on `key` are done. */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  async close(): Promise<void> {
    await fs.promises.rm(this.root, { recursive: true, force: true });
  }
}
