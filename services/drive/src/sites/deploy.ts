/**
 * Deploys and rollbacks. A deployment is immutable: its manifest maps each path to content by
 * SHA-256, and that content is the drive's own blob of the account (stored once, whatever the
 * number of files, deployments and drive files that hold it). A deploy stores what is missing
 * first, then inserts the deployment and switches the site to it in one transaction: until that
 * commit the site serves what it served, and a deploy that fails leaves it so.
 */
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';

import { DomainError, eachAtMost, newId, type Principal, type Queryable } from '@svc/kit';

import { contentKey } from '../items/content.js';
import { actorOf, writer } from '../items/domain.js';
import { folderNotFound } from '../items/errors.js';
import { resolvePath } from '../items/reads.js';
import { untarFiles, unzipFiles } from './archive.js';
import { byPath, decodeIdCursor, encodeIdCursor, manifestDigest, normalizeSitePath, siteContentType, tooLarge } from './rules.js';
import type { Sites } from './sites.js';
import type { DeploymentRow, SiteFileRow, SiteRow } from './store.js';

/**
 * How long content stored for a deploy is held beyond the grace period: the time between storing
 * it and the commit that references it (the collector never takes it in between).
 */
const DEPLOY_HOLD_SECONDS = 3600;
/** Blob writes of one deploy in flight at once. */
const PUT_CONCURRENCY = 8;

export interface DeployRequest {
  siteId: string;
  folderId?: string;
  folderPath?: string;
  files: Array<{ path: string; content: Buffer }>;
  /** An archive of the files: zip, tar or tar.gz. */
  archive?: { format: string; content: Buffer };
  projectId?: string;
}

export interface DeploymentView {
  row: DeploymentRow;
  current: boolean;
  files?: SiteFileRow[];
}

const changed = () => new DomainError('conflict', 'changed_concurrently', 'The drive changed while the site was being deployed; try again.');

function checkLimits(sites: Sites, count: number, bytes: number): void {
  const { siteMaxFiles, siteMaxBytes } = sites.drive.settings;
  if (count > siteMaxFiles) throw tooLarge(`A deployment holds at most ${siteMaxFiles} files; this one has ${count}.`);
  if (bytes > siteMaxBytes) throw tooLarge(`A deployment holds at most ${siteMaxBytes} bytes; this one has ${bytes}.`);
}

/** Refuses two files of one path (after normalization). */
function checkUnique(files: Array<{ path: string }>): void {
  const seen = new Set<string>();
  for (const f of files) {
    if (seen.has(f.path)) throw new DomainError('invalid_argument', 'duplicate_path', `Two files have the path ${JSON.stringify(f.path)}.`);
    seen.add(f.path);
  }
}

/** Deploys a drive folder or the files sent, and makes the site serve it. */
export async function deploySite(sites: Sites, p: Principal, req: DeployRequest): Promise<DeploymentView> {
  writer(p);
  const sources = [req.folderId !== undefined, req.folderPath !== undefined, req.files.length > 0, req.archive !== undefined].filter(Boolean).length;
  if (sources !== 1) {
    throw new DomainError('invalid_argument', 'invalid_request', 'A deploy names exactly one source: folderId, folderPath, files, or archive.');
  }
  await sites.visible(sites.drive.sql, p, req.siteId);
  if (req.archive) {
    const format = req.archive.format;
    if (format !== 'zip' && format !== 'tar' && format !== 'tar.gz') {
      throw new DomainError('invalid_argument', 'invalid_archive', 'An archive is a zip, a tar or a tar.gz (format "zip", "tar" or "tar.gz").');
    }
    const limits = { maxFiles: sites.drive.settings.siteMaxFiles, maxBytes: sites.drive.settings.siteMaxBytes };
    const files = format === 'zip' ? unzipFiles(req.archive.content, limits) : untarFiles(req.archive.content, limits);
    return deployFiles(sites, p, req.siteId, files, 'archive');
  }
  if (req.files.length) return deployFiles(sites, p, req.siteId, req.files, 'files');
  const folderId = req.folderId ?? (await folderByPath(sites, p, req.folderPath!, req.projectId));
  return deployFolder(sites, p, req.siteId, folderId);
}

