import { PROFILE_LIMITS } from '@svc/contract';
import { DomainError, nameProblem, normalizeName, type Principal } from '@svc/kit';

import { type Loaded, type ProfileCore, scopeOf, versionNotFound } from './core.js';
import { type BranchState, chain, type Change, MAIN, unprocessable } from './history.js';
import { persist } from './persist.js';
import { branchView, versionView } from './views.js';

/** Branches as resources of their own: list, read, rename, and reset (move the head back). */

function detail(l: Loaded, b: BranchState) {
  const all = new Map(l.history.versions.map((v) => [v.id, v]));
  const history = chain(all, b.headVersionId);
  return {
    ...branchView(b),
    current: b.id === l.row.current_branch_id,
    versionCount: history.length,
    headVersion: history[0] ? versionView(history[0]) : null,
  };
}

export async function listBranches(core: ProfileCore, p: Principal, id: string) {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    return { currentBranchId: l.row.current_branch_id, branches: l.history.branches.map((b) => detail(l, b)) };
  });
}

export async function getBranch(core: ProfileCore, p: Principal, id: string, branchId: string) {
  const scope = scopeOf(p);
  return core.read(async (q) => {
    const l = await core.loadFor(q, id, scope);
    return detail(l, core.branch(l, branchId));
  });
}

export async function updateBranch(
  core: ProfileCore,
  p: Principal,
  id: string,
  branchId: string,
  input: { name?: string; description?: string | null },
  ifMatch?: string,
) {
  const name = input.name === undefined ? undefined : normalizeName(input.name.trim());
  const problem =
    name === undefined ? null : !name || name.length > PROFILE_LIMITS.name ? `must be 1 to ${PROFILE_LIMITS.name} characters` : nameProblem(name);
  if (problem) throw new DomainError('invalid_argument', 'invalid_request', `body.name: ${problem}.`);
  if (typeof input.description === 'string' && input.description.length > PROFILE_LIMITS.description) {
    throw new DomainError('invalid_argument', 'invalid_request', `body.description: must be at most ${PROFILE_LIMITS.description} characters.`);
  }
  if (name === undefined && input.description === undefined) {
    throw new DomainError('invalid_argument', 'invalid_request', 'body: must change at least one field.');
  }
  return core.operate(p, id, ifMatch, async (q, l) => {
    const branch = core.branch(l, branchId);
    if (name !== undefined && name !== branch.name) {
      if (branch.id === MAIN) throw unprocessable('main_branch_required', 'The branch main keeps its name.');
      if (l.history.branches.some((b) => b.name === name)) {
        throw new DomainError('conflict', 'branch_name_taken', `A branch named ${JSON.stringify(name)} exists already.`);
      }
    }
    const next: BranchState = {
      ...branch,
      name: name ?? branch.name,
      description: input.description === undefined ? branch.description : input.description,
    };
    const change: Change = {
      newVersions: [],
      branches: l.history.branches.map((b) => (b.id === branch.id ? next : b)),
      currentBranchId: l.row.current_branch_id,
    };
    const row = await persist(core, q, p, l, change, [], { operation: 'branch_update' });
    return { row, result: detail({ ...l, history: { ...l.history, branches: change.branches } }, next) };
  });
}

/** Moves a branch's head back to an earlier version of its own history (the later ones stay in the profile). */
export async function resetBranch(core: ProfileCore, p: Principal, id: string, branchId: string, versionId: string, ifMatch?: string) {
  return core.operate(p, id, ifMatch, async (q, l) => {
    const branch = core.branch(l, branchId);
    const all = new Map(l.history.versions.map((v) => [v.id, v]));
    if (!all.has(versionId)) throw versionNotFound(versionId);
    if (!chain(all, branch.headVersionId).some((v) => v.id === versionId)) {
      throw unprocessable('version_not_in_history', `Version ${versionId} is not in the history of branch ${branch.id}.`);
    }
    const next: BranchState = { ...branch, headVersionId: versionId };
    const change: Change = {
      newVersions: [],
      branches: l.history.branches.map((b) => (b.id === branch.id ? next : b)),
      currentBranchId: l.row.current_branch_id,
    };
    const row = await persist(core, q, p, l, change, [], { operation: 'reset' });
    return { row, result: detail({ ...l, history: { ...l.history, branches: change.branches } }, next) };
  });
}
