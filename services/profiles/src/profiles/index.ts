import type { OutboxRelay, Principal, Sql } from '@svc/kit';

import type { ProfileStore } from '../store.js';
import { checkout, createBranch, deleteBranch } from './branches.js';
import { commit, rollback } from './commits.js';
import { ProfileCore } from './core.js';
import { createProfile, getProfile, listProfiles, removeProfile, updateProfile } from './crud.js';
import { merge } from './merging.js';
import { diff, exportHistory, log, version } from './reads.js';

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
}