async function deployFiles(
  sites: Sites,
  p: Principal,
  siteId: string,
  sent: DeployRequest['files'],
  source: 'files' | 'archive',
): Promise<DeploymentView> {
  checkLimits(
    sites,
    sent.length,
    sent.reduce((n, f) => n + f.content.length, 0),
  );
  const files = sent.map((f) => {
    const path = normalizeSitePath(f.path);
    return { path, content: f.content, sha256: createHash('sha256').update(f.content).digest('hex') };
  });
  checkUnique(files);
  const drive = sites.drive;
  const blobs = new Map(files.map((f) => [f.sha256, f.content]));
  // Held first (so that the collector leaves the keys alone), then written where missing.
  await sites.store.holdMany(
    drive.sql,
    p.accountId,
    [...blobs].map(([sha256, content]) => ({ sha256, size: content.length, crc32: zlib.crc32(content) })),
    drive.settings.graceSeconds + DEPLOY_HOLD_SECONDS,
  );
  await eachAtMost(PUT_CONCURRENCY, [...blobs], async ([sha, content]) => {
    const key = contentKey(p.accountId, sha);
    const there = await drive.blobs.stat(key);
    if (!there || there.size !== content.length) await drive.blobs.put(key, content);
  });
  const manifest = files.map((f) => ({ path: f.path, sha256: f.sha256, size: f.content.length, content_type: siteContentType(f.path) }));
  return commit(sites, p, siteId, manifest, { source, folderId: null });
}

/** The folder at a path of the caller's drive ("a/b", from the root). */
async function folderByPath(sites: Sites, p: Principal, path: string, projectId: string | undefined): Promise<string> {
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw new DomainError('invalid_argument', 'invalid_path', 'folderPath: ".." is not allowed.');
  if (!segments.length) throw new DomainError('invalid_argument', 'invalid_path', 'folderPath: name a folder (the drive root cannot be deployed).');
  const found = await resolvePath(sites.drive, p, { segments, projectId, full: false });
  if (!found.item || found.item.row.kind !== 'folder') throw folderNotFound();
  return found.item.row.id;
}

/** A snapshot of a drive folder: every file under it, by its path below the folder, read and committed in one transaction. */
async function deployFolder(sites: Sites, p: Principal, siteId: string, folderId: string): Promise<DeploymentView> {
  const drive = sites.drive;
  return drive.tx(async (q) => {
    const root = await drive.visible(q, p, folderId).catch((err: unknown) => {
      throw err instanceof DomainError && err.kind === 'not_found' ? folderNotFound() : err;
    });
    if (root.kind !== 'folder') throw new DomainError('conflict', 'not_a_folder', 'A site is deployed from a folder, not a file.');
    const tree = await drive.store.subtree(q, p.accountId, root.id);
    const paths = new Map<string, string>([[root.id, '']]);
    const manifest: SiteFileRow[] = [];
    let bytes = 0;
    for (const r of tree) {
      if (r.id === root.id) continue;
      const parent = paths.get(r.parent_id ?? '');
      if (parent === undefined) continue;
      const path = parent ? `${parent}/${r.name}` : r.name;
      paths.set(r.id, path);
      if (r.kind !== 'file') continue;
      bytes += r.size;
      manifest.push({ path: normalizeSitePath(path), sha256: r.sha256!, size: r.size, content_type: siteContentType(path, r.content_type) });
    }
    checkLimits(sites, manifest.length, bytes);
    return insertAndSwitch(sites, q, p, siteId, manifest, { source: 'folder', folderId: root.id });
  });
}

function commit(
  sites: Sites,
  p: Principal,
  siteId: string,
  manifest: SiteFileRow[],
  from: { source: DeploymentRow['source']; folderId: string | null },
) {
  return sites.drive.tx((q) => insertAndSwitch(sites, q, p, siteId, manifest, from));
}

