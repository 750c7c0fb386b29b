import type { Route } from '@svc/api';

import { propertiesOf, shapesOf } from './input';
import { destructive } from './tenants';

/**
 * The producer/consumer graph of the route table, the way RESTler builds one: an operation
 * consumes the path parameters it names, each one a slot of a resource (`/tasks/:id/comments/:commentId`
 * consumes a task and a comment of that task); an operation that writes to a collection (`POST
 * /tasks/:id/comments`) produces a member of it, the id its answer carries. Slots are matched by
 * their place in the path with the parameter names dropped (`/tasks/:/comments/:`), and by the id
 * prefix the parameter's pattern names (`tsk`), so that an id made by one collection (`POST
 * /drive/folders`) reaches every operation that takes one of its kind (`/drive/:id/...`).
 */

/** One path parameter of an operation. */
export interface Slot {
  name: string;
  /** The path up to and including this parameter, names dropped: `/tasks/:/comments/:`. */
  key: string;
  /** The id prefixes the parameter's pattern takes (`['tsk']`); empty: not an id (a name, a tag, a symbol). */
  prefixes: string[];
  /** Whether the parameter's schema takes a value (a slot without a prefix, `versionId`, is filled with the ids it takes). */
  accepts: (value: string) => boolean;
}

export type Role = 'producer' | 'consumer' | 'destroyer' | 'root';

export interface Operation {
  route: Route;
  slots: Slot[];
  role: Role;
  /** A producer's collection: the key of the slot its new member fills (`/tasks/:/comments/:`). */
  produces?: string;
}

export interface Graph {
  operations: Operation[];
  /** Slot key -> the operations that produce members of it. */
  producers: Map<string, Operation[]>;
  /** Producer id -> the operations that consume its slot (directly or as a parent of theirs). */
  edges: Map<string, string[]>;
}

/** `/tasks/:id/comments/:commentId` -> `/tasks/:/comments/:`. */
export const normalise = (path: string) => path.replace(/:\w+/g, ':').toLowerCase();

/** The id prefixes a JSON Schema pattern takes: `^tsk_[0-9a-z]{26}$` -> tsk; `^(fld|file)_…` -> fld, file. */
export function prefixesOfPattern(pattern: string | undefined): string[] {
  if (!pattern) return [];
  const at = pattern.indexOf('_[0-9a-z]{26}');
  if (at < 0) return [];
  const head = pattern.slice(0, at).replace(/^\^/, '');
  const m = /\((?:\?:)?([a-z|]+)\)$/.exec(head) ?? /([a-z]{2,8})$/.exec(head);
  return m ? m[1]!.split('|').filter(Boolean) : [];
}

function slotsOf(route: Route): Slot[] {
  const props = propertiesOf(shapesOf(route).params);
  const slots: Slot[] = [];
  const segments = route.path.split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (!seg.startsWith(':')) continue;
    const name = seg.slice(1);
    const schema = props[name] ?? {};
    const patterns = [schema.pattern, ...(schema.anyOf ?? []).map((s: { pattern?: string }) => s.pattern)];
    const zod = (route.params?.shape as Record<string, { safeParse(v: unknown): { success: boolean } }> | undefined)?.[name];
    slots.push({
      name,
      key: normalise(segments.slice(0, i + 1).join('/')),
      prefixes: [...new Set(patterns.flatMap(prefixesOfPattern))],
      accepts: (value) => zod?.safeParse(value).success ?? false,
    });
  }
  return slots;
}

/** Builds the graph of the operations that take a key (the ones `skip` names are left out). */
export function buildGraph(routes: Route[], skip: (r: Route) => boolean = () => false): Graph {
  const operations: Operation[] = [];
  for (const route of routes) {
    if (route.auth !== 'key' || skip(route)) continue;
    const slots = slotsOf(route);
    const last = route.path.split('/').at(-1)!;
    let role: Role = slots.length ? 'consumer' : 'root';
    let produces: string | undefined;
    if (route.method !== 'get' && destructive(route)) role = 'destroyer';
    else if ((route.method === 'post' || route.method === 'put') && !last.startsWith(':')) {
      role = 'producer';
      produces = normalise(route.path) + '/:';
    }
    operations.push({ route, slots, role, produces });
  }
  const producers = new Map<string, Operation[]>();
  for (const op of operations) if (op.produces) producers.set(op.produces, [...(producers.get(op.produces) ?? []), op]);
  const edges = new Map<string, string[]>();
  for (const op of operations) {
    for (const slot of op.slots) {
      for (const p of producers.get(slot.key) ?? []) {
        if (p === op) continue;
        const list = edges.get(p.route.id) ?? [];
        if (!list.includes(op.route.id)) list.push(op.route.id);
        edges.set(p.route.id, list);
      }
    }
  }
  return { operations, producers, edges };
}

/**
 * The producers in layers: an operation whose slots other producers fill comes in a layer after
 * theirs (a comment after its task, a message after its thread). Cycles keep the table's order.
 */
export function producerLayers(graph: Graph): Operation[][] {
  const depth = new Map<Operation, number>();
  const depthOf = (op: Operation, seen = new Set<Operation>()): number => {
    if (depth.has(op)) return depth.get(op)!;
    if (seen.has(op)) return 0;
    seen.add(op);
    let d = 0;
    for (const slot of op.slots) for (const p of graph.producers.get(slot.key) ?? []) if (p !== op) d = Math.max(d, depthOf(p, seen) + 1);
    depth.set(op, d);
    return d;
  };
  const layers: Operation[][] = [];
  for (const op of graph.operations.filter((o) => o.role === 'producer')) (layers[depthOf(op)] ??= []).push(op);
  return layers.filter(Boolean);
}
