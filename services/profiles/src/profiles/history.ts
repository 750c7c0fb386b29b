import type { ProfileDataInput } from '@svc/contract';
import { DomainError, type ErrorCode } from '@svc/kit';

/**
 * The rules that keep a profile's history true, as pure functions over its versions and
 * branches. PATCH bodies are first turned into a Change (patchToChange), first-class operations
 * build a Change directly, and every Change passes checkHistory before anything is written.
 */

export const MAIN = 'main';

export interface VersionMeta {
  id: string;
  branchId: string;
  parentVersionId: string | null;
  message: string;
  createdAt: Date;
  mergeParentId?: string | null;
}

export interface BranchState {
  id: string;
  name: string;
  description: string | null;
  headVersionId: string | null;
  /** The version the branch started from (its parent's head then); null for main. */
  baseVersionId: string | null;
  parentBranchId: string | null;
  createdAt: Date;
}

export interface History {
  versions: VersionMeta[];
  branches: BranchState[];
  currentBranchId: string;
}

/** What a write makes of the history: versions only ever get added. */
export interface Change {
  newVersions: VersionMeta[];
  /** The branches after the write, in order. */
  branches: BranchState[];
  currentBranchId: string;
}

export const unprocessable = (code: ErrorCode, message: string) => new DomainError('unprocessable', code, message);

/**
 * Turns a PATCH's profileData into a Change. Arrays are replaced as sent, but a committed
 * version may not be dropped or altered (fields sent must equal the stored ones; fields left out,
 * as a history listing leaves out `snapshot`, keep the stored value). `createdAt` is the server's:
 * a value sent for a version or a branch is ignored, new ones get `now`.
 */
export function patchToChange(
  stored: History,
  data: ProfileDataInput,
  now: Date,
): { change: Change; newSnapshots: Map<string, Record<string, unknown>>; sentSnapshots: Map<string, Record<string, unknown>> } {
  const storedVersions = new Map(stored.versions.map((v) => [v.id, v]));
  const newVersions: VersionMeta[] = [];
  const newSnapshots = new Map<string, Record<string, unknown>>();
  const sentSnapshots = new Map<string, Record<string, unknown>>();

  if (data.versions) {
    const seen = new Set<string>();
    for (const v of data.versions) {
      if (seen.has(v.id)) throw unprocessable('duplicate_version_id', `profileData.versions holds version ${v.id} more than once.`);
      seen.add(v.id);
    }
    for (const s of stored.versions) {
      if (!seen.has(s.id)) {
        throw unprocessable(
          'version_dropped',
          `Version ${s.id} is committed and cannot be removed: commits are immutable, so send every existing version.`,
        );
      }
    }
    for (const v of data.versions) {
      const s = storedVersions.get(v.id);
      if (s) {
        const changed =
          v.branchId !== undefined && v.branchId !== s.branchId
            ? 'branchId'
            : v.parentVersionId !== undefined && v.parentVersionId !== s.parentVersionId
              ? 'parentVersionId'
              : v.message !== undefined && v.message !== s.message
                ? 'message'
                : undefined;
        if (changed) {
          throw unprocessable('version_immutable', `Version ${v.id} is committed and its ${changed} cannot change: commits are immutable.`);
        }
        if (v.snapshot !== undefined) sentSnapshots.set(v.id, v.snapshot);
        continue;
      }
      if (v.branchId === undefined) {
        throw unprocessable('version_branch_missing', `New version ${v.id} needs a branchId.`);
      }
      if (v.snapshot === undefined) {
        throw unprocessable('version_snapshot_required', `New version ${v.id} needs a snapshot: only committed versions may leave it out.`);
      }
      newVersions.push({
        id: v.id,
        branchId: v.branchId,
        parentVersionId: v.parentVersionId ?? null,
        message: v.message ?? '',
        // The server's clock, never the client's: a branch's history stays in time order.
        createdAt: now,
      });
      newSnapshots.set(v.id, v.snapshot);
    }
  }

  let branches: BranchState[];
  if (data.branches) {
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const b of data.branches) {
      if (ids.has(b.id)) throw unprocessable('duplicate_branch_id', `profileData.branches holds branch ${b.id} more than once.`);
      ids.add(b.id);
    }
    if (!ids.has(MAIN)) throw unprocessable('main_branch_required', 'The branch main cannot be deleted.');
    const storedBranches = new Map(stored.branches.map((b) => [b.id, b]));
    branches = data.branches.map((b) => {
      const s = storedBranches.get(b.id);
      if (s) {
        if (b.parentBranchId !== undefined && (b.parentBranchId ?? null) !== s.parentBranchId) {
          throw unprocessable('branch_parent_immutable', `The parent of branch ${b.id} is ${s.parentBranchId ?? 'none'} and cannot change.`);
        }
        return {
          ...s,
          name: b.name ?? s.name,
          description: b.description === undefined ? s.description : b.description,
          headVersionId: b.headVersionId === undefined ? s.headVersionId : b.headVersionId,
        };
      }
      if (b.name === undefined) throw unprocessable('branch_name_required', `New branch ${b.id} needs a name.`);
      const parentBranchId = b.parentBranchId ?? null;
      // A new branch starts where its parent's head is; its own commits (sent with it) follow.
      const own = newVersions.filter((v) => v.branchId === b.id);
      const ownIds = new Set(own.map((v) => v.id));
      const root = own.find((v) => !v.parentVersionId || !ownIds.has(v.parentVersionId));
      const parentHead = () => {
        const pb = parentBranchId ? (data.branches!.find((x) => x.id === parentBranchId) ?? storedBranches.get(parentBranchId)) : undefined;
        const sp = parentBranchId ? storedBranches.get(parentBranchId) : undefined;
        return sp ? sp.headVersionId : (pb?.headVersionId ?? null);
      };
      const base = root ? root.parentVersionId : b.headVersionId === undefined ? parentHead() : b.headVersionId;
      return {
        id: b.id,
        name: b.name,
        description: b.description ?? null,
        headVersionId: b.headVersionId === undefined ? (root ? null : base) : b.headVersionId,
        baseVersionId: base,
        parentBranchId,
        createdAt: now,
      };
    });
    for (const b of branches) {
      if (names.has(b.name)) throw unprocessable('duplicate_branch_name', `Two branches are named ${JSON.stringify(b.name)}.`);
      names.add(b.name);
    }
  } else {
    branches = stored.branches;
  }

  return {
    change: { newVersions, branches, currentBranchId: data.currentBranchId ?? stored.currentBranchId },
    newSnapshots,
    sentSnapshots,
  };
}