/** The deploy's one transaction: the deployment and its manifest in, the site switched to it. */
async function insertAndSwitch(
  sites: Sites,
  q: Queryable,
  p: Principal,
  siteId: string,
  manifest: SiteFileRow[],
  from: { source: DeploymentRow['source']; folderId: string | null },
): Promise<DeploymentView> {
  if (!manifest.length) throw new DomainError('invalid_argument', 'empty_deployment', 'A deployment needs at least one file.');
  checkUnique(manifest);
  const site = await sites.visible(q, p, siteId, true);
  // The content is there and stays: its blob rows, locked until commit (the collector skips them).
  const shas = [...new Set(manifest.map((f) => f.sha256))];
  const present = await sites.store.lockBlobs(q, site.account_id, shas);
  if (present.size !== shas.length) throw changed();
  manifest.sort(byPath);
  const row = await sites.store.insertDeployment(
    q,
    {
      id: newId('dep'),
      site_id: site.id,
      account_id: site.account_id,
      digest: manifestDigest(manifest),
      file_count: manifest.length,
      total_bytes: manifest.reduce((n, f) => n + f.size, 0),
      source: from.source,
      folder_id: from.folderId,
      created_by: actorOf(p),
    },
    manifest,
  );
  const switched = await sites.store.pointAt(q, site.id, row.id);
  const settings = sites.drive.settings;
  const released = await sites.store.prune(q, site.id, settings.siteKeepDeployments, row.id);
  await sites.drive.store.release(q, site.account_id, released, settings.graceSeconds);
  await sites.emit(q, 'drive.site.deployed', switched, {
    deploymentId: row.id,
    previousDeploymentId: site.current_deployment_id,
    digest: row.digest,
    fileCount: row.file_count,
    totalBytes: row.total_bytes,
  });
  return { row, current: true, files: manifest };
}

/** Points the site at an earlier deployment: the one named, or the one created before the current one. */
export async function rollbackSite(sites: Sites, p: Principal, req: { siteId: string; deploymentId?: string }): Promise<SiteRow> {
  writer(p);
  return sites.drive.tx(async (q) => {
    const site = await sites.visible(q, p, req.siteId, true);
    let target: DeploymentRow | null;
    if (req.deploymentId) {
      target = await sites.store.deploymentById(q, site.id, req.deploymentId);
      if (!target) throw deploymentNotFound();
    } else {
      if (!site.current_deployment_id) throw noEarlier();
      target = (await sites.store.deployments(q, site.id, site.current_deployment_id, 1))[0] ?? null;
      if (!target) throw noEarlier();
    }
    if (target.id === site.current_deployment_id) return site;
    const switched = await sites.store.pointAt(q, site.id, target.id);
    await sites.emit(q, 'drive.site.rolled_back', switched, { deploymentId: target.id, previousDeploymentId: site.current_deployment_id });
    return switched;
  });
}

const deploymentNotFound = () => new DomainError('not_found', 'deployment_not_found', 'Deployment not found.');
const noEarlier = () => new DomainError('conflict', 'no_earlier_deployment', 'The site has no deployment before the current one to roll back to.');

export async function listDeployments(
  sites: Sites,
  p: Principal,
  req: { siteId: string; limit: number; cursor?: string },
): Promise<{ deployments: DeploymentView[]; nextCursor?: string }> {
  const site = await sites.visible(sites.drive.sql, p, req.siteId);
  const limit = Math.min(Math.max(req.limit || 50, 1), 200);
  const before = req.cursor ? decodeIdCursor(req.cursor, 'dep') : undefined;
  const rows = await sites.store.deployments(sites.drive.sql, site.id, before, limit + 1);
  const page = rows.slice(0, limit);
  return {
    deployments: page.map((row) => ({ row, current: row.id === site.current_deployment_id })),
    nextCursor: rows.length > limit ? encodeIdCursor(page[page.length - 1]!.id) : undefined,
  };
}

/** One deployment with its manifest. */
export async function getDeployment(sites: Sites, p: Principal, req: { siteId: string; deploymentId: string }): Promise<DeploymentView> {
  const site = await sites.visible(sites.drive.sql, p, req.siteId);
  const row = await sites.store.deploymentById(sites.drive.sql, site.id, req.deploymentId);
  if (!row) throw deploymentNotFound();
  return { row, current: row.id === site.current_deployment_id, files: await sites.store.files(sites.drive.sql, row.id) };
}
