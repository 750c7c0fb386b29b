/**
 * A hosted site as a Git repository (docs/git.md): `main` is the deployment the site serves; a
 * push to `main` deploys the pushed tree through the drive's DeploySite, as the API's deploy does.
 *
 * A push is received into a scratch repository (git's receive-pack, objects looked up in the
 * site's repository through `alternates`); only once the deploy has succeeded do its objects
 * join the site's repository. A push whose deploy fails (too large, an invalid path) is reported
 * to the client as rejected and leaves the site serving what it served; a client that goes away
 * before receive-pack is done deploys nothing.
 */
import fs from 'node:fs';
import path from 'node:path';

import type { Request } from 'express';

import type { ContentDeps, DriveCalls } from '@svc/dispatch';
import { DomainError, eachAtMost, verifiedContent } from '@svc/kit';
import type { drive_sites } from '@svc/proto';

import type { GitCache } from './cache.js';
import { compact, git, importCommits, readCommitFiles, Repo, type Signature } from './objects.js';
import { parseReport, writeReport } from './report.js';
import { receivePack } from './smart.js';

const MAIN = 'refs/heads/main';
const deploymentRef = (id: string) => `refs/svc/deployments/${id}`;

/**
 * The most a push may deploy: the deploy travels to the drive in one gRPC message (16 MiB), so
 * a little less than that; a larger site deploys from a drive folder (docs/sites.md).
 */
export const MAX_PUSH_BYTES = 15 * 1024 * 1024;
/** The most a push's pack may be (receive.maxInputSize): the pack is compressed, the files may be more. */
const MAX_PACK_BYTES = 64 * 1024 * 1024;

/** Blobs read from the store at once while a deployment becomes a commit. */
const READ_PARALLEL = 8;

interface State {
  repo: Repo;
  /** The deployment `main` holds (null: none yet). */
  deploymentId: string | null | undefined;
}

/** The client went away before the push was received: nothing was deployed. */
export class PushAborted extends Error {
  override name = 'PushAborted';
}

export interface PushOutcome {
  /** receive-pack's answer, rewritten: the deploy's result in the report, and messages. */
  body: Buffer;
}

export class SiteRepos {
  private readonly states = new Map<string, State>();

  constructor(private readonly deps: ContentDeps & { cache: GitCache }) {}

  /** The caller's site, by id or slug (another account's: not found). */
  async site(idOrSlug: string, drive: DriveCalls): Promise<drive_sites.Site> {
    return (await drive.getSite({ id: idOrSlug })).site!;
  }

  private async state(site: drive_sites.Site): Promise<State> {
    let st = this.states.get(site.id);
    if (!st) {
      const gitdir = this.deps.cache.gitdir('sites', site.id);
      const repo = await Repo.open(gitdir);
      // Deployments' own refs stay internal: neither advertised nor pushable.
      await git.setConfig({ fs, gitdir, path: 'transfer.hideRefs', value: 'refs/svc' });
      st = { repo, deploymentId: undefined };
      this.states.set(site.id, st);
    }
    return st;
  }

  /** The site's repository with `main` at the deployment it serves. Returns its git directory. */
  async sync(site: drive_sites.Site, drive: DriveCalls): Promise<string> {
    const current = site.currentDeploymentId ?? null;
    const known = this.states.get(site.id);
    if (known && known.deploymentId === current) return known.repo.gitdir;
    return this.deps.cache.exclusive(`sites/${site.id}`, async () => {
      const st = await this.state(site);
      await this.syncLocked(st, site, drive);
      return st.repo.gitdir;
    });
  }

  private async syncLocked(st: State, site: drive_sites.Site, drive: DriveCalls): Promise<void> {
    const current = site.currentDeploymentId ?? null;
    if (st.deploymentId === current) return;
    if (!current) {
      await st.repo.deleteRef(MAIN);
    } else {
      let oid = await st.repo.ref(deploymentRef(current));
      if (!oid) {
        oid = await this.materialise(st.repo, site, current, drive);
        await st.repo.setRef(deploymentRef(current), oid);
        await compact(st.repo.gitdir, this.deps.cache.root);
      }
      await st.repo.setRef(MAIN, oid);
    }
    st.deploymentId = current;
  }

  /**
   * A deployment as a commit: its files (read from the blob store, checked against their hashes),
   * its creator as author, its time; no parent. The same deployment makes the same commit id.
   */
  private async materialise(repo: Repo, site: drive_sites.Site, deploymentId: string, drive: DriveCalls): Promise<string> {
    const { deployment } = await drive.getDeployment({ siteId: site.id, deploymentId });
    const d = deployment!;
    const blobs = await this.deps.backends.blobs();
    const files = new Map<string, Buffer>();
    await eachAtMost(READ_PARALLEL, d.files, async (f) => {
      const chunks: Buffer[] = [];
      const body = verifiedContent(await blobs.get(f.blobKey!), this.deps.hashes, { bytes: Number(f.size), sha256: f.sha256 });
      for await (const c of body) chunks.push(c);
      files.set(f.path, Buffer.concat(chunks));
    });
    // In manifest order (the tree is the same in any order; the pack then is too).
    const ordered = new Map(d.files.map((f) => [f.path, files.get(f.path)!]));
    const by = d.createdBy;
    const who: Signature = {
      name: by?.id || 'svc',
      email: `${by?.id || 'svc'}@${by?.kind || 'system'}.svc.invalid`,
      timestamp: Math.floor(Date.parse(d.createdAt) / 1000),
    };
    const message = `Deployment ${d.id}\n\n${d.fileCount} files, ${d.totalBytes} bytes, digest ${d.digest}\n`;
    const [oid] = await importCommits(repo.gitdir, this.deps.cache.root, [{ files: ordered, parents: [], who, message }]);
    return oid!;
  }