/** Refuses (422) any change that would corrupt history. */
export function checkHistory(stored: History, change: Change): void {
  const all = new Map<string, VersionMeta>(stored.versions.map((v) => [v.id, v]));
  for (const v of change.newVersions) {
    if (all.has(v.id)) throw unprocessable('duplicate_version_id', `Version ${v.id} exists already.`);
    all.set(v.id, v);
  }
  const storedBranches = new Map(stored.branches.map((b) => [b.id, b]));
  const finalBranches = new Map<string, BranchState>();
  for (const b of change.branches) {
    if (finalBranches.has(b.id)) throw unprocessable('duplicate_branch_id', `Branch ${b.id} appears more than once.`);
    finalBranches.set(b.id, b);
  }
  if (!finalBranches.has(MAIN)) throw unprocessable('main_branch_required', 'The branch main cannot be deleted.');
  const names = new Set<string>();
  for (const b of change.branches) {
    if (names.has(b.name)) throw unprocessable('duplicate_branch_name', `Two branches are named ${JSON.stringify(b.name)}.`);
    names.add(b.name);
  }

  // Branch parents exist, and never loop.
  for (const b of change.branches) {
    if (b.parentBranchId === null) continue;
    if (b.parentBranchId === b.id || !finalBranches.has(b.parentBranchId)) {
      throw unprocessable('branch_parent_missing', `Branch ${b.id} names parent branch ${b.parentBranchId}, which does not exist.`);
    }
    let cur: string | null = b.parentBranchId;
    for (let steps = 0; cur !== null; steps++) {
      if (cur === b.id || steps > finalBranches.size) {
        throw unprocessable('branch_parent_cycle', `The parents of branch ${b.id} loop back to it.`);
      }
      cur = finalBranches.get(cur)?.parentBranchId ?? null;
    }
  }

  for (const v of change.newVersions) {
    if (!finalBranches.has(v.branchId)) {
      throw unprocessable('version_branch_missing', `New version ${v.id} is on branch ${v.branchId}, which does not exist.`);
    }
  }

  for (const b of change.branches) {
    const s = storedBranches.get(b.id);
    if (!s) {
      // A new branch starts at its parent's head (before or after this write's commits on it).
      const parent = b.parentBranchId ? finalBranches.get(b.parentBranchId)! : undefined;
      const parentStored = b.parentBranchId ? storedBranches.get(b.parentBranchId) : undefined;
      const starts = parent
        ? new Set([parentStored?.headVersionId ?? null, parent.headVersionId, ...(parentStored ? [] : [parent.baseVersionId])])
        : new Set([null]);
      if (!starts.has(b.baseVersionId)) {
        throw unprocessable(
          'branch_start_mismatch',
          `New branch ${b.id} must start at the head of its parent branch ${b.parentBranchId ?? '(none)'} ` +
            `(${[...starts].map((x) => x ?? 'null').join(' or ')}), not at ${b.baseVersionId ?? 'null'}.`,
        );
      }
    }
    const start = s ? s.headVersionId : b.baseVersionId;
    const own = change.newVersions.filter((v) => v.branchId === b.id);
    if (own.length) {
      // New versions continue the branch: each one's parent is the head before it.
      const byParent = new Map<string, VersionMeta[]>();
      for (const v of own) {
        const k = v.parentVersionId ?? '';
        byParent.set(k, [...(byParent.get(k) ?? []), v]);
      }
      let cur = start;
      const chained = new Set<string>();
      for (;;) {
        const kids = byParent.get(cur ?? '') ?? [];
        if (!kids.length) break;
        if (kids.length > 1) {
          throw unprocessable(
            'version_parent_mismatch',
            `Versions ${kids[0]!.id} and ${kids[1]!.id} both have parent ${cur ?? 'null'} on branch ${b.id}: a branch's history is linear.`,
          );
        }
        cur = kids[0]!.id;
        chained.add(cur);
      }
      const stray = own.find((v) => !chained.has(v.id));
      if (stray) {
        throw unprocessable(
          'version_parent_mismatch',
          `Version ${stray.id} has parent ${stray.parentVersionId ?? 'null'}, but the head of branch ${b.id} is ${cur ?? 'null'}: ` +
            'a new version must have the previous head of its branch as its parent.',
        );
      }
      if (b.headVersionId !== cur) {
        throw unprocessable(
          'head_not_new_version',
          `Branch ${b.id} gets new version ${cur} but its headVersionId is ${b.headVersionId ?? 'null'}: set it to the new version.`,
        );
      }
      continue;
    }
    if (b.headVersionId === start) continue;
    if (!s) {
      throw unprocessable('branch_start_mismatch', `New branch ${b.id} must have headVersionId ${start ?? 'null'}, its starting point.`);
    }
    // A moved head (roll back, or forward again) stays on the branch's own history.
    if (b.headVersionId === null) {
      throw unprocessable('head_cleared', `Branch ${b.id} has commits: its headVersionId cannot go back to null.`);
    }
    const v = all.get(b.headVersionId);
    if (!v) {
      throw unprocessable('head_not_found', `Branch ${b.id} has headVersionId ${b.headVersionId}, which is no version of this profile.`);
    }
    if (v.branchId !== b.id && b.headVersionId !== s.baseVersionId) {
      throw unprocessable('head_other_branch', `Branch ${b.id} cannot have headVersionId ${v.id}: that version belongs to branch ${v.branchId}.`);
    }
  }

  if (!finalBranches.has(change.currentBranchId)) {
    throw unprocessable('current_branch_missing', `currentBranchId ${change.currentBranchId} names no branch of this profile.`);
  }
}

