import { DomainError, type Principal } from '@svc/kit';

import { EMPTY_WORKING, type Loaded, type ProfileCore } from './core.js';
import type { Change } from './history.js';
import { persist } from './persist.js';
import { canonical, checkDepth, ITEM_KINDS, type ItemKind } from './snapshots.js';

/**
 * Granular edits of the working changes (the uncommitted changes the next commit applies): stage
 * one item (added, replacing the head's item with its id, or `{id, $remove: true}`), unstage one,
 * discard them all. Each is one locked write, so two editors staging items never lose one.
 */

const MAX_WORKING_ITEMS = 10_000;
const MAX_ITEM_BYTES = 256 * 1024;

function kindOf(kind: string): ItemKind {
  if (!(ITEM_KINDS as readonly string[]).includes(kind)) {
    throw new DomainError('invalid_argument', 'invalid_request', 'kind: must be constraints, exemplars or comparisons.');
  }
  return kind as ItemKind;
}

const idOf = (item: unknown) => {
  const id = (item as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
};

function view(working: Record<string, unknown>) {
  const counts: Record<string, number> = {};
  for (const k of ITEM_KINDS) counts[k] = Array.isArray(working[k]) ? (working[k] as unknown[]).length : 0;
  return { workingChanges: working, counts };
}

async function editWorking(
  core: ProfileCore,
  p: Principal,
  id: string,
  ifMatch: string | undefined,
  fn: (working: Record<string, unknown>) => Record<string, unknown> | null,
) {
  return core.operate(
    p,
    id,
    ifMatch,
    async (q, l: Loaded) => {
      const next = fn(l.row.working);
      if (!next) return { row: null, result: view(l.row.working) };
      const change: Change = { newVersions: [], branches: l.history.branches, currentBranchId: l.row.current_branch_id };
      const row = await persist(core, q, p, l, change, [], { working: next, operation: 'working' });
      return { row, result: view(next) };
    },
    { versions: false },
  );
}

export function stageItem(core: ProfileCore, p: Principal, id: string, kind: string, item: unknown, ifMatch?: string) {
  const k = kindOf(kind);
  if (!item || typeof item !== 'object' || Array.isArray(item))
    throw new DomainError('invalid_argument', 'invalid_request', 'body.item: must be an object.');
  checkDepth(item);
  if (canonical(item).length > MAX_ITEM_BYTES)
    throw new DomainError('too_large', 'item_too_large', `An item holds at most ${MAX_ITEM_BYTES} bytes of JSON.`);
  return editWorking(core, p, id, ifMatch, (w) => {
    const list = Array.isArray(w[k]) ? [...(w[k] as unknown[])] : [];
    const itemId = idOf(item);
    const at = itemId === undefined ? -1 : list.findIndex((x) => idOf(x) === itemId);
    if (at >= 0) list[at] = item;
    else {
      if (list.length >= MAX_WORKING_ITEMS) {
        throw new DomainError('unprocessable', 'too_many_items', `The working changes hold at most ${MAX_WORKING_ITEMS} ${k}.`);
      }
      list.push(item);
    }
    return { ...w, [k]: list };
  });
}

export function unstageItem(core: ProfileCore, p: Principal, id: string, kind: string, itemId: string, ifMatch?: string) {
  const k = kindOf(kind);
  return editWorking(core, p, id, ifMatch, (w) => {
    const list = Array.isArray(w[k]) ? (w[k] as unknown[]) : [];
    const kept = list.filter((x) => idOf(x) !== itemId);
    return kept.length === list.length ? null : { ...w, [k]: kept };
  });
}

export function discardWorking(core: ProfileCore, p: Principal, id: string, ifMatch?: string) {
  return editWorking(core, p, id, ifMatch, (w) => {
    const empty = ITEM_KINDS.every((k) => !Array.isArray(w[k]) || !(w[k] as unknown[]).length) && w.latentScores === undefined;
    return empty ? null : { ...EMPTY_WORKING };
  });
}
