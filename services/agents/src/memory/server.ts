import type { Handlers } from '@svc/kit';
import type { agents_memory } from '@svc/proto';

import type { MemoryDomain } from './memory.js';
import type { MemoryRow } from './store.js';

type Def = typeof agents_memory.MemoryServiceService;
type MemoryHandlers = Pick<
  Handlers<Def>,
  | 'listMemoryNamespaces'
  | 'deleteMemoryNamespace'
  | 'copyMemoryNamespace'
  | 'listMemory'
  | 'searchMemory'
  | 'getMemory'
  | 'setMemory'
  | 'deleteMemory'
  | 'getManyMemory'
  | 'setManyMemory'
  | 'deleteManyMemory'
  | 'incrementMemory'
  | 'appendMemory'
  | 'popMemory'
  | 'mergeMemory'
  | 'expireMemory'
  | 'renameMemory'
  | 'memoryHistory'
  | 'restoreMemory'
>;

export function toEntry(r: MemoryRow): agents_memory.MemoryEntry {
  return {
    namespace: r.namespace,
    key: r.key,
    valueJson: JSON.stringify(r.value),
    version: Number(r.version),
    expiresAt: r.expires_at?.toISOString(),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    updatedByJson: JSON.stringify(r.updated_by),
  };
}

const opt = (n: number | undefined) => (n === undefined ? undefined : Number(n));

/** gRPC handlers of memory: translate messages, let the domain decide. */
export function memoryHandlers(domain: MemoryDomain): MemoryHandlers {
  return {
    async listMemoryNamespaces(req, { principal }) {
      const { rows, nextCursor } = await domain.namespaces(principal, req.limit, req.cursor);
      return {
        namespaces: rows.map((n) => ({ name: n.name, entries: n.entries, bytes: Number(n.bytes), updatedAt: n.updated_at.toISOString() })),
        nextCursor,
      };
    },
    async deleteMemoryNamespace(req, { principal }) {
      return { deleted: await domain.clear(principal, req.namespace) };
    },
    async copyMemoryNamespace(req, { principal }) {
      return domain.copy(principal, req);
    },
    async listMemory(req, { principal }) {
      const { rows, nextCursor } = await domain.list(principal, req);
      return { entries: rows.map(toEntry), nextCursor };
    },
    async searchMemory(req, { principal }) {
      return { entries: (await domain.search(principal, req)).map(toEntry) };
    },
    async getMemory(req, { principal }) {
      return { entry: toEntry(await domain.get(principal, req.namespace, req.key)) };
    },
    async setMemory(req, { principal }) {
      return { entry: toEntry(await domain.set(principal, { ...req, ifVersion: opt(req.ifVersion) })) };
    },
    async deleteMemory(req, { principal }) {
      return { deleted: await domain.remove(principal, req.namespace, req.key, opt(req.ifVersion)) };
    },
    async getManyMemory(req, { principal }) {
      const { rows, missing } = await domain.getMany(principal, req.namespace, req.keys);
      return { entries: rows.map(toEntry), missing };
    },
    async setManyMemory(req, { principal }) {
      return { entries: (await domain.setMany(principal, req.namespace, req.items)).map(toEntry) };
    },
    async deleteManyMemory(req, { principal }) {
      return { deleted: await domain.deleteMany(principal, req.namespace, req.keys) };
    },
    async incrementMemory(req, { principal }) {
      return { entry: toEntry(await domain.increment(principal, req)) };
    },
    async appendMemory(req, { principal }) {
      return { entry: toEntry(await domain.append(principal, req)) };
    },
    async popMemory(req, { principal }) {
      const { popped, row } = await domain.pop(principal, req);
      return { valuesJson: popped.map((v) => JSON.stringify(v)), entry: toEntry(row) };
    },
    async mergeMemory(req, { principal }) {
      return { entry: toEntry(await domain.merge(principal, { ...req, ifVersion: opt(req.ifVersion) })) };
    },
    async expireMemory(req, { principal }) {
      return { entry: toEntry(await domain.expire(principal, req)) };
    },
    async renameMemory(req, { principal }) {
      return { entry: toEntry(await domain.rename(principal, req)) };
    },
    async memoryHistory(req, { principal }) {
      const rows = await domain.history(principal, req.namespace, req.key, req.limit ?? 20);
      return {
        versions: rows.map((v) => ({
          version: Number(v.version),
          op: v.op,
          valueJson: v.op === 'delete' ? undefined : JSON.stringify(v.value),
          at: v.at.toISOString(),
          byJson: JSON.stringify(v.by_actor),
        })),
      };
    },
    async restoreMemory(req, { principal }) {
      return { entry: toEntry(await domain.restore(principal, { ...req, version: Number(req.version) })) };
    },
  };
}
