import { z } from 'zod';

import {
  type Actor,
  actorOf,
  DomainError,
  enqueueEvent,
  newId,
  type OutboxRelay,
  parseInput,
  type Principal,
  type Queryable,
  type Sql,
  visibleName,
} from '@svc/kit';

import { type AgentStore, SCHEMA } from '../agents/store.js';
import { type TaskListRow, type TaskRow, TaskStore } from './store.js';

/**
 * Tasks (docs/memory.md): to-do lists the acting account's people and agents share. Another
 * account's list, task or comment is not found. Each change of a task is a line of its activity
 * log and an event (`agents.task.completed`, ...: the log line's type), both written in the
 * change's transaction (the event through the outbox).
 */

export const MAX_TASKS_PER_LIST = 1000;
export const LIST_RE = /^tls_[0-9a-z]{26}$/;
const TASK_RE = /^tsk_[0-9a-z]{26}$/;

const listNotFound = () => new DomainError('not_found', 'task_list_not_found', 'Task list not found.');
const taskNotFound = () => new DomainError('not_found', 'task_not_found', 'Task not found.');
export const bad = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

export const Name = visibleName(z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'));
export const Description = z.string().max(1000, 'must be at most 1000 characters');
const Title = visibleName(z.string().trim().min(1, 'must not be empty').max(300, 'must be at most 300 characters'));
const Notes = z.string().max(10_000, 'must be at most 10000 characters');
const Priority = z.enum(['low', 'normal', 'high', 'urgent'], { error: 'must be low, normal, high or urgent' });
const Due = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).transform((s) => new Date(s));
const Labels = z
  .array(z.string().regex(/^[a-z0-9][a-z0-9:_-]{0,49}$/, 'must be 1–50 of a-z 0-9 : _ -'))
  .max(20, 'must hold at most 20 labels')
  .transform((l) => [...new Set(l)]);