  /**
   * POST git-receive-pack: receives into a scratch repository, deploys what `main` now holds,
   * and answers git's report with the deploy's result (and the site's URL) in it.
   */
  async push(req: Request, site: drive_sites.Site, drive: DriveCalls, url: string): Promise<PushOutcome> {
    return this.deps.cache.exclusive(`sites/${site.id}`, async () => {
      const st = await this.state(site);
      await this.syncLocked(st, site, drive);
      const scratch = this.deps.cache.scratch();
      try {
        const tmp = await scratchRepo(scratch, st.repo.gitdir, await st.repo.ref(MAIN));
        const r = await receivePack(req, tmp, this.deps.cache.root);
        if (r.aborted) throw new PushAborted();
        if (r.code !== 0) throw new Error(`git receive-pack exited with ${r.code}: ${r.stderr.trim()}`);
        const report = parseReport(r.out);
        const lines: string[] = [];
        const messages: string[] = [];
        for (const line of report.lines) {
          const m = /^ok (\S+)/.exec(line);
          if (!m) {
            lines.push(line);
            continue;
          }
          const ref = m[1]!;
          if (ref !== MAIN) {
            lines.push(`ng ${ref} only main deploys a site`);
            continue;
          }
          const pushed = (await new Repo(tmp).ref(MAIN))!;
          const outcome = await this.deploy(st, site, drive, [tmp, st.repo.gitdir], pushed);
          if ('error' in outcome) {
            lines.push(`ng ${ref} ${outcome.error.replace(/\s+/g, ' ')}`);
            messages.push(`Deploy refused: ${outcome.error}`, `The site still serves ${site.currentDeploymentId ?? 'nothing'}.`);
            continue;
          }
          await adopt(tmp, st.repo.gitdir);
          await compact(st.repo.gitdir, this.deps.cache.root);
          await st.repo.setRef(deploymentRef(outcome.deployment.id), pushed);
          await st.repo.setRef(MAIN, pushed);
          st.deploymentId = outcome.deployment.id;
          lines.push(line);
          messages.push(
            `Deployed ${outcome.deployment.id}: ${outcome.deployment.fileCount} files, ${outcome.deployment.totalBytes} bytes.`,
            `Site: ${url}`,
          );
        }
        return { body: writeReport(report, lines, messages) };
      } finally {
        await fs.promises.rm(scratch, { recursive: true, force: true });
      }
    });
  }

  private async deploy(
    st: State,
    site: drive_sites.Site,
    drive: DriveCalls,
    gitdirs: string[],
    commit: string,
  ): Promise<{ deployment: drive_sites.Deployment } | { error: string }> {
    const read = await readCommitFiles(gitdirs, commit, MAX_PUSH_BYTES);
    if ('tooLarge' in read) {
      return { error: `the files total more than ${MAX_PUSH_BYTES} bytes, the most a push deploys (deploy a drive folder instead)` };
    }
    if ('invalid' in read) return { error: read.invalid };
    if (!read.files.length) return { error: 'the pushed tree has no files' };
    try {
      // Its deadline (a push of many files may take a while) is the internal operation's.
      const { deployment } = await drive.deploySite({ siteId: site.id, files: read.files.map((f) => ({ path: f.path, content: f.content })) });
      return { deployment: deployment! };
    } catch (err) {
      if (err instanceof DomainError && err.httpStatus < 500) return { error: `${err.code}: ${err.message}` };
      throw err;
    }
  }
}

/** A scratch bare repository that sees the site's objects (alternates) and holds its `main`. */
async function scratchRepo(dir: string, siteGitdir: string, main: string | undefined): Promise<string> {
  const gitdir = path.join(dir, 'push.git');
  const repo = await Repo.open(gitdir);
  await fs.promises.mkdir(path.join(gitdir, 'objects', 'info'), { recursive: true });
  await fs.promises.writeFile(path.join(gitdir, 'objects', 'info', 'alternates'), `${path.join(siteGitdir, 'objects')}\n`);
  for (const [p, value] of [
    ['receive.denyDeletes', 'true'],
    ['receive.maxInputSize', String(MAX_PACK_BYTES)],
    ['transfer.hideRefs', 'refs/svc'],
  ] as const) {
    await git.setConfig({ fs, gitdir, path: p, value });
  }
  if (main) await repo.setRef(MAIN, main);
  return gitdir;
}

/** Moves a deployed push's objects (loose and packed) into the site's repository. */
async function adopt(from: string, to: string): Promise<void> {
  const src = path.join(from, 'objects');
  const dst = path.join(to, 'objects');
  for (const entry of await fs.promises.readdir(src, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === 'info') continue;
    await fs.promises.mkdir(path.join(dst, entry.name), { recursive: true });
    const names = await fs.promises.readdir(path.join(src, entry.name));
    // Pack indexes last, so that a reader never sees an index without its pack.
    names.sort((a, b) => Number(a.endsWith('.idx')) - Number(b.endsWith('.idx')));
    for (const name of names) {
      if (name.startsWith('tmp_') || name.endsWith('.keep')) continue;
      const target = path.join(dst, entry.name, name);
      if (fs.existsSync(target)) continue;
      await fs.promises.rename(path.join(src, entry.name, name), target);
    }
  }
}
