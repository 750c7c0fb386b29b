/**
 * A taste profile as a read-only Git repository (docs/git.md): one branch per profile branch, one
 * commit per version (its message, its time, its author), each commit's tree the version's
 * snapshot as pretty JSON files. Deterministic: the same version always makes the same commit id,
 * on every replica. The repository is brought up to date on each request: only versions it does
 * not hold yet are read from the profiles service (ExportHistory) and written.
 */
import type { ProfilesCalls } from '@svc/dispatch';

import type { GitCache } from './cache.js';
import { compact, importCommits, type NewCommit, Repo, type Signature } from './objects.js';

interface Author {
  kind: string;
  id: string;
}

interface VersionMeta {
  id: string;
  branchId: string;
  parentVersionId: string | null;
  mergeParentId: string | null;
  message: string;
  createdAt: string;
  createdBy: Author | null;
}

interface HistoryDoc {
  branches: Array<{ id: string; name: string; headVersionId: string | null }>;
  versions: VersionMeta[];
  snapshots: Array<{ id: string; snapshot: unknown }>;
}

interface State {
  repo: Repo;
  /** What the repository reflects: versions and branch heads. */
  key: string;
  /** Version id → commit id. */
  commits: Map<string, string>;
  /** Ref → commit id, as written. */
  refs: Map<string, string>;
}

/** The sections every tree holds (empty when the snapshot lacks them), one file each. */
const SECTIONS: Record<string, unknown> = { constraints: [], exemplars: [], comparisons: [], latentScores: {} };
/** Versions whose snapshots one ExportHistory call asks for (the service also caps the bytes). */
const BATCH = 500;

const pretty = (v: unknown) => Buffer.from(`${JSON.stringify(v, null, 2)}\n`);

/**
 * A snapshot's files: `constraints.json`, `exemplars.json`, `comparisons.json`,
 * `latentScores.json`, then `<key>.json` for each other key (computed data such as
 * `promptSummary`), and `other.json` for keys that are no file name.
 */
export function snapshotFiles(snapshot: unknown): Map<string, Buffer> {
  const s = snapshot && typeof snapshot === 'object' && !Array.isArray(snapshot) ? (snapshot as Record<string, unknown>) : {};
  const files = new Map<string, Buffer>();
  for (const [k, empty] of Object.entries(SECTIONS)) files.set(`${k}.json`, pretty(s[k] ?? empty));
  const other: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k in SECTIONS) continue;
    if (/^[A-Za-z][A-Za-z0-9_-]{0,100}$/.test(k) && k !== 'other') files.set(`${k}.json`, pretty(v));
    else other[k] = v;
  }
  if (Object.keys(other).length) files.set('other.json', pretty(other));
  return files;
}

/** Whether `name` is a valid branch name for git (git check-ref-format's rules). */
export function validBranchName(name: string): boolean {
  if (!name || name.length > 200 || name === '@' || name === 'HEAD') return false;
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(name) || name.includes('..') || name.includes('@{')) return false;
  if (name.endsWith('.')) return false;
  return name.split('/').every((c) => c !== '' && !c.startsWith('.') && !c.endsWith('.lock'));
}

/**
 * Each branch's ref: `refs/heads/<its name>`; a name git cannot take (or that collides) becomes
 * `refs/heads/svc/<its id>`, made valid.
 */
export function branchRefs(branches: Array<{ id: string; name: string }>): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  for (const b of branches) {
    let name = b.name;
    if (!validBranchName(name) || taken.has(name)) {
      name = `svc/${b.id.replace(/[^A-Za-z0-9_-]+/g, '-')}`;
      let n = 2;
      while (taken.has(name)) name = `svc/${b.id.replace(/[^A-Za-z0-9_-]+/g, '-')}-${n++}`;
    }
    taken.add(name);
    out.set(b.id, `refs/heads/${name}`);
  }
  return out;
}

/** Versions ordered so that each comes after its parents (the service's order, when it already is). */
function parentsFirst(versions: VersionMeta[]): VersionMeta[] {
  const byId = new Map(versions.map((v) => [v.id, v]));
  const done = new Set<string>();
  const out: VersionMeta[] = [];
  for (const start of versions) {
    const stack = [start];
    while (stack.length) {
      const v = stack[stack.length - 1]!;
      if (done.has(v.id)) {
        stack.pop();
        continue;
      }
      const pending = [v.parentVersionId, v.mergeParentId]
        .map((id) => (id ? byId.get(id) : undefined))
        .filter((p): p is VersionMeta => p !== undefined && !done.has(p.id) && !stack.includes(p));
      if (pending.length) stack.push(...pending);
      else {
        done.add(v.id);
        out.push(v);
        stack.pop();
      }
    }
  }
  return out;
}