const offsetCursor = (n: number) => Buffer.from(String(n)).toString('base64url');
function readOffset(c: string | undefined): number {
  if (!c) return 0;
  const n = Number(Buffer.from(c, 'base64url').toString());
  if (!Number.isInteger(n) || n < 0) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return n;
}
export const idCursor = (id: string) => Buffer.from(id).toString('base64url');
export function readId(c: string | undefined, re: RegExp | null): string {
  if (!c) return '';
  const s = Buffer.from(c, 'base64url').toString();
  if (re ? !re.test(s) : !/^\d{1,15}$/.test(s)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return s;
}
export const clamp = (n: number | undefined, d: number, max: number) => Math.min(Math.max(n || d, 1), max);

export interface TaskInput {
  listId: string;
  title: string;
  notes?: string;
  priority?: string;
  dueAt?: string;
  assigneeAgentId?: string;
  labels: string[];
}

export class TasksDomain {
  readonly store: TaskStore;

  constructor(
    private readonly sql: Sql,
    private readonly agents: AgentStore,
    private readonly outbox: () => OutboxRelay | undefined = () => undefined,
  ) {
    this.store = new TaskStore(sql);
  }

  /** A transaction whose events the outbox relay then publishes at once. */
  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const out = await this.sql.tx(fn);
    this.outbox()?.kick();
    return out;
  }

  /** A line of the task's activity log, and its event. */
  async log(q: Queryable, taskId: string, type: string, data: Record<string, unknown>, actor: Actor): Promise<void> {
    await this.store.activity(q, taskId, type, data, actor);
    await enqueueEvent(q, SCHEMA, { subject: `agents.${type}`, accountId: actor.accountId, data: { taskId, ...data, actor } });
  }

  async getList(p: Principal, id: string, q: Queryable = this.sql, lock = false): Promise<TaskListRow> {
    const l = LIST_RE.test(id) ? await this.store.list(id, q, lock) : null;
    if (!l || (p.kind !== 'system' && l.account_id !== p.accountId)) throw listNotFound();
    return l;
  }

  async get(p: Principal, id: string, q: Queryable = this.sql, lock = false): Promise<TaskRow> {
    const t = TASK_RE.test(id) ? await this.store.task(id, q, lock) : null;
    if (!t || (p.kind !== 'system' && t.account_id !== p.accountId)) throw taskNotFound();
    return t;
  }

  private async agent(p: Principal, id: string): Promise<string> {
    const a = /^agt_[0-9a-z]{26}$/.test(id) ? await this.agents.byId(id) : null;
    if (!a || a.owner_account_id !== p.accountId) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
    return a.id;
  }

  // Tasks --------------------------------------------------------------------------------------

  async list(
    p: Principal,
    r: {
      listId?: string;
      status?: string;
      assigneeAgentId?: string;
      label?: string;
      query?: string;
      dueBefore?: string;
      limit?: number;
      cursor?: string;
    },
  ) {
    if (r.listId !== undefined) await this.getList(p, r.listId);
    const status =
      r.status === undefined ? undefined : parseInput(z.enum(['open', 'done'], { error: 'must be open or done' }), r.status, { where: 'status' });
    const dueBefore = r.dueBefore === undefined ? undefined : parseInput(Due, r.dueBefore, { where: 'dueBefore' });
    if (r.query !== undefined && (r.query.length < 1 || r.query.length > 200)) throw bad('q: must be 1–200 characters.');
    const n = clamp(r.limit, 50, 200);
    const offset = readOffset(r.cursor);
    const rows = await this.store.tasks({
      accountId: p.accountId,
      listId: r.listId,
      status,
      assignee: r.assigneeAgentId,
      label: r.label,
      text: r.query,
      dueBefore,
      offset,
      limit: n + 1,
    });
    return { rows: rows.slice(0, n), nextCursor: rows.length > n ? offsetCursor(offset + n) : undefined };
  }

  async create(p: Principal, r: TaskInput): Promise<TaskRow> {
    const title = parseInput(Title, r.title, { where: 'title' });
    const notes = r.notes === undefined ? null : parseInput(Notes, r.notes, { where: 'notes' });
    const priority = r.priority === undefined ? 'normal' : parseInput(Priority, r.priority, { where: 'priority' });
    const due = r.dueAt === undefined ? null : parseInput(Due, r.dueAt, { where: 'dueAt' });
    const labels = parseInput(Labels, r.labels, { where: 'labels' });
    const assignee = r.assigneeAgentId === undefined ? null : await this.agent(p, r.assigneeAgentId);
    return this.tx(async (q) => {
      const l = await this.getList(p, r.listId, q, true);
      if (l.open_tasks + l.done_tasks >= MAX_TASKS_PER_LIST) {
        throw new DomainError('conflict', 'list_full', `A list holds at most ${MAX_TASKS_PER_LIST} tasks.`);
      }
      const id = newId('tsk');
      const position = (await this.store.maxPosition(q, l.id)) + 1;
      const by = actorOf(p);
      await this.store.insertTask(q, {
        id,
        account_id: p.accountId,
        list_id: l.id,
        title,
        notes,
        priority,
        due_at: due,
        assignee_agent_id: assignee,
        labels,
        position,
        created_by: by,
      });
      await this.log(q, id, 'task.created', { listId: l.id, title }, by);
      return (await this.store.task(id, q))!;
    });
  }

  /** A copy of a task (open, without blockers or comments) at the end of its list or another one. */
  async duplicate(p: Principal, r: { id: string; listId?: string; title?: string }): Promise<TaskRow> {
    const title = r.title === undefined ? undefined : parseInput(Title, r.title, { where: 'title' });
    return this.tx(async (q) => {
      const src = await this.get(p, r.id, q);
      const l = await this.getList(p, r.listId ?? src.list_id, q, true);
      if (l.open_tasks + l.done_tasks >= MAX_TASKS_PER_LIST) {
        throw new DomainError('conflict', 'list_full', `A list holds at most ${MAX_TASKS_PER_LIST} tasks.`);
      }
      const id = newId('tsk');
      const by = actorOf(p);
      await this.store.insertTask(q, {
        ...src,
        id,
        list_id: l.id,
        title: title ?? src.title,
        position: (await this.store.maxPosition(q, l.id)) + 1,
        created_by: by,
      });
      await this.log(q, id, 'task.created', { listId: l.id, title: title ?? src.title, duplicateOf: src.id }, by);
      return (await this.store.task(id, q))!;
    });
  }

  async update(
    p: Principal,
    r: {
      id: string;
      title?: string;
      notes?: string;
      clearNotes?: boolean;
      priority?: string;
      dueAt?: string;
      clearDueAt?: boolean;
      labels: string[];
      hasLabels?: boolean;
    },
  ): Promise<TaskRow> {
    const changed: Record<string, unknown> = {};
    if (r.title !== undefined) changed.title = parseInput(Title, r.title, { where: 'title' });
    if (r.notes !== undefined || r.clearNotes) changed.notes = r.clearNotes ? null : parseInput(Notes, r.notes, { where: 'notes' });
    if (r.priority !== undefined) changed.priority = parseInput(Priority, r.priority, { where: 'priority' });
    if (r.dueAt !== undefined || r.clearDueAt) changed.dueAt = r.clearDueAt ? null : parseInput(Due, r.dueAt, { where: 'dueAt' });
    if (r.hasLabels) changed.labels = parseInput(Labels, r.labels, { where: 'labels' });
    if (!Object.keys(changed).length) throw bad('body: must change at least one field.');
    return this.change(p, r.id, 'task.updated', changed, async (q, t) => {
      await this.store.updateFields(q, t.id, {
        title: (changed.title as string | undefined) ?? t.title,
        notes: 'notes' in changed ? (changed.notes as string | null) : t.notes,
        priority: (changed.priority as string | undefined) ?? t.priority,
        due_at: 'dueAt' in changed ? (changed.dueAt as Date | null) : t.due_at,
        labels: (changed.labels as string[] | undefined) ?? t.labels,
      });
    });
  }

  /** A change of one task under its row lock, with its activity line. */
  private async change(
    p: Principal,
    id: string,
    type: string | null,
    data: Record<string, unknown>,
    fn: (q: Queryable, t: TaskRow) => Promise<boolean | void>,
  ): Promise<TaskRow> {
    return this.tx(async (q) => {
      const t = await this.get(p, id, q, true);
      const done = await fn(q, t);
      if (done !== false && type) await this.log(q, t.id, type, data, actorOf(p));
      return (await this.store.task(t.id, q))!;
    });
  }

  async remove(p: Principal, id: string): Promise<number> {
    if (!TASK_RE.test(id)) throw taskNotFound();
    return this.tx(async (q) => {
      // A made-up id and another account's task answer alike (no existence oracle).
      const t = await this.get(p, id, q, true);
      await this.store.deleteTask(q, id);
      await this.store.unblock(q, p.accountId, [id]);
      const actor = actorOf(p);
      await enqueueEvent(q, SCHEMA, { subject: 'agents.task.deleted', accountId: p.accountId, data: { taskId: id, listId: t.list_id, actor } });
      return 1;
    });
  }

  async complete(p: Principal, id: string): Promise<TaskRow> {
    return this.change(p, id, 'task.completed', {}, async (q, t) => {
      if (t.status === 'done') return false;
      const open = await this.store.openBlockers(q, t);
      if (open.length) throw new DomainError('conflict', 'task_blocked', `The task waits for open tasks: ${open.join(', ')}.`);
      await this.store.setStatus(q, t.id, 'done');
      return true;
    });
  }

  async reopen(p: Principal, id: string): Promise<TaskRow> {
    return this.change(p, id, 'task.reopened', {}, async (q, t) => {
      if (t.status === 'open') return false;
      await this.store.setStatus(q, t.id, 'open');
      return true;
    });
  }

  async assign(p: Principal, id: string, agentId: string | undefined): Promise<TaskRow> {
    const assignee = agentId === undefined ? null : await this.agent(p, agentId);
    return this.change(p, id, 'task.assigned', { agentId: assignee }, async (q, t) => {
      if (t.assignee_agent_id === assignee) return false;
      await this.store.setAssignee(q, t.id, assignee);
      return true;
    });
  }

  async move(p: Principal, r: { id: string; listId?: string; beforeTaskId?: string }): Promise<TaskRow> {
    return this.tx(async (q) => {
      const t = await this.get(p, r.id, q, true);
      const before = r.beforeTaskId === undefined ? undefined : await this.get(p, r.beforeTaskId, q);
      if (before?.id === t.id) throw bad('beforeTaskId: must be another task.');
      const listId = r.listId ?? before?.list_id ?? t.list_id;
      const l = await this.getList(p, listId, q, true);
      if (before && before.list_id !== l.id) throw new DomainError('conflict', 'task_not_in_list', 'beforeTaskId names a task of another list.');
      if (l.id !== t.list_id && l.open_tasks + l.done_tasks >= MAX_TASKS_PER_LIST) {
        throw new DomainError('conflict', 'list_full', `A list holds at most ${MAX_TASKS_PER_LIST} tasks.`);
      }
      const position = before ? await this.store.positionBefore(q, l.id, before) : (await this.store.maxPosition(q, l.id)) + 1;
      await this.store.setPlace(q, t.id, l.id, position);
      await this.log(q, t.id, 'task.moved', { fromListId: t.list_id, listId: l.id, beforeTaskId: before?.id ?? null }, actorOf(p));
      return (await this.store.task(t.id, q))!;
    });
  }

  async addBlocker(p: Principal, id: string, blockerId: string): Promise<TaskRow> {
    if (id === blockerId) throw bad('blockerId: a task cannot wait for itself.');
    return this.tx(async (q) => {
      // Both rows locked in id order: two opposite additions cannot both pass the cycle check.
      for (const x of [id, blockerId].sort()) await this.get(p, x, q, true);
      const t = (await this.store.task(id, q))!;
      if (t.blocked_by.includes(blockerId)) return t;
      if (t.blocked_by.length >= 50) throw new DomainError('conflict', 'too_many_blockers', 'A task waits for at most 50 tasks.');
      if ((await this.store.upstream(q, blockerId)).includes(id)) {
        throw new DomainError('conflict', 'dependency_cycle', `${blockerId} already waits (directly or not) for ${id}.`);
      }
      await this.store.setBlockers(q, id, [...t.blocked_by, blockerId]);
      await this.log(q, id, 'task.blocker_added', { blockerId }, actorOf(p));
      return (await this.store.task(id, q))!;
    });
  }

  async removeBlocker(p: Principal, id: string, blockerId: string): Promise<TaskRow> {
    return this.change(p, id, 'task.blocker_removed', { blockerId }, async (q, t) => {
      if (!t.blocked_by.includes(blockerId)) return false;
      await this.store.setBlockers(
        q,
        t.id,
        t.blocked_by.filter((b) => b !== blockerId),
      );
      return true;
    });
  }

  async activity(p: Principal, id: string, limit?: number, cursor?: string) {
    const t = await this.get(p, id);
    const n = clamp(limit, 50, 200);
    const rows = await this.store.activityOf(t.id, Number(readId(cursor, null) || 0), n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? idCursor(String(page[page.length - 1]!.seq)) : undefined };
  }
}
