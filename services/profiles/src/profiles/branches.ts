import { PROFILE_LIMITS } from '@svc/contract';
import { DomainError, nameProblem, newId, normalizeName, type Principal } from '@svc/kit';

import type { ProfileCore } from './core.js';
import { type BranchState, type Change, MAIN, unprocessable } from './history.js';
import { persist } from './persist.js';
import { branchView, type ProfileDoc } from './views.js';

/** Branches: create one at its parent's head, delete one, check one out. */

/** A new branch starting at its parent's head (the current branch by default). */
export async function createBranch(
  core: ProfileCore,
  p: Principal,
  id: string,
  input: { name: string; description?: string; parentBranchId?: string },
  ifMatch?: string,
) {
  const name = normalizeName((input.name ?? '').trim());
  const problem = !name || name.length > PROFILE_LIMITS.name ? `must be 1 to ${PROFILE_LIMITS.name} characters` : nameProblem(name);
  if (problem) throw new DomainError('invalid_argument', 'invalid_request', `body.name: ${problem}.`);
  if (input.description !== undefined && input.description.length > PROFILE_LIMITS.description) {
    throw new DomainError('invalid_argument', 'invalid_request', `body.description: must be at most ${PROFILE_LIMITS.description} characters.`);
  }
  return core.operate(
    p,
    id,
    ifMatch,
    async (q, l) => {
      const parent = core.branch(l, input.parentBranchId ?? l.row.current_branch_id);
      if (l.history.branches.some((b) => b.name === name)) {
        throw new DomainError('conflict', 'branch_name_taken', `A branch named ${JSON.stringify(name)} exists already.`);
      }
      if (l.history.branches.length >= PROFILE_LIMITS.branches) {
        throw unprocessable('too_many_branches', `A profile holds at most ${PROFILE_LIMITS.branches} branches.`);
      }
      const branch: BranchState = {
        id: newId('br'),
        name,
        description: input.description ?? null,
        headVersionId: parent.headVersionId,
        baseVersionId: parent.headVersionId,
        parentBranchId: parent.id,
        createdAt: new Date(),
      };
      const change: Change = {
        newVersions: [],
        branches: [...l.history.branches, branch],
        currentBranchId: l.row.current_branch_id,
      };
      const row = await persist(core, q, p, l, change, [], { operation: 'branch' });
      return { row, result: branchView(branch) };
    },
    { versions: false },
  );
}

/** Deletes a branch; its versions stay (commits are immutable). */
export async function deleteBranch(core: ProfileCore, p: Principal, id: string, branchId: string, ifMatch?: string) {
  return core.operate(
    p,
    id,
    ifMatch,
    async (q, l) => {
      const branch = core.branch(l, branchId);
      if (branch.id === MAIN) throw unprocessable('main_branch_required', 'The branch main cannot be deleted.');
      if (branch.id === l.row.current_branch_id) {
        throw unprocessable('branch_is_current', `Branch ${branch.id} is checked out: check out another branch first.`);
      }
      const child = l.history.branches.find((b) => b.parentBranchId === branch.id);
      if (child) {
        throw unprocessable('branch_has_children', `Branch ${branch.id} is the parent of branch ${child.id}: delete that one first.`);
      }
      const change: Change = {
        newVersions: [],
        branches: l.history.branches.filter((b) => b.id !== branch.id),
        currentBranchId: l.row.current_branch_id,
      };
      const row = await persist(core, q, p, l, change, [], { operation: 'branch_delete' });
      return { row, result: { success: true as const } };
    },
    { versions: false },
  );
}

/** Switches branch: the effective snapshot follows it; the working changes carry along. */
export async function checkout(
  core: ProfileCore,
  p: Principal,
  id: string,
  branchId: string,
  ifMatch?: string,
  opts: { snapshots?: boolean } = {},
): Promise<ProfileDoc> {
  return core.write(
    p,
    id,
    ifMatch,
    async (q, l) => {
      const branch = core.branch(l, branchId);
      const change: Change = { newVersions: [], branches: l.history.branches, currentBranchId: branch.id };
      const row = await persist(core, q, p, l, change, [], { operation: 'checkout' });
      return core.render(q, row, opts);
    },
    { versions: false },
  );
}