function signature(v: VersionMeta): Signature {
  const timestamp = Math.floor(Date.parse(v.createdAt) / 1000);
  const by = v.createdBy;
  return by ? { name: by.id, email: `${by.id}@${by.kind}.svc.invalid`, timestamp } : { name: 'svc', email: 'svc@svc.invalid', timestamp };
}

/**
 * How long the requests of one exchange (a clone's ls-refs and fetch after its info/refs) reuse
 * the repository as the info/refs left it, for the same key, without asking the service again.
 */
const EXCHANGE_MS = 5_000;

export class ProfileRepos {
  private readonly states = new Map<string, State>();
  /** `<keyId> <profileId>` → when that key last read that profile's history (its access checked). */
  private readonly recent = new Map<string, number>();

  constructor(private readonly deps: { cache: GitCache }) {}

  private async history(id: string, snapshotVersionIds: string[], profiles: ProfilesCalls): Promise<HistoryDoc> {
    const r = await profiles.exportHistory({ id, snapshotVersionIds, maxBytes: 0 });
    return JSON.parse(r.json) as HistoryDoc;
  }

  /**
   * The profile's repository, up to date with its history (the caller's principal reads it: a
   * profile it may not see is not found). Returns its git directory.
   */
  async sync(profileId: string, profiles: ProfilesCalls, exchange?: { keyId: string; continues: boolean }): Promise<string> {
    const gitdir = this.deps.cache.gitdir('profiles', profileId);
    const seen = exchange ? `${exchange.keyId} ${profileId}` : undefined;
    if (seen && exchange!.continues && this.states.get(profileId)?.key && (this.recent.get(seen) ?? 0) > Date.now() - EXCHANGE_MS) return gitdir;
    const doc = await this.history(profileId, [], profiles);
    if (seen) {
      if (this.recent.size > 10_000) this.recent.clear();
      this.recent.set(seen, Date.now());
    }
    const key = JSON.stringify([doc.versions.length, doc.versions.at(-1)?.id ?? null, doc.branches.map((b) => [b.id, b.name, b.headVersionId])]);
    if (this.states.get(profileId)?.key === key) return gitdir;
    return this.deps.cache.exclusive(`profiles/${profileId}`, async () => {
      let st = this.states.get(profileId);
      if (st?.key === key) return gitdir;
      if (!st) {
        st = { repo: await Repo.open(gitdir), key: '', commits: new Map(), refs: new Map() };
        this.states.set(profileId, st);
      }
      await this.write(st, profileId, doc, profiles);
      st.key = key;
      return gitdir;
    });
  }

  private async write(st: State, profileId: string, doc: HistoryDoc, profiles: ProfilesCalls): Promise<void> {
    const missing = parentsFirst(doc.versions).filter((v) => !st.commits.has(v.id));
    let i = 0;
    while (i < missing.length) {
      const batch = await this.history(
        profileId,
        missing.slice(i, i + BATCH).map((v) => v.id),
        profiles,
      );
      if (!batch.snapshots.length) throw new Error('ExportHistory answered no snapshot');
      // One fast-import per batch; a parent in the same batch is named by its mark.
      const marks = new Map<string, string>();
      const commits: NewCommit[] = [];
      const versions: VersionMeta[] = [];
      for (const s of batch.snapshots) {
        const v = missing[i++]!;
        if (v.id !== s.id) throw new Error(`ExportHistory answered ${s.id} for ${v.id}`);
        const parents = [v.parentVersionId, v.mergeParentId]
          .filter((p): p is string => !!p)
          .map((p) => st.commits.get(p) ?? marks.get(p))
          .filter((p): p is string => !!p);
        commits.push({
          files: snapshotFiles(s.snapshot),
          parents,
          who: signature(v),
          message: `${v.message || '(no message)'}\n\nSvc-Version: ${v.id}\n`,
        });
        versions.push(v);
        marks.set(v.id, `:${commits.length}`);
      }
      const oids = await importCommits(st.repo.gitdir, this.deps.cache.root, commits);
      versions.forEach((v, k) => st.commits.set(v.id, oids[k]!));
    }
    if (missing.length) await compact(st.repo.gitdir, this.deps.cache.root);
    const refs = new Map<string, string>();
    const names = branchRefs(doc.branches);
    for (const b of doc.branches)
      if (b.headVersionId && st.commits.has(b.headVersionId)) refs.set(names.get(b.id)!, st.commits.get(b.headVersionId)!);
    for (const ref of st.refs.keys()) if (!refs.has(ref)) await st.repo.deleteRef(ref);
    for (const [ref, oid] of refs) if (st.refs.get(ref) !== oid) await st.repo.setRef(ref, oid);
    st.refs = refs;
  }
}
