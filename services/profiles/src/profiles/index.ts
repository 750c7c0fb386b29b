import type { OutboxRelay, Principal, Sql } from '@svc/kit';

import { getBranch, listBranches, resetBranch, updateBranch } from './branch-ops.js';
import { checkout, createBranch, deleteBranch } from './branches.js';
import { commit, rollback } from './commits.js';
import { ProfileCore } from './core.js';
import { createProfile, getProfile, listProfiles, removeProfile, updateProfile } from './crud.js';
import { applyVersion, duplicateProfile, findVersions, profileStats, searchItems } from './insights.js';
import { merge } from './merging.js';
import { diff, exportHistory, log, version } from './reads.js';
import type { ProfileStore } from './store.js';
import { createTag, deleteTag, listTags } from './tags.js';
import { discardWorking, stageItem, unstageItem } from './working.js';

export { buildCommitSnapshot } from './commits.js';
export type { MergeResult } from './merging.js';
export { etagOf, type ProfileDoc, type VersionView } from './views.js';

/**
 * Taste profiles: versions, branches, working changes, and the rules that keep history true.
 * Each operation lives in the module of its area (crud, commits, branches, merging, reads) over
 * the shared core (reads, locked writes, loading, rendering) and persist (the one write path).
 */
export class ProfilesDomain {
  readonly store: ProfileStore;
  private readonly core: ProfileCore;

  constructor(sql: Sql, outbox: () => OutboxRelay | undefined = () => undefined) {
    this.core = new ProfileCore(sql, outbox);
    this.store = this.core.store;
  }

  // Profiles -------------------------------------------------------------------------------------

  create(p: Principal, body: unknown) {
    return createProfile(this.core, p, body);
  }

  list(p: Principal, input: { limit: number; cursor?: string; projectId?: string }) {
    return listProfiles(this.core, p, input);
  }

  get(p: Principal, id: string, opts: { snapshots?: boolean } = {}) {
    return getProfile(this.core, p, id, opts);
  }

  /** PATCH: arrays replaced as sent, history kept true (422 otherwise), effectiveSnapshot recomputed. */
  update(p: Principal, id: string, body: unknown, ifMatch?: string, opts: { snapshots?: boolean } = {}) {
    return updateProfile(this.core, p, id, body, ifMatch, opts);
  }

  remove(p: Principal, id: string, ifMatch?: string) {
    return removeProfile(this.core, p, id, ifMatch);
  }

  // First-class operations -----------------------------------------------------------------------

  commit(p: Principal, id: string, input: { message: string; branchId?: string }, ifMatch?: string) {
    return commit(this.core, p, id, input, ifMatch);
  }

  createBranch(p: Principal, id: string, input: { name: string; description?: string; parentBranchId?: string }, ifMatch?: string) {
    return createBranch(this.core, p, id, input, ifMatch);
  }

  deleteBranch(p: Principal, id: string, branchId: string, ifMatch?: string) {
    return deleteBranch(this.core, p, id, branchId, ifMatch);
  }

  checkout(p: Principal, id: string, branchId: string, ifMatch?: string, opts: { snapshots?: boolean } = {}) {
    return checkout(this.core, p, id, branchId, ifMatch, opts);
  }

  rollback(p: Principal, id: string, input: { versionId: string; branchId?: string; message?: string }, ifMatch?: string) {
    return rollback(this.core, p, id, input, ifMatch);
  }

  merge(p: Principal, id: string, body: unknown, ifMatch?: string) {
    return merge(this.core, p, id, body, ifMatch);
  }

  // Reads ----------------------------------------------------------------------------------------

  /** The history and the snapshots asked for, for the Git front. */
  exportHistory(p: Principal, id: string, input: { snapshotVersionIds: string[]; maxBytes?: number }) {
    return exportHistory(this.core, p, id, input);
  }

  log(p: Principal, id: string, input: { branchId?: string; limit: number; cursor?: string }) {
    return log(this.core, p, id, input);
  }

  version(p: Principal, id: string, versionId: string) {
    return version(this.core, p, id, versionId);
  }

  diff(p: Principal, id: string, input: { from?: string; to?: string }) {
    return diff(this.core, p, id, input);
  }

  // Branches, working changes, content ------------------------------------------------------------

  listBranches(p: Principal, id: string) {
    return listBranches(this.core, p, id);
  }

  getBranch(p: Principal, id: string, branchId: string) {
    return getBranch(this.core, p, id, branchId);
  }

  updateBranch(p: Principal, id: string, branchId: string, input: { name?: string; description?: string | null }, ifMatch?: string) {
    return updateBranch(this.core, p, id, branchId, input, ifMatch);
  }

  resetBranch(p: Principal, id: string, branchId: string, versionId: string, ifMatch?: string) {
    return resetBranch(this.core, p, id, branchId, versionId, ifMatch);
  }

  stageItem(p: Principal, id: string, kind: string, item: unknown, ifMatch?: string) {
    return stageItem(this.core, p, id, kind, item, ifMatch);
  }

  unstageItem(p: Principal, id: string, kind: string, itemId: string, ifMatch?: string) {
    return unstageItem(this.core, p, id, kind, itemId, ifMatch);
  }

  discardWorking(p: Principal, id: string, ifMatch?: string) {
    return discardWorking(this.core, p, id, ifMatch);
  }

  search(p: Principal, id: string, input: { query: string; kind?: string; versionId?: string; limit?: number }) {
    return searchItems(this.core, p, id, input);
  }

  stats(p: Principal, id: string) {
    return profileStats(this.core, p, id);
  }

  duplicate(p: Principal, id: string, input: { name?: string }) {
    return duplicateProfile(this.core, p, id, input);
  }

  revert(p: Principal, id: string, input: { versionId: string; branchId?: string; message?: string }, ifMatch?: string) {
    return applyVersion(this.core, p, id, { ...input, direction: 'revert' }, ifMatch);
  }

  cherryPick(p: Principal, id: string, input: { versionId: string; branchId?: string; message?: string }, ifMatch?: string) {
    return applyVersion(this.core, p, id, { ...input, direction: 'cherry_pick' }, ifMatch);
  }

  listTags(p: Principal, id: string) {
    return listTags(this.core, p, id);
  }

  createTag(p: Principal, id: string, input: { name: string; versionId?: string; message?: string }, ifMatch?: string) {
    return createTag(this.core, p, id, input, ifMatch);
  }

  deleteTag(p: Principal, id: string, name: string, ifMatch?: string) {
    return deleteTag(this.core, p, id, name, ifMatch);
  }

  findVersions(
    p: Principal,
    id: string,
    input: { branchId?: string; authorId?: string; q?: string; since?: string; until?: string; limit?: number; cursor?: string },
  ) {
    return findVersions(this.core, p, id, input);
  }
}