/** The versions reachable from `head` by parent links (newest first), merge parents excluded. */
export function chain(versions: Map<string, VersionMeta>, head: string | null): VersionMeta[] {
  const out: VersionMeta[] = [];
  const seen = new Set<string>();
  let cur = head;
  while (cur && !seen.has(cur)) {
    seen.add(cur);
    const v = versions.get(cur);
    if (!v) break;
    out.push(v);
    cur = v.parentVersionId;
  }
  return out;
}

/** Every ancestor of `head`, itself included, following merge parents too. */
export function ancestors(versions: Map<string, VersionMeta>, head: string | null): Set<string> {
  const out = new Set<string>();
  const stack = head ? [head] : [];
  while (stack.length) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    const v = versions.get(id);
    if (!v) continue;
    out.add(id);
    if (v.parentVersionId) stack.push(v.parentVersionId);
    if (v.mergeParentId) stack.push(v.mergeParentId);
  }
  return out;
}

/** The nearest common ancestor of two heads (breadth-first from `a`), or null. */
export function mergeBase(versions: Map<string, VersionMeta>, a: string | null, b: string | null): string | null {
  const ofB = ancestors(versions, b);
  const queue = a ? [a] : [];
  const seen = new Set<string>();
  while (queue.length) {
    const id = queue.shift()!;
    if (seen.has(id)) continue;
    seen.add(id);
    if (ofB.has(id)) return id;
    const v = versions.get(id);
    if (v?.parentVersionId) queue.push(v.parentVersionId);
    if (v?.mergeParentId) queue.push(v.mergeParentId);
  }
  return null;
}
