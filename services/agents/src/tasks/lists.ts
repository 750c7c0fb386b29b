import { actorOf, DomainError, newId, parseInput, type Principal } from '@svc/kit';

import type { TaskListRow, TaskRow } from './store.js';
import { bad, clamp, Description, idCursor, LIST_RE, Name, readId, type TasksDomain } from './tasks.js';

/** Task lists (docs/memory.md): create, list, rename, delete, clear the done tasks, order, the next ready task, duplicate. */
export class TaskLists {
  constructor(private readonly d: TasksDomain) {}

  async createList(p: Principal, r: { name: string; description?: string }) {
    const name = parseInput(Name, r.name, { where: 'name' });
    const description = r.description === undefined ? null : parseInput(Description, r.description, { where: 'description' });
    const id = newId('tls');
    await this.d.tx((q) => this.d.store.insertList(q, { id, account_id: p.accountId, name, description, created_by: actorOf(p) }));
    return (await this.d.store.list(id))!;
  }

  async lists(p: Principal, limit?: number, cursor?: string) {
    const n = clamp(limit, 50, 200);
    const rows = await this.d.store.lists(p.accountId, readId(cursor, LIST_RE), n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? idCursor(page[page.length - 1]!.id) : undefined };
  }

  async updateList(p: Principal, r: { id: string; name?: string; description?: string; clearDescription?: boolean }) {
    const name = r.name === undefined ? undefined : parseInput(Name, r.name, { where: 'name' });
    const description = r.description === undefined ? undefined : parseInput(Description, r.description, { where: 'description' });
    if (name === undefined && description === undefined && !r.clearDescription) throw bad('body: must change at least one field.');
    return this.d.tx(async (q) => {
      const l = await this.d.getList(p, r.id, q, true);
      await this.d.store.updateList(q, l.id, { name: name ?? l.name, description: r.clearDescription ? null : (description ?? l.description) });
      return (await this.d.store.list(l.id, q))!;
    });
  }

  async deleteList(p: Principal, id: string): Promise<number> {
    return this.d.tx(async (q) => {
      const l = await this.d.getList(p, id, q, true);
      const ids = (await this.d.store.listTasks(q, l.id)).map((t) => t.id);
      const n = await this.d.store.deleteList(q, l.id);
      await this.d.store.unblock(q, p.accountId, ids);
      return n;
    });
  }

  async clearCompleted(p: Principal, id: string): Promise<number> {
    return this.d.tx(async (q) => {
      const l = await this.d.getList(p, id, q, true);
      const ids = await this.d.store.deleteDone(q, l.id);
      await this.d.store.unblock(q, p.accountId, ids);
      return ids.length;
    });
  }

  /** PUT semantics: `taskIds` is the list's every task, in the new order. */
  async reorder(p: Principal, id: string, taskIds: string[]): Promise<TaskRow[]> {
    return this.d.tx(async (q) => {
      const l = await this.d.getList(p, id, q, true);
      const tasks = await this.d.store.listTasks(q, l.id);
      const given = new Set(taskIds);
      if (given.size !== taskIds.length) throw bad('taskIds: each task at most once.');
      if (given.size !== tasks.length || tasks.some((t) => !given.has(t.id))) {
        throw new DomainError('conflict', 'order_mismatch', `taskIds must name every task of the list exactly once (it holds ${tasks.length}).`);
      }
      for (const [i, tid] of taskIds.entries()) await this.d.store.setPlace(q, tid, l.id, i + 1);
      return this.d.store.listTasks(q, l.id);
    });
  }

  async next(p: Principal, id: string): Promise<TaskRow | null> {
    const l = await this.d.getList(p, id);
    return this.d.store.next(l.id);
  }

  /** A new list with copies of a list's tasks (open again; blockers among them kept), a template's use. */
  async duplicateList(p: Principal, r: { id: string; name?: string; includeDone?: boolean }): Promise<TaskListRow> {
    const name = r.name === undefined ? undefined : parseInput(Name, r.name, { where: 'name' });
    return this.d.tx(async (q) => {
      const src = await this.d.getList(p, r.id, q);
      const tasks = (await this.d.store.listTasks(q, src.id)).filter((t) => r.includeDone || t.status === 'open');
      const listId = newId('tls');
      const by = actorOf(p);
      await this.d.store.insertList(q, {
        id: listId,
        account_id: p.accountId,
        name: name ?? `${src.name} (copy)`.slice(0, 100),
        description: src.description,
        created_by: by,
      });
      const ids = new Map(tasks.map((t) => [t.id, newId('tsk')]));
      for (const [i, t] of tasks.entries()) {
        const id = ids.get(t.id)!;
        await this.d.store.insertTask(q, { ...t, id, list_id: listId, position: i + 1, created_by: by });
        await this.d.log(q, id, 'task.created', { listId, title: t.title, duplicateOf: t.id }, by);
      }
      for (const t of tasks) {
        const blockers = t.blocked_by.filter((b) => ids.has(b)).map((b) => ids.get(b)!);
        if (blockers.length) await this.d.store.setBlockers(q, ids.get(t.id)!, blockers);
      }
      return (await this.d.store.list(listId, q))!;
    });
  }
}
