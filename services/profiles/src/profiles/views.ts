import { createHash } from 'node:crypto';

import { ProfileRefId } from '@svc/contract';
import { DomainError } from '@svc/kit';

import type { BranchState, VersionMeta } from './history.js';
import type { Snapshot } from './snapshots.js';
import type { BranchRow, SummaryRow, VersionRow } from './store.js';

/** What the API shows of a profile, its versions and branches, and the rows' in-memory forms. */

export interface ProfileDoc {
  /** The profile as JSON text. */
  json: string;
  etag: string;
}

/** A quoted strong entity tag that changes on every write. */
export function etagOf(row: { id: string; rev: number }): string {
  return `"${createHash('sha256').update(`${row.id}:${row.rev}`).digest('base64url').slice(0, 27)}"`;
}

export interface VersionView {
  id: string;
  branchId: string;
  parentVersionId: string | null;
  message: string;
  createdAt: string;
  snapshot?: Snapshot;
}

export function versionView(v: VersionRow | VersionMeta): VersionView {
  const r = 'branch_id' in v ? v : null;
  return r
    ? { id: r.id, branchId: r.branch_id, parentVersionId: r.parent_version_id, message: r.message, createdAt: r.created_at.toISOString() }
    : {
        id: v.id,
        branchId: (v as VersionMeta).branchId,
        parentVersionId: (v as VersionMeta).parentVersionId,
        message: v.message,
        createdAt: (v as VersionMeta).createdAt.toISOString(),
      };
}

export function versionJson(v: VersionRow, snapshot?: string): string {
  const base = JSON.stringify(versionView(v));
  return snapshot === undefined ? base : `${base.slice(0, -1)},"snapshot":${snapshot}}`;
}

export function branchView(b: BranchState) {
  return {
    id: b.id,
    name: b.name,
    ...(b.description !== null ? { description: b.description } : {}),
    headVersionId: b.headVersionId,
    ...(b.parentBranchId !== null ? { parentBranchId: b.parentBranchId } : {}),
    createdAt: b.createdAt.toISOString(),
  };
}

export function summaryView(r: SummaryRow) {
  return {
    id: r.id,
    name: r.name,
    projectId: r.project_id,
    currentBranchId: r.current_branch_id,
    versionCount: r.version_count,
    branchCount: r.branch_count,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    etag: etagOf(r),
  };
}

export const toBranch = (b: BranchRow): BranchState => ({
  id: b.id,
  name: b.name,
  description: b.description,
  headVersionId: b.head_version_id,
  baseVersionId: b.base_version_id,
  parentBranchId: b.parent_branch_id,
  createdAt: b.created_at,
});

export const toMeta = (v: VersionRow): VersionMeta => ({
  id: v.id,
  branchId: v.branch_id,
  parentVersionId: v.parent_version_id,
  message: v.message,
  createdAt: v.created_at,
  mergeParentId: v.merge_parent_id,
});

export const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');

export function decodeCursor(c: string, shape: RegExp): string {
  const id = Buffer.from(c, 'base64url').toString();
  if (!shape.test(id) || !ProfileRefId.safeParse(id).success) {
    throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  }
  return id;
}
